#!/usr/bin/env bash
# The README's "main job": build Braid, then run the most complete demo that exists so far, on 2 local ranks
# (host buffers when there is no GPU): the matmul demo, else all_reduce_perf, else the braid_smoke all-reduce.
# Usage: tools/run_main.sh [NRANKS]   (default 2; extra build flags via CMAKE_ARGS)
set -euo pipefail

cd "$(dirname "$0")/.."
nranks="${1:-2}"

# CMake finds nvcc through PATH; the toolkit's usual home is not on it by default.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

# shellcheck disable=SC2086  # CMAKE_ARGS is a list of flags
cmake -S . -B build -G Ninja ${CMAKE_ARGS:-}
cmake --build build

run() {
  echo "+ $*" >&2
  exec "$@"
}
if [ -x build/bin/matmul_demo ]; then
  run build/bin/braidrun -n "$nranks" --prefix -- build/bin/matmul_demo
elif [ -x build/bin/all_reduce_perf ]; then
  run build/bin/braidrun -n "$nranks" -- build/bin/all_reduce_perf -b 8 -e 64M -f 4 -c 1
else
  run build/bin/braidrun -n "$nranks" --prefix -- build/bin/braid_smoke
fi
