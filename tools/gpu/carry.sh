#!/usr/bin/env bash
# Builds Braid on this machine (any machine with nvcc, CMake and Ninja) into a slim folder that a job on a GPU machine can
# carry instead of building there: DIR/bin (the programs) and DIR/lib (libbraid.so*, libnccl.so*), packed as
# build-pack/DIR.tgz (a full build is ~28 MiB, ~9 MiB packed).
#
#   tools/gpu/carry.sh [-r REF] [-o DIR] [-D CMAKE_OPTION]... [-j JOBS] [-k] [TARGET...]
#
#   -r REF     build REF's committed tree (git archive) instead of the working tree
#   -o DIR     the slim folder (default build-carry; git ignores /build*/). The build itself goes to DIR-work
#              (working tree, kept for incremental builds) or a temporary folder (-r)
#   -D OPT     a CMake option, repeatable, e.g. -D BRAID_BUILD_TESTS=OFF or -D BRAID_KERNELS=minimal
#   -j N       parallel build jobs (default: Ninja's)
#   -k         leave DIR unpacked only (no build-pack/DIR.tgz)
#   TARGET...  what to build besides the library (default: everything: the tests, perf tools, braidrun,
#              matmul_demo)
#   -h         this text
#
# Then carry build-pack (or DIR) to the GPU machine, and there e.g. `tools/gpu/test.sh -b DIR` or
# `tools/gpu/side_by_side.sh -b DIR`: the scripts unpack build-pack/DIR.tgz when DIR is missing and put DIR/lib
# on LD_LIBRARY_PATH (the programs' RUNPATH names this machine's build folder). DIR/SOURCE says what was built.
# Without MPI headers here (apt-get install libopenmpi-dev) the perf tools run under braidrun, not mpirun.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

ref="" dir=build-carry opts=() jobs=() pack=1
while getopts "r:o:D:j:kh" o; do
  case $o in
    r) ref=$OPTARG ;;
    o) dir=${OPTARG%/} ;;
    D) opts+=("-D$OPTARG") ;;
    j) jobs=(-j "$OPTARG") ;;
    k) pack=0 ;;
    h) gpu_usage "$0"; exit 0 ;;
    *) gpu_usage "$0" >&2; exit 2 ;;
  esac
done
shift $(( OPTIND - 1 ))
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] && targets=(braid "${targets[@]}")  # the library goes with whatever is named
[[ -f CMakeLists.txt && -d src ]] || { echo "carry.sh: run from the repository root"; exit 2; }
[[ -d /usr/local/cuda/bin && ":$PATH:" != *:/usr/local/cuda/bin:* ]] && export PATH=$PATH:/usr/local/cuda/bin

if [[ -n $ref ]]; then
  sha=$(git rev-parse --verify "$ref^{commit}") || { echo "carry.sh: no commit $ref"; exit 2; }
  src=$(mktemp -d /tmp/braid-carry.XXXXXX)
  trap 'rm -rf "$src"' EXIT
  git archive "$sha" | tar -x -C "$src" || exit 1
  work=$src/build
  what="$ref ($sha)"
else
  src=$PWD
  work=$dir-work
  what="working tree at $(git rev-parse HEAD 2> /dev/null)$([[ -n $(git status --porcelain 2> /dev/null) ]] &&
    echo ", with uncommitted changes")"
fi
gt=$(gpu_gtest_source)
[[ -n $gt ]] && opts+=("-DBRAID_GTEST_SOURCE=$gt")

echo "building $what into $dir"
mkdir -p "$work" || exit 1
cmake -S "$src" -B "$work" -G Ninja "${opts[@]}" > "$work/carry-cmake.log" 2>&1 ||
  { tail -20 "$work/carry-cmake.log"; exit 1; }
grep -q 'perf tools: MPI found' "$work/carry-cmake.log" ||
  echo "note: configure found no MPI here, so the perf tools will run under braidrun, not mpirun"
ninja -C "$work" "${jobs[@]}" "${targets[@]}" > "$work/carry-build.log" 2>&1 ||
  { grep -E "error|FAILED" -A3 "$work/carry-build.log" | head -40; exit 1; }

rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib" || exit 1
cp -a "$work/bin/." "$dir/bin/" || exit 1
cp -a "$work"/lib/libbraid.so* "$work"/lib/libnccl.so* "$dir/lib/" 2> /dev/null
compgen -G "$dir/lib/libbraid.so*" > /dev/null || { echo "carry.sh: $work/lib has no libbraid.so"; exit 1; }
echo "$what; cmake ${opts[*]}; targets: ${targets[*]:-all}" > "$dir/SOURCE"
du -sh "$dir"
if [[ $pack == 1 ]]; then
  mkdir -p build-pack && tar -czf "build-pack/$(basename "$dir").tgz" "$dir" || exit 1
  du -sh "build-pack/$(basename "$dir").tgz"
  echo "carry [build-pack] and pass -b $dir to the tools/gpu scripts"
fi
