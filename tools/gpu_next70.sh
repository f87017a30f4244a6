#!/usr/bin/env bash
# Ran in the nineteenth session as call h (docs/gpu/2026-12-01h).
# Device call (2 GPUs, ~4.5 min), nineteenth session: main after the review of the cluster change (the init-time
# check that every channel's cluster fits, over every Simple ring kernel; clusters dropped before programmatic
# launches when a driver refuses; the kernel's early return for split grids too; pinned channel counts in
# ClusteredRingCollectives; cluster_gpu_test.cc, which reads both ranks' init lines). Carry build-main made as
# gpu_next69.sh says (plus cluster_gpu_test). Every gpu test, then NCCL and main once, -c 1, 16-512 MB.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next70_out}; L=$OUT/next70; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-main
[[ -x $B/bin/device_coll_test && -x $B/bin/cluster_gpu_test ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
nvidia-smi -L
export LD_LIBRARY_PATH=$B/lib
gpu_tests cluster_gpu_test device_coll_test device_errors_test device_p2p_group_test numeric_device_test \
  device_one_rank_test device_mp_test matmul_gpu_test
grep -h 'clusters of' $L/cluster_gpu_test.txt | head -4
export PERF_TIMEOUT=60
E=LD_LIBRARY_PATH=$B/lib
for c in broadcast reduce all_gather reduce_scatter all_reduce; do
  S="-b 16M -e 512M -f 4 -c 1 -n 10 -w 3"
  one $c nccl ${c}_nccl_1 $E -- $S
  one $c braid ${c}_main_1 $E -- $S
done
gpu_pack
