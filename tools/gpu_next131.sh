#!/usr/bin/env bash
# Device call (2 GPUs, ~9 min), twenty-ninth session, call a: main bbb9dd5 as it stands, carried as build-main (the
# gpu tests, the nine perf tools, braidrun, matmul_demo). Every gpu test unbounded (cluster_gpu_test did not run on
# the last session's final tree); the p2p tests under NCCL_MAX_P2P_NCHANNELS=8; then the full tables (every
# collective 8 B-512 MB, NCCL and Braid's tuner, then each protocol forced while the call has run under 440 s) and
# the small all-reduce in CUDA graphs.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next131_out}; L=$OUT/next131; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
B=$PWD/build-main
[[ -x $B/bin/device_coll_test && -x $B/bin/scatter_perf ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
export LD_LIBRARY_PATH=$B/lib
gpu_tests cluster_gpu_test fifo_gpu_test device_coll_test device_errors_test device_p2p_group_test \
  device_p2p_balance_test numeric_device_test device_one_rank_test device_mp_test matmul_gpu_test
(export NCCL_MAX_P2P_NCHANNELS=8; L=$L/p2p8; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test)
export PERF_TIMEOUT=60
gpu_full_tables 440
G="-b 8 -e 512K -f 8 -c 1 -n 20 -w 5 -G 20"
one all_reduce nccl graph_nccl -- $G
one all_reduce braid graph_braid -- $G
gpu_pack
