#!/usr/bin/env bash
# Device call (2 GPUs, ~2 min): the receive tail (BRAID_TUNER_RECV_TAIL) on broadcast and all-gather too, as the
# tuner's pick. Once the byte copy kernels left local memory (ee928df) LL128 broadcast and all-gather ran level with
# reduce and reduce-scatter (2026-12-13e), so the tail the reductions had moves the copies' handover to Simple from
# ~1.4 to ~3.5 MB (broadcast) and from ~2.8 to ~7 MB (all-gather). build-cp (ee928df) against build-tn (the same with
# the tail on copies), three interleaved rounds of broadcast and all-gather at 1-8 MB, the new picks (TUNING), -c 1.
# Carry [build-pack] (tools/pack_carry.sh build-cp build-tn).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next147_out}; L=$OUT/next147; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-cp X=$PWD/build-tn
echo "build-cp of $(cat $M/HEAD); build-tn of $(cat $X/HEAD)"
F="-b 1M -e 8M -i 1M -c 1 -n 20 -w 5 -N 3"
B=$X; export LD_LIBRARY_PATH=$X/lib
for c in broadcast all_gather; do gpu_picks $c $F; done
for r in 1 2 3; do
  if (( r % 2 )); then order="$M $X"; else order="$X $M"; fi
  for c in broadcast all_gather; do
    [[ $(( $(date +%s) - GPU_T0 )) -gt ${GUARD:-150} ]] && { echo "round $r $c skipped (time)"; continue; }
    for lib in $order; do
      B=$lib; export LD_LIBRARY_PATH=$lib/lib
      one $c braid r${r}_${c}_$(basename $lib) -- $F -J $L/r${r}_${c}_$(basename $lib).json > /dev/null
    done
  done
  echo "round $r done at $(( $(date +%s) - GPU_T0 )) s"
done
gpu_pack
