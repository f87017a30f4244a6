#!/usr/bin/env bash
# Builds a variant here for a device call to carry (`run` with carry [DIR]; at most 64 MiB in all): main's
# committed source (git archive HEAD, so uncommitted edits stay out) with PATCH applied, configured with any
# extra CMake options, the TARGETs built into DIR, then slimmed to bin/ and lib/libbraid.so*, lib/libnccl.so*
# and stamped with PATCH's sha256 in DIR/PATCH_SHA256 (gpu_carried in gpu_common.sh checks it on the device).
#   tools/build_carry.sh DIR PATCH [CMAKE_OPTION...] -- TARGET...
# e.g. tools/build_carry.sh build-wg tools/var_warpguard.patch -- all_reduce_perf device_coll_test
#      tools/build_carry.sh build-ng tools/var_noguard.patch -DBRAID_KERNELS=minimal -DBRAID_BUILD_TESTS=OFF \
#        -- all_reduce_perf
set -euo pipefail
dir=$1 patch=$2; shift 2
opts=()
while [[ $# -gt 0 && $1 != -- ]]; do opts+=("$1"); shift; done
[[ $# -gt 1 ]] || { echo "usage: $0 DIR PATCH [CMAKE_OPTION...] -- TARGET..."; exit 2; }
shift
src=$(mktemp -d /tmp/carry-src.XXXXXX)
git archive HEAD | tar -x -C "$src"
patch -d "$src" -p1 -s < "$patch"
rm -rf "$dir"
cmake -S "$src" -B "$dir" -G Ninja -DBRAID_GTEST_SOURCE=/usr/src/googletest "${opts[@]}" > "$dir.cmake.log"
# The device scripts start the perf tools under mpirun: a build without MPI fails there at once (rc 3, "this build
# has no MPI support"), after the device time is spent (nineteenth session). Refuse it here instead.
if [[ " $* " == *_perf\ * ]] && ! grep -q 'perf tools: MPI found' "$dir.cmake.log"; then
  echo "$0: configure found no MPI, so the *_perf tools would not run under mpirun: apt-get install libopenmpi-dev"
  exit 1
fi
rm -f "$dir.cmake.log"
ninja -C "$dir" "$@"
find "$dir" -mindepth 1 -maxdepth 1 ! -name bin ! -name lib -exec rm -rf {} +
find "$dir/lib" -mindepth 1 ! -name 'libbraid.so*' ! -name 'libnccl.so*' -exec rm -rf {} +
sha256sum "$patch" | cut -d' ' -f1 > "$dir/PATCH_SHA256"
rm -rf "$src"
du -sh "$dir"
