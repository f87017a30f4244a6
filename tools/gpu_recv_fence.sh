#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min): SIMPLE receive posts without a system fence (devPostRecv, as NCCL's). Every
# gpu test (it touches every SIMPLE collective and p2p transfer), then send/recv with BRAID_P2P_PIECES 1/2/4
# and all-to-all 1/4 against NCCL (4 KB-128 MB), and the SIMPLE collectives against NCCL (8 B-128 MB).
# Raw outputs: $OUT/recvfence.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_recvfence_out}; L=$OUT/recvfence; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun matmul_demo all_reduce_perf all_gather_perf reduce_scatter_perf sendrecv_perf alltoall_perf \
  device_coll_test device_mp_test matmul_gpu_test numeric_device_test
gpu_tests numeric_device_test device_coll_test device_mp_test matmul_gpu_test
export PERF_TIMEOUT=60
P="-b 4K -e 128M -f 2 -c 1 -n 40 -w 10"
one sendrecv nccl sr_nccl -- $P
for k in 1 2 4; do one sendrecv braid sr_p$k BRAID_P2P_PIECES=$k -- $P; done
one alltoall nccl a2a_nccl -- $P
for k in 1 4; do one alltoall braid a2a_p$k BRAID_P2P_PIECES=$k -- $P; done
C="-b 8 -e 128M -f 4 -c 1 -n 30 -w 5"
for c in all_reduce all_gather reduce_scatter; do
  one $c nccl ${c}_nccl -- $C
  one $c braid ${c}_braid -- $C
done
gpu_pack
