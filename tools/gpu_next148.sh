#!/usr/bin/env bash
# Device call (2 GPUs, ~2 min): main (4e04f24: graph mixing, the byte copy kernels out of local memory, the receive
# tail on the copies) against NVIDIA NCCL in one call, the five ring collectives at 256 KB-8 MB, two interleaved
# rounds, -c 1, for docs/PERFORMANCE.md's ratios. Carry [build-pack] (tools/pack_carry.sh build-new).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next148_out}; L=$OUT/next148; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
B=$PWD/build-new; export LD_LIBRARY_PATH=$B/lib
echo "build-new of $(cat $B/HEAD)"
F="-b 256K -e 8M -f 2 -c 1 -n 20 -w 5 -N 2"
for r in 1 2; do
  for c in all_reduce broadcast all_gather reduce reduce_scatter; do
    [[ $(( $(date +%s) - GPU_T0 )) -gt ${GUARD:-120} ]] && { echo "round $r $c skipped (time)"; continue; }
    if (( r % 2 )); then order="braid nccl"; else order="nccl braid"; fi
    for lib in $order; do one $c $lib r${r}_${c}_$lib -- $F -J $L/r${r}_${c}_$lib.json > /dev/null; done
  done
  echo "round $r done at $(( $(date +%s) - GPU_T0 )) s"
done
gpu_pack
