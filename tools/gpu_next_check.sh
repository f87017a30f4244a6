#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min): the first call of the session after the eighth. Validates what that session
# could not run on a GPU and measures what it left open:
#   1. builds this tree and, beside it, a copy with kRcOutline forced off (every reducing kernel inlined);
#   2. runs every gpu test on this tree: numeric_device_test (hardware paths), device_coll_test (with the new
#      P2pSeveralLargeTransfersInOneGroup and the P2P-LL64K variant), device_mp_test, matmul_gpu_test;
#   3. int8 and int64 all-reduce and int8 reduce-scatter, 1 MB-256 MB: NCCL, Braid (outlined), Braid inlined;
#   4. send/recv and all-to-all 8 B-128 MB, NCCL and Braid, on a stream (two rounds) and send/recv in graphs;
#      send/recv also with BRAID_P2P_CHANNEL_BYTES=16384 (mid-size transfers over more channels, their shares
#      LL: the suspect for graph send/recv at 128 KB, 0.83x NCCL).
# Raw outputs: $OUT/next.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next_out}; L=$OUT/next; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build_inlined braid all_reduce_perf reduce_scatter_perf
gpu_build braid braidrun matmul_demo all_reduce_perf reduce_scatter_perf sendrecv_perf alltoall_perf \
  device_coll_test device_mp_test matmul_gpu_test numeric_device_test
wait
gpu_tests numeric_device_test device_coll_test device_mp_test matmul_gpu_test
export PERF_TIMEOUT=40
F="-b 1M -e 256M -f 4 -c 1 -n 20 -w 5"
NEW=$B
for d in int8 int64; do
  one all_reduce nccl ar_${d}_nccl -- $F -d $d
  one all_reduce braid ar_${d}_out -- $F -d $d
  B=$INL/build-var one all_reduce braid ar_${d}_inl -- $F -d $d; B=$NEW
done
one reduce_scatter nccl rs_int8_nccl -- $F -d int8
one reduce_scatter braid rs_int8_out -- $F -d int8
B=$INL/build-var one reduce_scatter braid rs_int8_inl -- $F -d int8; B=$NEW
P="-b 8 -e 128M -f 8 -c 1 -n 50 -w 10"
for round in 1 2; do
  one sendrecv nccl sr_nccl_$round -- $P
  one sendrecv braid sr_braid_$round -- $P
  one sendrecv braid sr_braid16k_$round BRAID_P2P_CHANNEL_BYTES=16384 -- $P
done
one alltoall nccl a2a_nccl -- $P
one alltoall braid a2a_braid -- $P
one sendrecv nccl sr_graph_nccl -- -b 8 -e 1M -f 8 -c 1 -n 50 -w 10 -G 20
one sendrecv braid sr_graph_braid -- -b 8 -e 1M -f 8 -c 1 -n 50 -w 10 -G 20
one sendrecv braid sr_graph_braid16k BRAID_P2P_CHANNEL_BYTES=16384 -- -b 8 -e 1M -f 8 -c 1 -n 50 -w 10 -G 20
gpu_pack
