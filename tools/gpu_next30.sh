#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min), the fourteenth session's third: the split one-shot all-reduce now only out of
# place (in place raced in docs/gpu/2026-11-26b) and on LL128 too. device_coll_test (OneShotForced: LL128-split,
# Simple-split, and an 8 MB split over 4 FIFO steps per channel); device_mp_test. Then all-reduce 256 KB-64 MB,
# two rounds: NCCL; split off (main's form); split on with the default step cap and with 3 and 4 FIFO steps
# per channel (their in-place columns run the unsplit form with those steps); and ranks that differ (rank 0
# split, rank 1 not: the FIFO steps are the same, so it must check clean). Raw outputs: $OUT/next30.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next30_out}; L=$OUT/next30; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun all_reduce_perf device_coll_test device_mp_test
gpu_tests device_coll_test device_mp_test
export PERF_TIMEOUT=60
S="-b 256K -e 64M -f 2 -c 1 -n 30 -w 5"
mixed() {  # rank 0 split, rank 1 not
  local f=$1; shift
  timeout 60 mpirun --allow-run-as-root -x NCCL_NVLS_ENABLE=0 -np 1 -x BRAID_ONESHOT_SPLIT=1 "$@" $B/bin/all_reduce_perf $S : \
    -np 1 -x BRAID_ONESHOT_SPLIT=0 "$@" $B/bin/all_reduce_perf $S > "$L/$f.txt" 2>&1
  echo "$f rc=$?: $(grep -v '^#' "$L/$f.txt" | awk 'NF>8 && $1 ~ /^[0-9]+$/ {printf "%s:%s(%s,%s|%s,%s) ", $1, $6, $8, $9, $10, $13}')"
}
for round in 1 2; do
  one all_reduce nccl ar_nccl_$round -- $S
  one all_reduce braid ar_base_$round BRAID_ONESHOT_SPLIT=0 -- $S
  one all_reduce braid ar_split_$round BRAID_ONESHOT_SPLIT=1 -- $S
  one all_reduce braid ar_split3_$round BRAID_ONESHOT_SPLIT=1 BRAID_PIPELINE_STEPS=3 -- $S
  one all_reduce braid ar_split4_$round BRAID_ONESHOT_SPLIT=1 BRAID_PIPELINE_STEPS=4 -- $S
done
mixed ar_mixed
mixed ar_mixed4 -x BRAID_PIPELINE_STEPS=4
# In-place columns (time, #wrong) of each run: the unsplit form.
for f in "$L"/ar_*.txt; do
  echo "$(basename $f .txt) in-place: $(grep -v '^#' "$f" | awk 'NF>12 && $1 ~ /^[0-9]+$/ {printf "%s:%s(%s) ", $1, $10, $13}')"
done
gpu_pack
