#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min): the tuner's small-size protocol on the GPUs it was fitted on. The H200 full tables of
# call 2026-12-12b had LL128 forced 0.5-2 us under the tuner's pick (LL) for all-reduce, reduce and reduce-scatter
# from 8 B to 512 KB, and LL forced under it for all-gather, one process each; on H100 such gaps were process noise
# (2026-12-11f). Here: what the tuner picks (NCCL_DEBUG_SUBSYS=TUNING), then five interleaved rounds of the five
# ring collectives, tuner / LL / LL128 forced, rotating the order each round, 8 B-512 KB, -N 3 cycles per process.
# Carry build-new as [build-pack] (tools/pack_carry.sh build-new).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next139_out}; L=$OUT/next139; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
[[ -x build-new/bin/all_reduce_perf ]] || gpu_unpack
B=$PWD/build-new; export LD_LIBRARY_PATH=$B/lib
echo "build-new of $(cat $B/HEAD)"
F="-b 8 -e 512K -f 4 -c 1 -n 30 -w 10 -N 3"
COLLS="all_reduce reduce reduce_scatter all_gather broadcast"
for c in $COLLS; do
  one $c braid tuning_$c NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING -- -b 8 -e 512K -f 4 -c 0 -n 1 -w 0 > /dev/null
  grep -h "\[rank 0\] BRAID INFO .*predicted" $L/tuning_$c.txt | sed -E 's/^.*BRAID INFO //' | awk '!seen[$0]++' > $L/tuning_$c.picks
  echo "== $c picks:"; cut -c1-160 $L/tuning_$c.picks | head -14
done
for r in 1 2 3 4 5; do
  case $r in 1|4) order="tuner LL LL128";; 2|5) order="LL LL128 tuner";; 3) order="LL128 tuner LL";; esac
  for c in $COLLS; do
    for p in $order; do
      if [[ $p == tuner ]]; then one $c braid r${r}_${c}_tuner -- $F -J $L/r${r}_${c}_tuner.json > /dev/null
      else one $c braid r${r}_${c}_$p NCCL_PROTO=$p -- $F -J $L/r${r}_${c}_$p.json > /dev/null; fi
    done
  done
  echo "round $r done at $(( $(date +%s) - GPU_T0 )) s"
done
gpu_pack
