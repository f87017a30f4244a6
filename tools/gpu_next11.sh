#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min), tenth session's second: validates the step-base preset of host FIFOs (LL
# from before the 32-bit flag wrap over SHM and sockets: LlManySmallAllReduces, P2pLlAndSimpleAlternate
# SHM-wrap) and the tuner's socket LL row (all-reduce over sockets with the tuner's own picks, against NCCL);
# then sweeps the p2p knobs where send/recv and all-to-all lose to NCCL (32 KB-512 KB): the bytes per
# channel (BRAID_P2P_CHANNEL_BYTES) and the LL threshold (NCCL_P2P_LL_THRESHOLD). Raw outputs: $OUT/next11.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next11_out}; L=$OUT/next11; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid all_reduce_perf sendrecv_perf alltoall_perf device_coll_test
gpu_tests device_coll_test
export PERF_TIMEOUT=60
SOCK="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1"
S="-b 8 -e 16M -f 8 -c 1 -n 20 -w 5"
one all_reduce nccl ar_sock_nccl $SOCK -- $S
one all_reduce braid ar_sock_tuned $SOCK -- $S
P="-b 4K -e 4M -f 2 -c 1 -n 40 -w 10"
one sendrecv nccl sr_nccl -- $P
one sendrecv braid sr_default -- $P
one sendrecv braid sr_cb16k BRAID_P2P_CHANNEL_BYTES=16384 -- $P
one sendrecv braid sr_cb32k BRAID_P2P_CHANNEL_BYTES=32768 -- $P
one sendrecv braid sr_ll64k NCCL_P2P_LL_THRESHOLD=65536 -- $P
one sendrecv braid sr_ll64k_cb16k NCCL_P2P_LL_THRESHOLD=65536 BRAID_P2P_CHANNEL_BYTES=16384 -- $P
one alltoall nccl a2a_nccl -- $P
one alltoall braid a2a_default -- $P
one alltoall braid a2a_cb16k BRAID_P2P_CHANNEL_BYTES=16384 -- $P
one alltoall braid a2a_ll64k NCCL_P2P_LL_THRESHOLD=65536 -- $P
one sendrecv nccl sr_nccl2 -- $P
one sendrecv braid sr_default2 -- $P
gpu_pack
