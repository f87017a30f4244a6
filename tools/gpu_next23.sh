#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min), the thirteenth session's table: main with the allocation-free p2p launch and
# the auto Simple step cap (simpleStepCap: 2-rank NVLink segments of one to two FIFO steps run in two).
#   1. every gpu test;
#   2. the step cap against BRAID_PIPELINE_STEPS=1 (the old default): all-reduce 16-64 MB, all-gather and
#      reduce-scatter 32-128 MB, two interleaved rounds;
#   3. every collective, NCCL and Braid alternating, two rounds: the five ring collectives 8 B-32 MB, the p2p
#      ones 8 B-16 MB; all-reduce in CUDA graphs once each.
# Raw outputs: $OUT/next23.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next23_out}; L=$OUT/next23; mkdir -p "$L"
source tools/gpu_common.sh
P="all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf sendrecv_perf alltoall_perf gather_perf scatter_perf"
gpu_build braid braidrun matmul_demo $P device_coll_test device_mp_test matmul_gpu_test numeric_device_test
gpu_tests numeric_device_test device_coll_test device_mp_test matmul_gpu_test
export PERF_TIMEOUT=60
for round in 1 2; do
  one all_reduce braid capar_auto_$round -- -b 16M -e 64M -f 2 -c 1 -n 20 -w 5
  one all_reduce braid capar_off_$round BRAID_PIPELINE_STEPS=1 -- -b 16M -e 64M -f 2 -c 1 -n 20 -w 5
  for c in all_gather reduce_scatter; do
    one $c braid cap${c}_auto_$round -- -b 32M -e 128M -f 2 -c 1 -n 20 -w 5
    one $c braid cap${c}_off_$round BRAID_PIPELINE_STEPS=1 -- -b 32M -e 128M -f 2 -c 1 -n 20 -w 5
  done
done
A="-b 8 -e 32M -f 4 -c 1 -n 30 -w 5"
Q="-b 8 -e 16M -f 4 -c 1 -n 30 -w 5"
for round in 1 2; do
  for c in all_reduce all_gather reduce_scatter broadcast reduce; do
    one $c nccl ${c}_nccl_$round -- $A; one $c braid ${c}_braid_$round -- $A
  done
  for c in sendrecv alltoall gather scatter; do
    one $c nccl ${c}_nccl_$round -- $Q; one $c braid ${c}_braid_$round -- $Q
  done
done
G="-b 8 -e 2M -f 16 -c 1 -n 20 -w 5 -G 20"
one all_reduce nccl graph_nccl -- $G; one all_reduce braid graph_braid -- $G
gpu_pack
