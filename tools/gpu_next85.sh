#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min), twenty-first session, build-main of the commit giving FIFOs of 16 MiB on 8 channels
# or fewer and 8 MiB on 9-16 (core/comm.h, agreedFifoBytes). fifo_gpu_test; device_coll_test under
# NCCL_MAX_CTAS=8 (every collective on 16 MiB FIFOs, 2 MiB steps); then under NCCL_MAX_CTAS=8 NCCL and main, every
# collective 1-256 MB, one round, -c 1, and the small all-reduce.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next85_out}; L=$OUT/next85; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-main
[[ -x $B/bin/fifo_gpu_test ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
nvidia-smi -L
export LD_LIBRARY_PATH=$B/lib
gpu_tests fifo_gpu_test
(export NCCL_MAX_CTAS=8; L=$L/ctas8; mkdir -p $L; gpu_tests device_coll_test device_p2p_group_test)
export PERF_TIMEOUT=90
E=LD_LIBRARY_PATH=$B/lib
S="-b 1M -e 256M -f 4 -c 1 -n 10 -w 3"
for c in all_gather reduce_scatter all_reduce broadcast reduce sendrecv alltoall gather scatter; do
  one $c nccl ${c}8_nccl_1 $E NCCL_MAX_CTAS=8 -- $S
  one $c braid ${c}8_new_1 $E NCCL_MAX_CTAS=8 -- $S
done
one all_reduce braid small8_new_1 $E NCCL_MAX_CTAS=8 -- -b 8 -e 512K -f 8 -c 1 -n 20 -w 5
gpu_pack
