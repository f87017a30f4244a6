#!/usr/bin/env bash
# Device call (2 GPUs, ~2 min): the split one-shot's CTAs on loops of their own direction (tools/var_splitloops.patch,
# build-sl) against the same tree without it (build-bm), both -DBRAID_KERNELS=minimal, and main's default build
# (build-new, 98f52e8). Call b saw a build with a variable first step run 8 MB 0.7 us slower than main at the same
# schedule: the 8 MB all-reduce moves with the loop's code. Four interleaved rounds, all-reduce 4-32 MB, -c 1.
# Carry [build-pack] (tools/pack_carry.sh build-new build-bm build-sl).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next153_out}; L=$OUT/next153; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
for b in build-new build-bm build-sl; do echo "$b of $(cat $b/HEAD)"; done
F="-b 4M -e 32M -f 2 -c 1 -n 20 -w 5 -N 2"
for r in 1 2 3 4; do
  [[ $(( $(date +%s) - GPU_T0 )) -gt ${GUARD:-100} ]] && { echo "round $r skipped (time)"; continue; }
  if (( r % 2 )); then order="build-new build-bm build-sl"; else order="build-sl build-bm build-new"; fi
  for b in $order; do
    B=$PWD/$b; export LD_LIBRARY_PATH=$B/lib; one all_reduce braid r${r}_ar_$b -- $F > /dev/null
  done
  echo "round $r done at $(( $(date +%s) - GPU_T0 )) s"
done
gpu_pack
