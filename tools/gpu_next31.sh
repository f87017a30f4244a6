#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min), the fourteenth session's fourth: the split one-shot as the default (agreed
# BRAID_ONESHOT_SPLIT, four FIFO steps from 128 KiB channel shares, in place behind the guard words).
# Every gpu test; then all-reduce 256 KB-64 MB, two rounds: NCCL, split off, the new default (out-of-place and
# in-place columns); and ranks whose BRAID_ONESHOT_SPLIT differ (rank 0's value rules; must check clean).
# Raw outputs: $OUT/next31.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next31_out}; L=$OUT/next31; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun all_reduce_perf matmul_demo device_coll_test device_mp_test numeric_device_test \
  matmul_gpu_test device_one_rank_test device_errors_test device_p2p_group_test
gpu_tests device_coll_test device_p2p_group_test device_errors_test device_one_rank_test numeric_device_test \
  device_mp_test matmul_gpu_test
export PERF_TIMEOUT=60
S="-b 256K -e 64M -f 2 -c 1 -n 30 -w 5"
mixed() {  # rank 0 BRAID_ONESHOT_SPLIT=$2, rank 1 the other
  local f=$1 a=$2 b=$((1 - $2))
  timeout 60 mpirun --allow-run-as-root -x NCCL_NVLS_ENABLE=0 -np 1 -x BRAID_ONESHOT_SPLIT=$a $B/bin/all_reduce_perf $S : \
    -np 1 -x BRAID_ONESHOT_SPLIT=$b $B/bin/all_reduce_perf $S > "$L/$f.txt" 2>&1
  echo "$f rc=$?: $(grep -v '^#' "$L/$f.txt" | awk 'NF>8 && $1 ~ /^[0-9]+$/ {printf "%s:%s(%s,%s) ", $1, $6, $8, $9}')"
}
for round in 1 2; do
  one all_reduce nccl ar_nccl_$round -- $S
  one all_reduce braid ar_off_$round BRAID_ONESHOT_SPLIT=0 -- $S
  one all_reduce braid ar_new_$round -- $S
done
mixed ar_mixed10 1
mixed ar_mixed01 0
for f in "$L"/ar_*.txt; do
  echo "$(basename $f .txt) in-place: $(grep -v '^#' "$f" | awk 'NF>12 && $1 ~ /^[0-9]+$/ {printf "%s:%s(%s) ", $1, $10, $13}')"
done
grep -h "differ across ranks" "$L"/ar_mixed*.txt | head -2
gpu_pack
