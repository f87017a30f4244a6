# The layers of src/, bottom up, and what each may include. Every layer is an object library whose only
# include root (besides include/) is a folder of links to itself and the layers it may use, so an include
# of a higher layer's header fails to compile ("No such file"). tests/layering checks that it does.
#
#   core       errors, logging, parameters, sockets, waits, bootstrap
#   algo       the schedules and formats shared by host and device code (ring, p2p cut, LL/LL128 lines)
#   topology   the machine: GPUs, PCI tree, CPUs, NICs, NVLink; NCCL's topology XML; paths and ring search
#   transport  connections: P2P, SHM, NET (progress engine + socket backend)
#   tuner      the cost model and the choice of algorithm, protocol and channels
#   device     CUDA kernels and their primitives
#   runtime    the communicator, groups, the plan, the executor interface and its host and GPU executors
#   api        the C entry points
set(BRAID_LAYERS core algo topology transport tuner device runtime api)
set(BRAID_LAYER_DEPS_core "")
set(BRAID_LAYER_DEPS_algo core)
set(BRAID_LAYER_DEPS_topology core)
set(BRAID_LAYER_DEPS_transport core algo topology)
set(BRAID_LAYER_DEPS_tuner core algo)
set(BRAID_LAYER_DEPS_device algo)
set(BRAID_LAYER_DEPS_runtime core algo topology transport tuner device)
set(BRAID_LAYER_DEPS_api core algo runtime)

# A layer may only use layers listed before it: the order above is the dependency order.
set(_seen "")
foreach(layer ${BRAID_LAYERS})
  foreach(dep ${BRAID_LAYER_DEPS_${layer}})
    if(NOT dep IN_LIST _seen)
      message(FATAL_ERROR "layer ${layer} may not depend on ${dep}: ${dep} is not below it")
    endif()
  endforeach()
  list(APPEND _seen ${layer})
endforeach()

# braid_layer_view(LAYER OUT_DIR): the include root of LAYER (links to src/<layer> and its dependencies).
function(braid_layer_view layer out)
  set(dir ${CMAKE_BINARY_DIR}/layers/${layer})
  file(MAKE_DIRECTORY ${dir})
  foreach(l ${layer} ${BRAID_LAYER_DEPS_${layer}})
    if(NOT EXISTS ${dir}/${l})
      file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${l} ${dir}/${l} SYMBOLIC)
    endif()
  endforeach()
  set(${out} ${dir} PARENT_SCOPE)
endfunction()
