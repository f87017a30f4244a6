#!/usr/bin/env bash
# Device call (2 GPUs, ~3 min): where the 8 MB split one-shot all-reduce spends its ~10 us beyond the link's
# 23 us. tools/var_timeline.patch stamps %globaltimer in every CTA (start, each step's wait, the workers'
# end of the step, the post) and prints channels 0/21/42/63 of every 16th launch; the main build and NCCL
# run beside it for reference. Raw outputs: $OUT/next49.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next49_out}; L=$OUT/next49; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build_patch tl tools/var_timeline.patch all_reduce_perf
gpu_build all_reduce_perf
wait
export PERF_TIMEOUT=60
for r in 1 2; do
  one all_reduce nccl ar8_nccl_$r -- -b 8M -e 8M -c 1 -n 40 -w 10
  one all_reduce braid ar8_main_$r -- -b 8M -e 8M -c 1 -n 40 -w 10
done
MAIN=$B; B=/tmp/braid-tl/build-var
one all_reduce braid ar8_tl -- -b 8M -e 8M -c 0 -n 100 -w 10
one all_reduce braid ar16_tl -- -b 16M -e 16M -c 0 -n 100 -w 10
grep -c "^TL" "$L/ar8_tl.txt" "$L/ar16_tl.txt"
B=$MAIN
gpu_pack
