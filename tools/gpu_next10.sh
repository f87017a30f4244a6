#!/usr/bin/env bash
# Device call (2 GPUs, ~7 min): the first call of the session after the ninth, on branch wip/next-merge (main
# + wip/wait-clock-robust + wip/ll-over-net). Validates what the ninth session could not run:
#   1. every gpu test: the waits robust to the clock (AbortWhilePeerNeverArrives now per protocol), LL over
#      sockets (LlForcedShm runs every quick case with NCCL_PROTO=LL over SHM and over sockets; it stalled in
#      the 16 MB all-reduce before the acquire fix);
#   2. LL against SIMPLE over sockets (NCCL_PROTO=LL / Simple), all-reduce and send/recv 8 B-16 MB, and NCCL:
#      decides the NetSocket LL tuner row and whether p2p over NET should run LL by default;
#   3. the NVLink controls after the wait changes: all-reduce and send/recv 8 B-128 MB against NCCL;
#   4. all-to-all 8 B-8 MB, native and as grouped send/recv, both libraries.
# Raw outputs: $OUT/next10.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next10_out}; L=$OUT/next10; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun matmul_demo all_reduce_perf sendrecv_perf alltoall_perf \
  device_coll_test device_mp_test matmul_gpu_test numeric_device_test
gpu_tests numeric_device_test device_coll_test device_mp_test matmul_gpu_test
export PERF_TIMEOUT=60
SOCK="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1"
S="-b 8 -e 16M -f 8 -c 1 -n 20 -w 5"
one all_reduce nccl ar_sock_nccl $SOCK -- $S
one all_reduce braid ar_sock_ll $SOCK NCCL_PROTO=LL -- $S
one all_reduce braid ar_sock_simple $SOCK NCCL_PROTO=Simple -- $S
one sendrecv nccl sr_sock_nccl $SOCK -- $S
one sendrecv braid sr_sock_ll $SOCK NCCL_PROTO=LL -- $S
one sendrecv braid sr_sock_simple $SOCK NCCL_PROTO=Simple -- $S
P="-b 8 -e 128M -f 8 -c 1 -n 30 -w 5"
for c in all_reduce sendrecv alltoall; do
  one $c nccl ${c}_nccl -- $P
  one $c braid ${c}_braid -- $P
done
# All-to-all at small sizes (0.75-0.88x in the ninth session): each library's native ncclAlltoAll against its
# own grouped send/recv (BRAID_PERF_A2A_P2P=1), 8 B-8 MB.
A="-b 8 -e 8M -f 4 -c 1 -n 40 -w 10"
one alltoall nccl a2a_nccl_p2p BRAID_PERF_A2A_P2P=1 -- $A
one alltoall braid a2a_braid_p2p BRAID_PERF_A2A_P2P=1 -- $A
one alltoall nccl a2a_nccl_native -- $A
one alltoall braid a2a_braid_native -- $A
gpu_pack
