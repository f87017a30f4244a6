#!/usr/bin/env bash
# Device call (2 GPUs, ~9 min), twenty-sixth session, call a: main 44b5e55 as it stands (last session's review of
# balanced transfers, 3da11a9, and the two GPU-test folds, fe69fda and 44b5e55, were never GPU-run), carried as
# build-main. Every gpu test; the p2p tests under NCCL_MAX_CTAS=24 and 20; send/recv 64-512 MB under 20 and 24,
# NCCL beside Braid, and Braid with balancing off (the 0.93x case); then the full tables (every collective
# 8 B-512 MB, NCCL and Braid's tuner, then each protocol forced while the call has run under 420 s) and the small
# all-reduce in CUDA graphs.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next111_out}; L=$OUT/next111; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
B=$PWD/build-main
[[ -x $B/bin/device_coll_test && -x $B/bin/scatter_perf ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
export LD_LIBRARY_PATH=$B/lib
gpu_tests cluster_gpu_test fifo_gpu_test device_coll_test device_errors_test device_p2p_group_test \
  device_p2p_balance_test numeric_device_test device_one_rank_test device_mp_test matmul_gpu_test
for b in 24 20; do (export NCCL_MAX_CTAS=$b; L=$L/ctas$b; mkdir -p $L; gpu_tests device_p2p_group_test device_p2p_balance_test device_mp_test); done
export PERF_TIMEOUT=60
S="-b 64M -e 512M -f 2 -c 1 -n 8 -w 2"
for b in 20 24; do
  one sendrecv nccl sr${b}_nccl NCCL_MAX_CTAS=$b -- $S
  one sendrecv braid sr${b}_braid NCCL_MAX_CTAS=$b -- $S
  one sendrecv braid sr${b}_nobal NCCL_MAX_CTAS=$b BRAID_P2P_BALANCE_BYTES=0 -- $S
done
gpu_full_tables 420
G="-b 8 -e 512K -f 8 -c 1 -n 20 -w 5 -G 20"
one all_reduce nccl graph_nccl -- $G
one all_reduce braid graph_braid -- $G
gpu_pack
