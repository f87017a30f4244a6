#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min), for the next session: the reduce tail (tuner_model.def, BRAID_TUNER_REDUCE_TAIL)
# as the tuner's pick, not yet GPU-run. It moves all-reduce and reduce from Simple to LL128 at 1.5-3 MB and
# reduce-scatter at 3-6 MB; calls 2026-12-12g/h measured those configurations forced (LL128 0.7-1.8 us ahead, #wrong 0).
# Here: build-main (e6ef314, before the tail) against build-new (main), five interleaved rounds of all-reduce, reduce
# and reduce-scatter at 1-8 MB (order alternating), the new picks (TUNING), then device_coll_test on build-new.
# A time guard keeps the call inside its limit (call 2026-12-12f ran past it). Carry [build-pack]
# (tools/pack_carry.sh build-new build-main).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next142_out}; L=$OUT/next142; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main X=$PWD/build-new
echo "build-main of $(cat $M/HEAD); build-new of $(cat $X/HEAD)"
F="-b 1M -e 8M -i 1M -c 1 -n 20 -w 5 -N 3"
B=$X; export LD_LIBRARY_PATH=$X/lib
for c in all_reduce reduce reduce_scatter; do gpu_picks $c $F; done
for r in 1 2 3 4 5; do
  if (( r % 2 )); then order="$M $X"; else order="$X $M"; fi
  for c in all_reduce reduce reduce_scatter; do
    [[ $(( $(date +%s) - GPU_T0 )) -gt ${GUARD:-300} ]] && { echo "round $r $c skipped (time)"; continue; }
    for lib in $order; do
      B=$lib; export LD_LIBRARY_PATH=$lib/lib
      one $c braid r${r}_${c}_$(basename $lib) -- $F -J $L/r${r}_${c}_$(basename $lib).json > /dev/null
    done
  done
  echo "round $r done at $(( $(date +%s) - GPU_T0 )) s"
done
B=$X; export LD_LIBRARY_PATH=$X/lib
gpu_tests device_coll_test
gpu_pack
