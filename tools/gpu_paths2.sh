#!/usr/bin/env bash
# One short device call (2 GPUs, ~4 min): the SHM and socket paths with their defaults against NCCL (socket
# rings on 4 channels with 2 proxy threads; LL through SHM up to ~256 KB), and the gpu tests that sweep them.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_paths2_out}; L=$OUT/p2; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid all_reduce_perf all_gather_perf device_coll_test device_mp_test
timeout 60 $B/bin/device_coll_test --gtest_filter='*Shm*:*Socket*' > "$L/coll.txt" 2>&1; echo "device_coll_test rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' "$L/coll.txt" | tr '\n' ' ')"
timeout 60 $B/bin/device_mp_test --gtest_filter='*Shm*:*Socket*' > "$L/mp.txt" 2>&1; echo "device_mp_test rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' "$L/mp.txt" | tr '\n' ' ')"
PERF_TIMEOUT=60 one all_reduce braid sock_braid NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 -- -b 64M -e 1G -f 4 -c 1 -n 3 -w 1
PERF_TIMEOUT=60 one all_reduce nccl sock_nccl NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 -- -b 64M -e 1G -f 4 -c 1 -n 3 -w 1
for p in all_reduce all_gather; do
  PERF_TIMEOUT=30 one $p braid shm_${p}_braid NCCL_P2P_DISABLE=1 -- -b 8 -e 1G -f 4 -c 1 -n 10 -w 3
  PERF_TIMEOUT=30 one $p nccl shm_${p}_nccl NCCL_P2P_DISABLE=1 -- -b 8 -e 1G -f 4 -c 1 -n 10 -w 3
done
gpu_pack
