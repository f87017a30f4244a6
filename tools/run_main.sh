#!/usr/bin/env bash
# The README's "main job": build Braid's launcher and the distributed matrix-multiply demo, then run the demo
# on NRANKS local ranks under braidrun. Where there is no GPU (or no GPU communicator yet) the demo runs on
# host buffers through a host communicator; it verifies C against a single-rank reference, prints a timing
# breakdown and exits non-zero if C is wrong.
# Usage: tools/run_main.sh [NRANKS] [matmul_demo options...]   (default 2 ranks; e.g. `tools/run_main.sh 4
#        --mode inner --type bf16`; extra configure flags via CMAKE_ARGS, build parallelism via BUILD_JOBS)
set -euo pipefail

cd "$(dirname "$0")/.."
nranks=2
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then
  nranks="$1"
  shift
fi

# CMake finds nvcc through PATH, and the toolkit's usual home is not on it by default.
export PATH="/usr/local/cuda/bin:$PATH"

# shellcheck disable=SC2086  # CMAKE_ARGS is a list of flags
cmake -S . -B build -G Ninja ${CMAKE_ARGS:-}
cmake --build build --parallel "${BUILD_JOBS:-$(nproc)}" --target braidrun matmul_demo

echo "+ build/bin/braidrun -n $nranks -- build/bin/matmul_demo $*" >&2
exec build/bin/braidrun -n "$nranks" -- build/bin/matmul_demo "$@"
