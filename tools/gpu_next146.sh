#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min): the byte copy kernels' words out of local memory. Broadcast and all-gather run on
# collKernel<uint8_t, FuncCopy> (LL, LL128), whose DevWordPrims::load/store built each 8-byte word through a Line
# union indexed by a runtime count: ptxas put it in an 8-byte stack frame (every word, whole ones too, stored to and
# reloaded from local memory), where the float kernels have none. 2026-12-13d: on LL128, broadcast ran ~1.4 us slower
# than reduce at 2 MB in place (11.86 against 10.50) and all-gather ~1.2 us slower than reduce-scatter, with the
# same traffic; a receive backoff and the direction (root 1) changed nothing. build-cp: main with bytes assembled by
# shifts (0-byte stack frame; the reducing kernels' code unchanged). Three interleaved rounds of broadcast and
# all-gather, the tuner's picks (8 B-2 MB) and LL128 forced (256 KB-4 MB), build-new (main) against build-cp; then
# every device_coll_test case on build-cp (each protocol forced, odd counts: the partial words). Carry [build-pack]
# (tools/pack_carry.sh build-new build-cp).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next146_out}; L=$OUT/next146; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-new X=$PWD/build-cp
echo "build-new of $(cat $M/HEAD); build-cp of $(cat $X/HEAD)"
FT="-b 8 -e 2M -f 4 -c 1 -n 30 -w 5 -N 3" FL="-b 256K -e 4M -f 2 -c 1 -n 20 -w 5 -N 3"
for r in 1 2 3; do
  if (( r % 2 )); then order="$M $X"; else order="$X $M"; fi
  for c in broadcast all_gather; do
    [[ $(( $(date +%s) - GPU_T0 )) -gt ${GUARD:-200} ]] && { echo "round $r $c skipped (time)"; continue; }
    for lib in $order; do
      B=$lib; export LD_LIBRARY_PATH=$lib/lib; n=$(basename $lib)
      one $c braid r${r}_${c}_tuner_$n -- $FT -J $L/r${r}_${c}_tuner_$n.json > /dev/null
      one $c braid r${r}_${c}_ll128_$n NCCL_PROTO=LL128 -- $FL -J $L/r${r}_${c}_ll128_$n.json > /dev/null
    done
  done
  echo "round $r done at $(( $(date +%s) - GPU_T0 )) s"
done
B=$X; export LD_LIBRARY_PATH=$X/lib
gpu_tests device_coll_test
gpu_pack
