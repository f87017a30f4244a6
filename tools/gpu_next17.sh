#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min), the twelfth session's last: main with the refitted LL128 row (base 3.2: LL128
# for all-reduce/broadcast/reduce at ~512 KB, all-gather/reduce-scatter at ~2 MB) and the one-shot on LL128.
#   1. every gpu test (matmul_demo built this time);
#   2. the five ring collectives 8 B-32 MB, Braid twice and NCCL once; all-reduce in CUDA graphs (-G 20) both;
#   3. the p2p collectives 8 B-16 MB, Braid and NCCL once each (the 32-block parameter tier).
# Raw outputs: $OUT/next17.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next17_out}; L=$OUT/next17; mkdir -p "$L"
source tools/gpu_common.sh
P="all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf sendrecv_perf alltoall_perf gather_perf scatter_perf"
gpu_build braid braidrun matmul_demo $P device_coll_test device_mp_test matmul_gpu_test numeric_device_test
gpu_tests numeric_device_test device_coll_test device_mp_test matmul_gpu_test
export PERF_TIMEOUT=60
A="-b 8 -e 32M -f 4 -c 1 -n 30 -w 5"
for c in all_reduce all_gather reduce_scatter broadcast reduce; do
  one $c nccl ${c}_nccl -- $A; one $c braid ${c}_1 -- $A; one $c braid ${c}_2 -- $A
done
G="-b 8 -e 2M -f 16 -c 1 -n 20 -w 5 -G 20"
one all_reduce nccl graph_nccl -- $G; one all_reduce braid graph_braid -- $G
Q="-b 8 -e 16M -f 4 -c 1 -n 30 -w 5"
for c in sendrecv alltoall gather scatter; do one $c nccl ${c}_nccl -- $Q; one $c braid ${c}_1 -- $Q; done
gpu_pack
