#!/usr/bin/env bash
# Ran in the nineteenth session as call g (docs/gpu/2026-12-01g).
# Device call (2 GPUs, ~6 min), nineteenth session: main with thread-block clusters for the ring collectives
# (NCCL_CGA_CLUSTER_SIZE, default 4; launch_attrs.h), built here and carried as build-main (bin/ and the
# libraries of a default build of the committed tree: cmake -S . -B build -G Ninja && cmake --build build, then
#   rm -rf build-main && mkdir -p build-main/lib && cp -r build/bin build-main/ &&
#   cp -a build/lib/libbraid.so* build/lib/libnccl.so* build-main/lib/ && git rev-parse HEAD > build-main/HEAD
# ). Every gpu test (ClusteredRingCollectives and the clustered GraphReplay case are new), the init
# line, then NCCL, main and main with clusters off (NCCL_CGA_CLUSTER_SIZE=0) side by side, two rounds, -c 1.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next69_out}; L=$OUT/next69; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-main
[[ -x $B/bin/device_coll_test && -x $B/bin/all_reduce_perf ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
nvidia-smi -L
export LD_LIBRARY_PATH=$B/lib
gpu_tests device_coll_test device_errors_test device_p2p_group_test numeric_device_test device_one_rank_test \
  device_mp_test matmul_gpu_test
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT timeout 60 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0 -x NCCL_DEBUG \
  -x NCCL_DEBUG_SUBSYS -x LD_LIBRARY_PATH $B/bin/broadcast_perf -b 1M -e 1M -n 2 -w 1 2>&1 | grep -i 'cluster'
export PERF_TIMEOUT=60
E=LD_LIBRARY_PATH=$B/lib
declare -A F=([all_reduce]="-b 4M -e 512M -f 4" [broadcast]="-b 4M -e 512M -f 4" [reduce]="-b 4M -e 512M -f 4"
  [all_gather]="-b 4M -e 512M -f 4" [reduce_scatter]="-b 4M -e 512M -f 4")
for r in 1 2; do
  for c in all_reduce broadcast reduce all_gather reduce_scatter; do
    S="${F[$c]} -c 1 -n 10 -w 3"
    one $c nccl ${c}_nccl_$r $E -- $S
    one $c braid ${c}_main_$r $E -- $S
    one $c braid ${c}_off_$r $E NCCL_CGA_CLUSTER_SIZE=0 -- $S
  done
done
gpu_pack
