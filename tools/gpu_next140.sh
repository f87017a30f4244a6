#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min): the P2pNvlink/LL row's cap lowered from 321 to 240 GB/s (build-ll) against main
# (build-new). Call 2026-12-12d (five interleaved rounds) and the H200 full tables of 2026-12-12b had LL128 forced
# ahead of the tuner's LL where the wire carries 192-384 KB (reduce-scatter 512 KB -0.62 us, all-reduce 256 KB
# -0.4 us in 2026-12-11f); the lower cap moves the tuner's LL -> LL128 crossover there (all-reduce, broadcast and
# reduce from 192 KB, all-gather and reduce-scatter from 384 KB). Five interleaved rounds of the five ring
# collectives across those sizes, main / new (order alternating), NCCL's all-reduce and reduce-scatter beside
# them; the new build's picks (TUNING); then device_coll_test on the new build (every collective, tuner's picks).
# Carry [build-pack] (tools/pack_carry.sh build-new build-ll).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next140_out}; L=$OUT/next140; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-new X=$PWD/build-ll
echo "main: $(cat $M/HEAD); new: $(cat $X/HEAD)"
FS="-b 128K -e 512K -i 64K -c 1 -n 30 -w 10 -N 3"   # all-reduce, broadcast, reduce
FH="-b 256K -e 1M -i 128K -c 1 -n 30 -w 10 -N 3"    # all-gather, reduce-scatter (wire: half the size)
flags() { case $1 in all_gather|reduce_scatter) echo "$FH";; *) echo "$FS";; esac; }
B=$X; export LD_LIBRARY_PATH=$X/lib
for c in all_reduce reduce_scatter all_gather broadcast reduce; do
  one $c braid tuning_$c NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING -- $(flags $c) -c 0 -n 1 -w 0 -N 1 > /dev/null
  grep -h "\[rank 0\] BRAID INFO .*predicted" $L/tuning_$c.txt | sed -E 's/^.*BRAID INFO //' | awk '!seen[$0]++' |
    grep -v "^AllGather \(16\|32\|512\) bytes" > $L/tuning_$c.picks
  echo "== $c picks (new):"; cut -c1-130 $L/tuning_$c.picks
done
for r in 1 2 3 4 5; do
  if (( r % 2 )); then order="$M $X"; else order="$X $M"; fi
  for c in all_reduce reduce_scatter all_gather broadcast reduce; do
    for lib in $order; do
      B=$lib; export LD_LIBRARY_PATH=$lib/lib; n=$(basename $lib)
      one $c braid r${r}_${c}_$n -- $(flags $c) -J $L/r${r}_${c}_$n.json > /dev/null
    done
  done
  B=$M; export LD_LIBRARY_PATH=$M/lib
  for c in all_reduce reduce_scatter; do one $c nccl r${r}_${c}_nccl -- $(flags $c) -J $L/r${r}_${c}_nccl.json > /dev/null; done
  echo "round $r done at $(( $(date +%s) - GPU_T0 )) s"
done
B=$X; export LD_LIBRARY_PATH=$X/lib
gpu_tests device_coll_test
gpu_pack
