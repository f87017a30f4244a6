#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min, streamed) for LL on small point-to-point transfers (NCCL_P2P_LL_THRESHOLD):
# every gpu test (P2pLlAndSimpleAlternate mixes LL and SIMPLE transfers on one connection, across the LL flag
# wrap, over P2P and SHM), then send/recv, all-to-all, scatter and gather 8 B-4 MB against NCCL, and Braid
# with the threshold at 0 (SIMPLE only, as before); then the socket path against NCCL. Raw: $OUT/p2pll.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_p2p_ll_out}; L=$OUT/p2pll; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid all_reduce_perf sendrecv_perf alltoall_perf scatter_perf gather_perf device_coll_test device_mp_test
gpu_tests device_coll_test device_mp_test
export PERF_TIMEOUT=30
F="-b 8 -e 4M -f 4 -c 1 -n 30 -w 5"
for p in sendrecv alltoall scatter gather; do
  one $p nccl ${p}_nccl -- $F
  one $p braid ${p}_braid -- $F
  one $p braid ${p}_braid_simple NCCL_P2P_LL_THRESHOLD=0 -- $F
done
# The socket path once more with the final placement rule (ranks bound to one core each by mpirun's default).
export PERF_TIMEOUT=50
SOCK="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1"; BIG="-b 64M -e 1G -f 4 -c 1 -n 3 -w 1"
one all_reduce braid sock_braid $SOCK NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET -- $BIG
grep -m1 "NET proxy of rank" "$L/sock_braid.txt"
one all_reduce nccl sock_nccl $SOCK -- $BIG
gpu_pack
