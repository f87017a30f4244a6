#!/usr/bin/env bash
# One device call (2 GPUs) that measures the SHM and socket paths (P2P off): what limits the socket path
# (channel count, FIFO size, host buffers without a GPU, NCCL's own channel/socket setup from its INFO log),
# and the grid the SHM rows of the tuner are fitted to (all-reduce / all-gather with LL and Simple forced at
# fixed channel counts, 8 B-32 MB; files {coll}_{proto}_{ch}.txt for tools/tuner_fit.py). Raw: $OUT/paths.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_paths_out}; L=$OUT/paths; mkdir -p "$L/shm"
source tools/gpu_common.sh
gpu_build braid all_reduce_perf all_gather_perf
SOCK="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1"; BIG="-b 64M -e 1G -f 4 -c 1 -n 3 -w 1"
echo "== socket path (all-reduce busbw)"
one all_reduce nccl sock_nccl $SOCK NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH -- $BIG
grep -E "NET/Socket|Channel [0-9]+/|nChannels|Using network|threads" "$L/sock_nccl.txt" | sort | uniq -c | sort -rn | head -12
for c in 1 2 4 8; do one all_reduce braid sock_ch$c $SOCK NCCL_MIN_NCHANNELS=$c NCCL_MAX_NCHANNELS=$c -- $BIG; done
for b in 1048576 16777216; do
  for c in 2 4; do one all_reduce braid sock_ch${c}_buf$b $SOCK NCCL_BUFFSIZE=$b NCCL_MIN_NCHANNELS=$c NCCL_MAX_NCHANNELS=$c -- $BIG; done
done
one all_reduce braid sock_ch4_thr2 $SOCK NCCL_MIN_NCHANNELS=4 NCCL_MAX_NCHANNELS=4 BRAID_NET_PROXY_THREADS=2 -- $BIG
for c in 1 4; do one all_reduce braid sock_host_ch$c $SOCK BRAID_HOST_COMM=1 BRAID_HOST_NCHANNELS=$c -- $BIG; done
echo "== SHM grid (forced protocol x channels, 8 B-32 MB)"
for p in all_reduce all_gather; do
  for c in 1 2 4 8 16; do one $p braid shm/${p}_LL_$c NCCL_P2P_DISABLE=1 NCCL_PROTO=LL NCCL_MIN_NCHANNELS=$c NCCL_MAX_NCHANNELS=$c -- -b 8 -e 32M -f 4 -c 1 -n 20 -w 3; done
  for c in 1 4 16 64; do one $p braid shm/${p}_Simple_$c NCCL_P2P_DISABLE=1 NCCL_PROTO=Simple NCCL_MIN_NCHANNELS=$c NCCL_MAX_NCHANNELS=$c -- -b 8 -e 32M -f 4 -c 1 -n 20 -w 3; done
  one $p nccl shm/${p}_nccl NCCL_P2P_DISABLE=1 -- -b 8 -e 32M -f 4 -c 1 -n 20 -w 3
done
gpu_pack
