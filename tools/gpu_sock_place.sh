#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min, streamed) for the NET proxy's thread placement: the Socket gpu tests, then the
# socket path under mpirun's default binding (each rank on one core) with the new defaults (8 threads placed
# on the GPU's local CPUs) alternated with NCCL, once with BRAID_PROXY_CPUS=inherit (the old placement), and
# the INFO line that says where the threads went. Raw: $OUT/sp.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_sock_place_out}; L=$OUT/sp; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid all_reduce_perf device_coll_test device_mp_test
timeout 120 $B/bin/device_coll_test --gtest_filter='*Socket*' > "$L/coll_socket.txt" 2>&1; echo "device_coll_test Socket rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$L/coll_socket.txt" | tr '\n' ' ')"
timeout 120 $B/bin/device_mp_test > "$L/mp.txt" 2>&1; echo "device_mp_test rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$L/mp.txt" | tr '\n' ' ')"
SOCK="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1"; BIG="-b 64M -e 1G -f 4 -c 1 -n 3 -w 1"
export PERF_TIMEOUT=50
one all_reduce braid sock_place_log $SOCK NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET -- -b 64M -e 64M -c 1 -n 2 -w 1
grep -m2 "NET proxy of rank" "$L/sock_place_log.txt"
for i in 1 2; do
  one all_reduce braid sock_braid_$i $SOCK -- $BIG
  one all_reduce nccl sock_nccl_$i $SOCK -- $BIG
done
one all_reduce braid sock_inherit $SOCK BRAID_PROXY_CPUS=inherit -- $BIG
gpu_pack
