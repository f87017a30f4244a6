#!/usr/bin/env bash
# Builds NVIDIA's nccl-tests, unmodified, against Braid's include/ and libnccl.so, and runs every binary on this
# machine's GPUs with data checks (-c 1): once plainly, once with symmetric registration (-R 2, windows from
# ncclCommWindowRegister), then all_reduce_perf with a device kernel (-D 1 -R 2), which must stop at once with
# Braid's ncclDevCommCreate message rather than hang. One verdict line per run; exit status 1 if any failed.
#
#   tools/gpu/nccl_tests_check.sh [-n NP] [-e MAXBYTES] [-t SEC] [-r REGEX] [-f] NCCL_TESTS_SRC BUILD_DIR
#
#   NCCL_TESTS_SRC  an nccl-tests source tree (e.g. a checkout of v2.19.6), never modified: it is built in
#                   BUILD_DIR/nccl-tests
#   BUILD_DIR       Braid's build folder: its lib/libnccl.so.2 is what the tests load. Configured and built
#                   (library only, -DBRAID_KERNELS=minimal unless CMAKE_ARGS says otherwise) when it has none
#   -n NP           ranks, one GPU each (default: every visible GPU); under mpirun when the tests link MPI
#   -e BYTES        largest size of the sweep (default 64M; the sweep is -b 8 -e BYTES -f 8)
#   -t SEC          time limit of one run (default 120)
#   -r REGEX        only the runs whose name matches (names: all_reduce, all_reduce-R2, ..., all_reduce-D1-R2)
#   -f              rebuild nccl-tests even if BUILD_DIR/nccl-tests holds binaries (e.g. carried ones)
#   -h              this text
#
# Run from the repository root (include/ is taken from here). nccl-tests is built for sm_90 (NVCC_GENCODE
# overrides), with MPI where mpicc exists (MPI=0 turns it off) and the CUDA runtime linked statically. Logs:
# $OUT/nccl_tests.tgz (OUT: the job's output folder, default ./build-gpu-out). NCCL_NVLS_ENABLE=0 is exported.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

np="" maxbytes=64M limit=120 force=0 only=""
while getopts "n:e:t:r:fh" o; do
  case $o in
    n) np=$OPTARG ;;
    e) maxbytes=$OPTARG ;;
    t) limit=$OPTARG ;;
    r) only=$OPTARG ;;
    f) force=1 ;;
    h) gpu_usage "$0"; exit 0 ;;
    *) gpu_usage "$0" >&2; exit 2 ;;
  esac
done
shift $(( OPTIND - 1 ))
[[ $# -eq 2 ]] || { gpu_usage "$0" >&2; exit 2; }
src=$(cd "$1" && pwd) || exit 2
build=$(mkdir -p "$2" && cd "$2" && pwd) || exit 2
[[ -f $src/src/common.cu ]] || { echo "$src is not an nccl-tests tree (no src/common.cu)"; exit 2; }
[[ -f include/nccl_device.h ]] || { echo "run from the repository root (no include/nccl_device.h here)"; exit 2; }
repo=$PWD
gpu_init nccl_tests
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

# Braid's library.
if [[ ! -e $build/lib/libnccl.so.2 ]]; then
  echo "building Braid's library in $build"
  # shellcheck disable=SC2086
  cmake -S "$repo" -B "$build" -G Ninja -DBRAID_KERNELS=minimal -DBRAID_BUILD_TESTS=OFF -DBRAID_BUILD_TOOLS=OFF \
    ${CMAKE_ARGS:-} > "$L/braid_configure.txt" 2>&1 &&
    ninja -C "$build" braid > "$L/braid_build.txt" 2>&1 || { echo "Braid build failed: $L/braid_build.txt"; gpu_pack; exit 1; }
fi

# nccl-tests, built out of its tree against include/ and BUILD_DIR/lib (NCCL_HOME wants both under one folder).
nt=$build/nccl-tests
if [[ $force -eq 1 || ! -x $nt/all_reduce_perf ]]; then
  home=$build/nccl-home
  mkdir -p "$home"
  ln -sfn "$repo/include" "$home/include"
  ln -sfn "$build/lib" "$home/lib"
  mpi=${MPI:-$(command -v mpicc > /dev/null && echo 1 || echo 0)}
  mpiflags=()
  if [[ $mpi == 1 ]]; then
    # nccl-tests looks in MPI_HOME/include and MPI_HOME/lib; distributions split them, so the linker gets mpicc's
    # library folders too.
    inc=$(mpicc --showme:incdirs | awk '{print $1}')
    mpiflags=(MPI=1 "MPI_HOME=${inc%/include}")
    export LIBRARY_PATH=$(mpicc --showme:libdirs | tr ' ' ':')${LIBRARY_PATH:+:$LIBRARY_PATH}
  fi
  # The toolkit's own include and lib folders may hold NVIDIA's nccl.h and libnccl.so (CUDA images often do):
  # Braid's headers must be the ones found (-I comes before the toolkit's folder), and its library the one
  # linked (CUDA_LIB puts BUILD_DIR/lib ahead of the toolkit's lib64 in the link line).
  defs=$(echo '#include "nccl.h"' | ${CXX:-c++} -x c++ -dM -E -I"$home/include" -I"$CUDA_HOME/include" -)
  [[ $defs == *BRAID_NCCL_H_IS_BRAID* ]] || { echo "the nccl.h found first is not Braid's"; gpu_pack; exit 1; }
  echo "building nccl-tests from $src (MPI=$mpi) in $nt"
  rm -rf "$build/nccl-tests-src"
  cp -r "$src" "$build/nccl-tests-src"
  make -C "$build/nccl-tests-src/src" -j "$(nproc)" NCCL_HOME="$home" BUILDDIR="$nt" CUDARTLIB=cudart_static \
    CUDA_LIB="$home/lib -L$CUDA_HOME/lib64" \
    NVCC_GENCODE="${NVCC_GENCODE:--gencode=arch=compute_90,code=sm_90}" "${mpiflags[@]}" \
    > "$L/nccl_tests_build.txt" 2>&1 || { echo "nccl-tests build failed: $L/nccl_tests_build.txt"; gpu_pack; exit 1; }
fi

ngpu=${np:-$(gpu_count)}
[[ $ngpu -ge 1 ]] || { echo "no GPU visible"; gpu_pack; exit 1; }
export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# Linked against Braid, the tests need its soname; it must resolve to BUILD_DIR/lib.
lib=$(ldd "$nt/all_reduce_perf" | awk '/libnccl\.so|libbraid\.so/ {print $3; exit}')
echo "nccl-tests load $lib"
[[ -n $lib && $(readlink -f "$lib") == $(readlink -f "$build/lib/libnccl.so.2") ]] ||
  { echo "nccl-tests do not load $build/lib's library"; gpu_pack; exit 1; }
if ldd "$nt/all_reduce_perf" | grep -q libmpi && command -v mpirun > /dev/null; then
  launch=(mpirun --allow-run-as-root -np "$ngpu" -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE --bind-to none)
  per=(-g 1)
else
  launch=()
  per=(-g "$ngpu")
fi
echo "$ngpu ranks: ${launch[*]:-one process} ${per[*]}"

fails=0
# run NAME EXPECT BINARY ARGS...: EXPECT ok (exit 0, no wrong values) or refused (exit != 0 with the message).
run() {
  local name=$1 expect=$2 bin=$3
  shift 3
  [[ -z $only || $name =~ $only ]] || return 0
  local log=$L/$name.txt t0=$SECONDS
  timeout "$limit" "${launch[@]}" "$nt/$bin" "${per[@]}" "$@" > "$log" 2>&1
  local rc=$? secs=$(( SECONDS - t0 )) verdict
  if [[ $expect == ok ]]; then
    if [[ $rc -eq 0 ]] && grep -q "Out of bounds values : 0 OK" "$log" && ! grep -q "Test NCCL failure" "$log"; then
      verdict="PASS  $(grep -m1 'Avg bus bandwidth' "$log" | sed 's/^# *//')"
    else
      verdict="FAIL  rc $rc"
    fi
  else
    if [[ $rc -ne 0 && $rc -ne 124 ]] && grep -q "does not support device-initiated communication" "$log"; then
      verdict="PASS  refused at once: $(grep -m1 -o "ncclDevCommCreate: rank [0-9]*: Braid does not support[^;]*" "$log")"
    else
      verdict="FAIL  rc $rc (expected ncclDevCommCreate's refusal; 124 = timed out)"
    fi
  fi
  [[ $verdict == PASS* ]] || { fails=$(( fails + 1 )); tail -5 "$log" | sed 's/^/      /'; }
  printf '%-28s %4ss  %s\n' "$name" "$secs" "$verdict"
}

sweep=(-b 8 -e "$maxbytes" -f 8 -c 1 -w 2 -n 5)
for t in all_reduce all_gather broadcast reduce_scatter reduce alltoall alltoallv scatter gather sendrecv hypercube; do
  [[ -x $nt/${t}_perf ]] || { echo "$t: not built"; fails=$(( fails + 1 )); continue; }
  run "$t" ok "${t}_perf" "${sweep[@]}"
  run "$t-R2" ok "${t}_perf" "${sweep[@]}" -R 2
done
# nccl-tests' own weak ncclGetLastError (a fallback for old libraries) shadows the library's, so its failure line
# carries no message: Braid's warning (NCCL_DEBUG=WARN) shows it.
export NCCL_DEBUG=WARN
[[ ${#launch[@]} -gt 0 ]] && launch+=(-x NCCL_DEBUG)
run all_reduce-D1-R2 refused all_reduce_perf -b 8 -e 1M -f 8 -c 1 -R 2 -D 1

echo "$fails run(s) failed; $(gpu_elapsed) s"
gpu_pack
[[ $fails -eq 0 ]]
