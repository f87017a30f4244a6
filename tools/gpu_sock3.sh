#!/usr/bin/env bash
# Short device call (2 GPUs, ~3 min): the socket path with the proxy polling 2 ms after activity (GPU comms),
# against NCCL, and SHM all-reduce 8 B-1 MB (LL channel cost) against NCCL.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_sock3_out}; L=$OUT/s3; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid all_reduce_perf
PERF_TIMEOUT=50 one all_reduce braid sock_braid NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 -- -b 64M -e 1G -f 4 -c 1 -n 3 -w 1
PERF_TIMEOUT=50 one all_reduce nccl sock_nccl NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 -- -b 64M -e 1G -f 4 -c 1 -n 3 -w 1
PERF_TIMEOUT=25 one all_reduce braid shm_braid NCCL_P2P_DISABLE=1 -- -b 8 -e 1M -f 4 -c 1 -n 50 -w 5
PERF_TIMEOUT=25 one all_reduce nccl shm_nccl NCCL_P2P_DISABLE=1 -- -b 8 -e 1M -f 4 -c 1 -n 50 -w 5
gpu_pack
