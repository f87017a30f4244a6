#!/usr/bin/env bash
# Device call (2 GPUs, ~8 min), prepared in the seventeenth session for the next one: tools/var_ll128tail2.patch,
# the one-shot's last chunk on LL128 lines in landing form (BRAID_ONESHOT_LL128_TAIL, agreed from rank 0, on
# by default in the patch; float/half/bf16 kernels only; in place too, behind the split guard; decided from
# agreed facts only, so ranks that differ in placement agree). Never run on a GPU before this call. The first
# form (tools/var_ll128tail.patch) faulted because a 32 MB step (128 KiB) overran the 120 KiB of an LL128 slot;
# this form takes the tail only where a step fits (8-16 MB on 64 channels). Copy /usr/src/googletest to .gtest
# first. Raw outputs: $OUT/next58.tgz.
#  1. every gpu test on the patched tree (device_coll_test's OneShotForced runs the tail in and out of place,
#     with mixed placement, and with it off);
#  2. all-reduce 4-32 MB, three interleaved rounds: NCCL, main, the patch (tail on), the patch with it off (the
#     cost of the code being there); reduce-scatter 1-64 MB main against the patch, two rounds.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next58_out}; L=$OUT/next58; mkdir -p "$L"
source tools/gpu_common.sh
T="all_reduce_perf reduce_scatter_perf device_coll_test device_p2p_group_test device_mp_test numeric_device_test \
  matmul_gpu_test device_one_rank_test device_errors_test"
gpu_build_patch tail2 tools/var_ll128tail2.patch $T
gpu_build all_reduce_perf reduce_scatter_perf
wait
V=/tmp/braid-tail2/build-var; MAIN=$B
B=$V gpu_tests device_coll_test device_p2p_group_test device_mp_test numeric_device_test matmul_gpu_test \
  device_one_rank_test device_errors_test
B=$MAIN
export PERF_TIMEOUT=90
S="-b 4M -e 32M -f 2 -c 1 -n 40 -w 10"
for r in 1 2 3; do
  one all_reduce nccl ar_nccl_$r -- $S
  one all_reduce braid ar_main_$r -- $S
  B=$V one all_reduce braid ar_tail_$r -- $S
  B=$V one all_reduce braid ar_off_$r BRAID_ONESHOT_LL128_TAIL=0 -- $S
done
R="-b 1M -e 64M -f 4 -c 1 -n 30 -w 5"
for r in 1 2; do
  one reduce_scatter braid rs_main_$r -- $R
  B=$V one reduce_scatter braid rs_tail_$r -- $R
done
gpu_pack
