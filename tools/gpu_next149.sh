#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min): every gpu test on main (97cd247: the byte copy kernels out of local memory, whose
# p2p LL partial words device_p2p_group_test covers, the receive tail, graph mixing with its review mends), then
# the five ring collectives at 256 KB-32 MB against NVIDIA NCCL in the same call, interleaved rounds while the
# time guard allows, -c 1, for the ratios of whichever cards came. Carry [build-pack] (tools/pack_carry.sh build-main).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next149_out}; L=$OUT/next149; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
B=$PWD/build-main; export LD_LIBRARY_PATH=$B/lib
echo "build-main of $(cat $B/HEAD)"
gpu_tests $GPU_ALL_TESTS
echo "tests done at $(( $(date +%s) - GPU_T0 )) s"
F="-b 256K -e 32M -f 2 -c 1 -n 20 -w 5 -N 2"
for r in 1 2 3; do
  for c in all_reduce broadcast all_gather reduce reduce_scatter; do
    [[ $(( $(date +%s) - GPU_T0 )) -gt ${GUARD:-480} ]] && { echo "round $r $c skipped (time)"; continue; }
    if (( r % 2 )); then order="braid nccl"; else order="nccl braid"; fi
    for lib in $order; do one $c $lib r${r}_${c}_$lib -- $F -J $L/r${r}_${c}_$lib.json > /dev/null; done
  done
  echo "round $r done at $(( $(date +%s) - GPU_T0 )) s"
done
gpu_pack
