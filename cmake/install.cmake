# Install rules (included at the end of the top-level CMakeLists.txt): public headers, libbraid.so (soname
# libnccl.so.2) with libnccl.so.2/libnccl.so names beside it, braidrun, a CMake package (find_package(Braid) → Braid::braid)
# and a pkg-config file (braid.pc). Everything lands relative to the prefix, so `cmake --install build
# --prefix DIR` relocates it, and DESTDIR works for packaging.
include(CMakePackageConfigHelpers)

set(BRAID_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Braid)

# In-tree consumers (add_subdirectory) get the same name as find_package users.
if(NOT TARGET Braid::braid)
  add_library(Braid::braid ALIAS braid)
endif()

foreach(header nccl.h nccl_device.h)
  if(EXISTS ${PROJECT_SOURCE_DIR}/include/${header})
    install(FILES ${PROJECT_SOURCE_DIR}/include/${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endforeach()
# NCCL's device API spreads over a folder of headers; install it too if Braid grows one.
if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/include/nccl_device)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/nccl_device DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()

install(TARGETS braid EXPORT BraidTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# libnccl.so.2 (what NCCL-linked programs load) and libnccl.so (what -lnccl finds) point at the real file.
# Made at install time so they follow --prefix and DESTDIR.
install(CODE "
  set(_braid_libdir \"${CMAKE_INSTALL_LIBDIR}\")
  if(NOT IS_ABSOLUTE \"\${_braid_libdir}\")
    set(_braid_libdir \"\${CMAKE_INSTALL_PREFIX}/\${_braid_libdir}\")
  endif()
  set(_braid_libdir \"\$ENV{DESTDIR}\${_braid_libdir}\")
  message(STATUS \"Installing: \${_braid_libdir}/libnccl.so.2 -> $<TARGET_FILE_NAME:braid>\")
  file(CREATE_LINK $<TARGET_FILE_NAME:braid> \"\${_braid_libdir}/libnccl.so.2\" SYMBOLIC)
  message(STATUS \"Installing: \${_braid_libdir}/libnccl.so -> libnccl.so.2\")
  file(CREATE_LINK libnccl.so.2 \"\${_braid_libdir}/libnccl.so\" SYMBOLIC)
")

if(TARGET braidrun)
  install(TARGETS braidrun RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# CMake package.
install(EXPORT BraidTargets NAMESPACE Braid:: DESTINATION ${BRAID_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/BraidConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/BraidConfig.cmake
  INSTALL_DESTINATION ${BRAID_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
# 0.x: a minor version bump may break the API, so only the same major.minor is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/BraidConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/BraidConfig.cmake ${CMAKE_BINARY_DIR}/cmake/BraidConfigVersion.cmake
  DESTINATION ${BRAID_INSTALL_CMAKEDIR})

# pkg-config: paths relative to the .pc file (${pcfiledir}), so the install prefix can change afterwards.
set(_braid_pcdir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE ${CMAKE_INSTALL_LIBDIR} OR IS_ABSOLUTE ${CMAKE_INSTALL_INCLUDEDIR})
  # Absolute dirs (e.g. distro packaging) cannot be relative to the .pc file: use them as they are.
  set(BRAID_PC_PREFIX ${CMAKE_INSTALL_PREFIX})
  set(BRAID_PC_LIBDIR ${CMAKE_INSTALL_FULL_LIBDIR})
  set(BRAID_PC_INCLUDEDIR ${CMAKE_INSTALL_FULL_INCLUDEDIR})
else()
  file(RELATIVE_PATH _braid_pc_up /${_braid_pcdir} /)
  string(REGEX REPLACE "/$" "" _braid_pc_up "${_braid_pc_up}")
  set(BRAID_PC_PREFIX "\${pcfiledir}/${_braid_pc_up}")
  set(BRAID_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(BRAID_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/braid.pc.in ${CMAKE_BINARY_DIR}/cmake/braid.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cmake/braid.pc DESTINATION ${_braid_pcdir})
