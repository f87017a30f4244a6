#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min), twenty-first session, build-main of the commit giving FIFOs of 8 MiB by default on
# 16 channels or fewer (core/comm.h, agreedFifoBytes). fifo_gpu_test, cluster_gpu_test, device_mp_test,
# device_p2p_group_test; device_coll_test under NCCL_MAX_CTAS=8 (every collective on 8 MiB FIFOs). Then under
# NCCL_MAX_CTAS=8 and 16: NCCL, main ("new") and main with NCCL_BUFFSIZE=4194304 ("old": the FIFOs before), the
# ring collectives and p2p ones, 1-256 MB, one round, -c 1; the small all-reduce under 8; 16 MiB FIFOs under 8.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next84_out}; L=$OUT/next84; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-main
[[ -x $B/bin/fifo_gpu_test ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
nvidia-smi -L
export LD_LIBRARY_PATH=$B/lib
gpu_tests fifo_gpu_test cluster_gpu_test device_mp_test device_p2p_group_test
(export NCCL_MAX_CTAS=8; L=$L/ctas8; mkdir -p $L; gpu_tests device_coll_test)
export PERF_TIMEOUT=90
E=LD_LIBRARY_PATH=$B/lib
S="-b 1M -e 256M -f 4 -c 1 -n 10 -w 3"
for b in 8 16; do
  for c in all_gather reduce_scatter all_reduce broadcast reduce sendrecv alltoall gather scatter; do
    [[ $b == 16 && ( $c == gather || $c == scatter ) ]] && continue
    one $c nccl ${c}${b}_nccl_1 $E NCCL_MAX_CTAS=$b -- $S
    one $c braid ${c}${b}_new_1 $E NCCL_MAX_CTAS=$b -- $S
    one $c braid ${c}${b}_old_1 $E NCCL_MAX_CTAS=$b NCCL_BUFFSIZE=4194304 -- $S
  done
done
one all_reduce braid small8_new_1 $E NCCL_MAX_CTAS=8 -- -b 8 -e 512K -f 8 -c 1 -n 20 -w 5
one all_reduce braid small8_old_1 $E NCCL_MAX_CTAS=8 NCCL_BUFFSIZE=4194304 -- -b 8 -e 512K -f 8 -c 1 -n 20 -w 5
for c in all_gather reduce_scatter all_reduce; do
  one $c braid ${c}8_b16_1 $E NCCL_MAX_CTAS=8 NCCL_BUFFSIZE=16777216 -- -b 16M -e 256M -f 4 -c 1 -n 10 -w 3
done
gpu_pack
