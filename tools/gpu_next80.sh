#!/usr/bin/env bash
# Prepared in the twentieth session for the next one (not run): tools/var_cluster3.patch, clusters of 3 for
# all-gather, reduce-scatter and the ring all-reduce on 24-32 channels where the user set no size, and the ring
# over the unsplit one-shot on 24-31 channels at every size from 16 MiB (docs/gpu/2026-12-02g, h). Device call
# (2 GPUs, ~6 min). Carry two builds of this machine:
#   tools/build_carry.sh build-c3 tools/var_cluster3.patch -- braidrun all_reduce_perf all_gather_perf \
#     reduce_scatter_perf broadcast_perf reduce_perf device_coll_test device_errors_test device_p2p_group_test \
#     numeric_device_test device_one_rank_test device_mp_test matmul_gpu_test cluster_gpu_test matmul_demo
#   tools/build_carry.sh build-m0 /dev/null -DBRAID_KERNELS=minimal -- braidrun all_reduce_perf \
#     all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf cluster_gpu_test
# (build_carry.sh wants a patch file: an empty one, e.g. /dev/null, gives main as committed.) Every gpu test on
# the variant, its init line, then under NCCL_MAX_CTAS=24 and 32 (the efficiency policy's 24): NCCL, main and
# the variant, 16-512 MB, two rounds, -c 1. (Twenty-first session, added before the run: cluster_gpu_test of main
# as committed, 6dd3544 and 67b7613 never having run on a GPU, and three rounds of all-reduce 256 KB-1 MB, NCCL
# and main, for the 512 KB target, which the H100 pair has only measured once.)
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next80_out}; L=$OUT/next80; mkdir -p "$L"
source tools/gpu_common.sh
gpu_carried build-c3 tools/var_cluster3.patch
[[ -x build-m0/bin/all_reduce_perf ]] || { echo "build-m0 was not carried"; exit 1; }
nvidia-smi -L
B=$PWD/build-c3
export LD_LIBRARY_PATH=$B/lib
gpu_tests cluster_gpu_test device_coll_test device_errors_test device_p2p_group_test numeric_device_test \
  device_one_rank_test device_mp_test matmul_gpu_test
(B=$PWD/build-m0 L=$L/main; mkdir -p $L; export LD_LIBRARY_PATH=$B/lib; gpu_tests cluster_gpu_test)
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT NCCL_MAX_CTAS=24 timeout 60 mpirun --allow-run-as-root -np 2 \
  -x NCCL_NVLS_ENABLE=0 -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS -x NCCL_MAX_CTAS -x LD_LIBRARY_PATH \
  $B/bin/all_gather_perf -b 16M -e 16M -n 2 -w 1 2>&1 | grep -i 'cluster'
export PERF_TIMEOUT=60
S="-b 16M -e 512M -f 4 -c 1 -n 10 -w 3"
for r in 1 2; do
  for b in 24 32; do
    for c in all_gather reduce_scatter all_reduce broadcast; do
      B=$PWD/build-m0; E=LD_LIBRARY_PATH=$B/lib
      one $c nccl ${c}${b}_nccl_$r $E NCCL_MAX_CTAS=$b -- $S
      one $c braid ${c}${b}_main_$r $E NCCL_MAX_CTAS=$b -- $S
      B=$PWD/build-c3; E=LD_LIBRARY_PATH=$B/lib
      one $c braid ${c}${b}_c3_$r $E NCCL_MAX_CTAS=$b -- $S
    done
  done
done
B=$PWD/build-m0; E=LD_LIBRARY_PATH=$B/lib
for r in 1 2 3; do
  one all_reduce nccl small_nccl_$r $E -- -b 256K -e 1M -f 2 -c 1 -n 50 -w 10
  one all_reduce braid small_main_$r $E -- -b 256K -e 1M -f 2 -c 1 -n 50 -w 10
done
gpu_pack
