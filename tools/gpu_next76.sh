#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min), twentieth session: main at 25540be (the p2p cut at 1-2 MiB, f575463; the
# clustered ring instead of the unsplit one-shot all-reduce, 25540be), carried as build-main (a default build,
# as gpu_next72.sh). Every gpu test (cluster_gpu_test's two new cases check the switch on both ranks and its
# agreement), then all-reduce 8-512 MB with no bound and under NCCL_MAX_CTAS=24: NCCL, main, and main with
# NCCL_ALGO=OneShot (the schedule main ran before), two rounds; and send/recv and all-to-all at 1-4 MB, NCCL
# and main, one round. -c 1 everywhere.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next76_out}; L=$OUT/next76; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-main
[[ -x $B/bin/device_coll_test && -x $B/bin/cluster_gpu_test ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
nvidia-smi -L
export LD_LIBRARY_PATH=$B/lib
gpu_tests cluster_gpu_test device_coll_test device_errors_test device_p2p_group_test numeric_device_test \
  device_one_rank_test device_mp_test matmul_gpu_test
grep -h "clustered ring instead" $L/cluster_gpu_test.txt | sort | uniq -c | head -6
export PERF_TIMEOUT=60
E=LD_LIBRARY_PATH=$B/lib
S="-b 8M -e 512M -f 2 -c 1 -n 10 -w 3"
for r in 1 2; do
  for b in 0 24; do
    X=NCCL_MAX_CTAS=$b; [[ $b == 0 ]] && X=BRAID_UNUSED=0
    one all_reduce nccl ar${b}_nccl_$r $E $X -- $S
    one all_reduce braid ar${b}_main_$r $E $X -- $S
    one all_reduce braid ar${b}_oneshot_$r $E $X NCCL_ALGO=OneShot -- $S
  done
done
S="-b 1M -e 4M -i 512K -c 1 -n 20 -w 5"
for c in sendrecv alltoall; do
  one $c nccl ${c}_nccl_1 $E -- $S
  one $c braid ${c}_main_1 $E -- $S
done
gpu_pack
