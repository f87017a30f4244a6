#!/usr/bin/env bash
# Device call (2 GPUs, ~6.5 min, streamed) for the socket path (P2P and SHM off): both libraries with mpirun's
# core binding off and on, alternated (one run per configuration cannot rank them: the VM's loopback TCP varies
# 2.1-4.4 GB/s), Braid with the proxy's per-connection time accounting (NCCL_DEBUG_SUBSYS=NET: does the GPU or
# the socket side stall?), and the untried layouts: 2 channels x 2 threads, 4 channels x 8 threads (one per
# connection). Raw: $OUT/sd.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_sock_diag_out}; L=$OUT/sd; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid all_reduce_perf
SOCK="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1"; BIG="-b 64M -e 1G -f 4 -c 1 -n 3 -w 1"
export PERF_TIMEOUT=50
mpirun --allow-run-as-root -np 2 bash -c 'echo "rank $OMPI_COMM_WORLD_RANK: $(taskset -pc $$)"' 2>&1 | head -2
# Open MPI's default for 2 ranks binds each to one core (printed above): the main thread, the proxy threads and
# the peer watch would share it. Unbound and bound, alternated, for both libraries:
MPIRUN_OPTS="--bind-to none" one all_reduce braid sock_unbound_braid_1 $SOCK -- $BIG
MPIRUN_OPTS="--bind-to none" one all_reduce nccl sock_unbound_nccl_1 $SOCK -- $BIG
one all_reduce braid sock_braid_1 $SOCK -- $BIG
one all_reduce nccl sock_nccl_1 $SOCK -- $BIG
MPIRUN_OPTS="--bind-to none" one all_reduce braid sock_unbound_braid_2 $SOCK -- $BIG
MPIRUN_OPTS="--bind-to none" one all_reduce nccl sock_unbound_nccl_2 $SOCK -- $BIG
MPIRUN_OPTS="--bind-to none" one all_reduce braid sock_stats $SOCK NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=NET -- -b 1G -e 1G -c 1 -n 3 -w 1
grep "closed:" "$L/sock_stats.txt" | sed 's/.*NET proxy: //' | head -16
MPIRUN_OPTS="--bind-to none" one all_reduce braid sock_2ch_2thr $SOCK NCCL_MIN_NCHANNELS=2 NCCL_MAX_NCHANNELS=2 -- $BIG
MPIRUN_OPTS="--bind-to none" one all_reduce braid sock_4ch_8thr $SOCK BRAID_NET_PROXY_THREADS=8 -- $BIG
gpu_pack
