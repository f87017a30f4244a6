#!/usr/bin/env bash
# GPU kernel times of one collective under NVIDIA NCCL and Braid, from libbraid_kernel_trace.so (CUPTI,
# tools/perf/kernel_trace.cc) preloaded into the perf tool: for rank 0, each GPU's kernels by name (count, median
# duration, median gap since the previous kernel on that GPU ended) and the CUDA runtime calls' median host
# times. Tells a kernel bound from a launch or host bound where the perf tools' averages cannot.
#
#   tools/gpu/kernel_times.sh [-n NP] [-C COLL] [-b BUILD_DIR] [-s SKIP] [-x VAR=V]... [--no-nccl]
#                             [-- PERF_FLAGS...]
#
#   -n NP       ranks, one per GPU (default: every visible GPU); -n 1 -- -g 4 for one process driving 4
#   -C COLL     the collective's perf tool without _perf (default all_reduce)
#   -b DIR      build folder with lib/libbraid_kernel_trace.so (default build-gpu; a carried build-pack/DIR.tgz
#               is unpacked), as side_by_side.sh
#   -s SKIP     kernels and calls left out at the start, per GPU and per call (default 50: warm-up and init)
#   -x VAR=V    an environment setting for both libraries' runs (repeatable)
#   --no-nccl   Braid only
#   PERF_FLAGS  the perf tool's flags (default -b 8 -e 8 -n 200 -w 20); -G N runs CUDA graphs of N launches
#   -h          this text
#
# Output: the tables on stdout; each run's output in $OUT/kernel_times/.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

np="" coll=all_reduce nccl=1 skip=50 envs=() flags=()
die() { echo "kernel_times.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
    -n) np=${2:?}; shift 2 ;;
    -C) coll=${2:?}; shift 2 ;;
    -b) BUILD=${2:?}; shift 2 ;;
    -s) skip=${2:?}; shift 2 ;;
    -x) envs+=("${2:?}"); shift 2 ;;
    --no-nccl) nccl=0; shift ;;
    -h) gpu_usage "$0"; exit 0 ;;
    --) shift; flags=("$@"); break ;;
    *) die "unknown option $1 (-h for help)" ;;
  esac
done
[[ ${#flags[@]} -gt 0 ]] || flags=(-b 8 -e 8 -n 200 -w 20)
gpu_init kernel_times
[[ -n $np ]] || np=$(gpu_count)
[[ $np -ge 1 ]] || die "no GPU visible"
gpu_use_build "${BUILD:-build-gpu}" "${coll}_perf" || gpu_build "${BUILD:-build-gpu}" "${coll}_perf" braidrun \
  braid_kernel_trace
trace=$B/lib/libbraid_kernel_trace.so
[[ -f $trace ]] || die "$trace is not built (CUPTI missing at configure time?)"

libs=(braid)
[[ $nccl == 1 ]] && libs=(nccl braid)
failed=0
for lib in "${libs[@]}"; do
  GPU_PRELOAD=$trace gpu_perf "$lib" "$np" "${coll}_perf" "${coll}_$lib" "${envs[@]}" KERNEL_TRACE_RANK=0 \
    KERNEL_TRACE_SKIP="$skip" -- "${flags[@]}" -c 1 || failed=1
  echo "== $lib: ${coll} ${flags[*]}"
  grep '^kernel_trace:' "$L/${coll}_$lib.txt" | sed 's/^kernel_trace: //'
  grep -E '^ +[0-9]+ +[0-9]+ ' "$L/${coll}_$lib.txt" | head -3
done
exit $failed
