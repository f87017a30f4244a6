#!/usr/bin/env bash
# Device call (2 GPUs, ~2 min), twentieth session, build-main of 25540be: data for a cluster size chosen by
# channel count (not built). Call g: on 24 channels clusters of 3 beat 4 for all-gather, reduce-scatter and the
# ring all-reduce at 64-256 MB by 5-12% and lose 1.5% for broadcast. Here: reduce on 24 channels in clusters of
# 3 and 4; the ring all-reduce on 24 channels in clusters of 3 at 128-512 MB beside the one-shot the tuner keeps
# there; all-gather and reduce-scatter on 32 and 48 channels in clusters of 2, 3 and 4 (64 and 256 MB). One run
# each, -c 1.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next79_out}; L=$OUT/next79; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-main
[[ -x $B/bin/all_reduce_perf ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
nvidia-smi -L
export PERF_TIMEOUT=60
E=LD_LIBRARY_PATH=$B/lib
S="-b 16M -e 256M -f 4 -c 1 -n 10 -w 3"
for k in 3 4; do one reduce braid reduce24_c$k $E NCCL_MAX_CTAS=24 NCCL_CGA_CLUSTER_SIZE=$k -- $S; done
S="-b 128M -e 512M -f 2 -c 1 -n 10 -w 3"
one all_reduce braid ar24_ring_c3 $E NCCL_MAX_CTAS=24 NCCL_CGA_CLUSTER_SIZE=3 NCCL_ALGO=Ring -- $S
one all_reduce braid ar24_tuner $E NCCL_MAX_CTAS=24 -- $S
S="-b 64M -e 256M -f 4 -c 1 -n 10 -w 3"
for ch in 32 48; do for c in all_gather reduce_scatter; do for k in 2 3 4; do
  one $c braid ${c}${ch}_c$k $E NCCL_MAX_CTAS=$ch NCCL_CGA_CLUSTER_SIZE=$k -- $S
done; done; done
gpu_pack
