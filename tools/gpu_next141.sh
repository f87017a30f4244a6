#!/usr/bin/env bash
# Device call (2 GPUs, ~1 min): where LL128 hands over to Simple, per collective. Two single-run full tables (2xH100
# 2026-12-11a, 2xH200 2026-12-12b) had LL128 forced 1.3-2.2 us under Simple for reduce at 2-4 MB (0.3-0.8 for
# reduce-scatter at 4 MB), where the tuner picks Simple, while broadcast ran Simple 1.1-2.0 us under LL128 there.
# Three interleaved rounds of reduce, reduce-scatter, all-reduce and broadcast with LL128 and Simple forced (order
# alternating), 1-6 MB in 1 MB steps, -N 3, on main (the tuner still picks algorithm and channels), inside a time
# guard. Its first form (five collectives, five rounds, 1-16 MB) ran past 400 s in call 2026-12-12f: at -c 1 the perf
# tools' check makes such a process take ~15 s. Carry [build-pack] with build-new (tools/pack_carry.sh build-new).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next141_out}; L=$OUT/next141; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
[[ -x build-new/bin/all_reduce_perf ]] || gpu_unpack
B=$PWD/build-new; export LD_LIBRARY_PATH=$B/lib
echo "build-new of $(cat $B/HEAD)"
F="-b 1M -e 6M -i 1M -c 1 -n 20 -w 5 -N 3"
for r in 1 2 3; do
  if (( r % 2 )); then order="LL128 Simple"; else order="Simple LL128"; fi
  for c in reduce reduce_scatter all_reduce broadcast; do
    [[ $(( $(date +%s) - GPU_T0 )) -gt ${GUARD:-170} ]] && { echo "round $r $c skipped (time)"; continue; }
    for p in $order; do one $c braid r${r}_${c}_$p NCCL_PROTO=$p -- $F -J $L/r${r}_${c}_$p.json > /dev/null; done
  done
  echo "round $r done at $(( $(date +%s) - GPU_T0 )) s"
done
gpu_pack
