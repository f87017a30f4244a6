#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min): a tapered last step for the split one-shot. The variant build cuts a channel
# share into steps of 2/7 of it (three full steps and a short last one, e.g. 40+40+40+8 KiB at 8 MB) instead of
# quarters, so the reduction left after the last step arrives is smaller. all-reduce 4-64 MB, NCCL / main /
# variant, two rounds (the perf check covers in and out of place); the variant's OneShotForced test.
# Raw outputs: $OUT/next34.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next34_out}; L=$OUT/next34; mkdir -p "$L"
source tools/gpu_common.sh
VAR=/tmp/braid-taper
gpu_build_variant $VAR src/collectives/tuner.cc "      cap = ((bytes / ch + 3) / 4 + 4095) & ~size_t(4095);" \
  "      cap = ((bytes / ch * 2 + 6) / 7 + 4095) & ~size_t(4095);" braid all_reduce_perf device_coll_test
gpu_build braid all_reduce_perf
wait
export PERF_TIMEOUT=60
S="-b 4M -e 64M -f 2 -c 1 -n 30 -w 5"
for round in 1 2; do
  one all_reduce nccl ar_nccl_$round -- $S
  one all_reduce braid ar_main_$round -- $S
  (B=$VAR/build-var; one all_reduce braid ar_taper_$round -- $S)
done
for f in "$L"/ar_*.txt; do
  echo "$(basename $f .txt) in-place: $(grep -v '^#' "$f" | awk 'NF>12 && $1 ~ /^[0-9]+$/ {printf "%s:%s(%s) ", $1, $10, $13}')"
done
timeout 120 $VAR/build-var/bin/device_coll_test --gtest_filter='*OneShotForced*' > "$L/taper_oneshot_test.txt" 2>&1
echo "taper OneShotForced rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$L/taper_oneshot_test.txt" | tr '\n' ' ')"
gpu_pack
