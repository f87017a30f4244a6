#!/usr/bin/env bash
# Ran in the nineteenth session as call i (docs/gpu/2026-12-01i).
# Device call (2 GPUs, ~2 min), nineteenth session: with thread-block clusters (25881c1, carry build-main as
# gpu_next70.sh), how few channels do the ring collectives need? Call e put broadcast and reduce on 32 channels
# at the speed of 64; here every ring collective at 16-512 MB on 64 (the default), 32 and 24 channels
# (NCCL_MAX_NCHANNELS), one run each, -c 1: data for a tuner that gives clustered ring collectives fewer CTAs.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next71_out}; L=$OUT/next71; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-main
[[ -x $B/bin/broadcast_perf ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
nvidia-smi -L
export PERF_TIMEOUT=60
E=LD_LIBRARY_PATH=$B/lib
for c in broadcast reduce all_gather reduce_scatter all_reduce; do
  S="-b 16M -e 512M -f 4 -c 1 -n 10 -w 3"
  one $c braid ${c}_ch64 $E -- $S
  one $c braid ${c}_ch32 $E NCCL_MAX_NCHANNELS=32 -- $S
  one $c braid ${c}_ch24 $E NCCL_MAX_NCHANNELS=24 -- $S
done
gpu_pack
