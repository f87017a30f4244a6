#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min), the fourteenth session's second:
# - device_p2p_group_test (new): groups past the kernel parameters' 640 blocks run from a table in device
#   memory (p2p_table.h), on streams and in a captured graph replayed after the table grew; and every other
#   gpu test (device_coll_test's OneShotForced now also runs the split one-shot, BRAID_ONESHOT_SPLIT=1);
# - all-reduce 1-64 MB: the split one-shot (a sending and a receiving CTA per channel) against main's form
#   and NCCL, with the default step cap and with 2 and 4 FIFO steps per channel, two rounds.
# Raw outputs: $OUT/next29.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next29_out}; L=$OUT/next29; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun all_reduce_perf sendrecv_perf device_coll_test device_mp_test numeric_device_test \
  device_one_rank_test device_errors_test device_p2p_group_test
gpu_tests device_p2p_group_test device_one_rank_test device_coll_test device_errors_test device_mp_test
export PERF_TIMEOUT=60
S="-b 1M -e 64M -f 2 -c 1 -n 30 -w 5"
for round in 1 2; do
  one all_reduce nccl ar_nccl_$round -- $S
  one all_reduce braid ar_base_$round BRAID_ONESHOT_SPLIT=0 -- $S
  one all_reduce braid ar_split_$round BRAID_ONESHOT_SPLIT=1 -- $S
  one all_reduce braid ar_split2_$round BRAID_ONESHOT_SPLIT=1 BRAID_PIPELINE_STEPS=2 -- $S
  one all_reduce braid ar_split4_$round BRAID_ONESHOT_SPLIT=1 BRAID_PIPELINE_STEPS=4 -- $S
done
# Which algorithm the tuner ran at each size (split applies to the one-shot on Simple only).
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING timeout 30 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0 \
  -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS $B/bin/all_reduce_perf -b 1M -e 64M -f 2 -c 1 -n 1 -w 0 > "$L/tuning.txt" 2>&1
grep "predicted" "$L/tuning.txt" | sed "s/.*NCCL INFO //" | sort -u | head -16
one sendrecv nccl sr_nccl -- -b 8 -e 4M -f 8 -c 1 -n 30 -w 5
one sendrecv braid sr_braid -- -b 8 -e 4M -f 8 -c 1 -n 30 -w 5
gpu_pack
