#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min): the SIMPLE poster's stop check in its second form (the live stop word read first,
# as before; only once it is set, the call that set it, PrimsShared::stopCall), replacing 5c3a89e's per-call
# parity word, which call c's A/B left 0.3-0.5 us behind at reduce-scatter 8-16 MB in two rounds. Every gpu test on
# build-new, then four interleaved rounds of all-reduce and reduce-scatter 4-32 MB against build-main (97cd247), and
# three rounds of all-gather 8 B-1 MB against NCCL (the full table's 16 KB point ran 13.37 us once). -c 1.
# Carry [build-pack] (tools/pack_carry.sh build-main build-new).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next152_out}; L=$OUT/next152; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main N=$PWD/build-new
echo "build-main of $(cat $M/HEAD); build-new of $(cat $N/HEAD)"
B=$N; export LD_LIBRARY_PATH=$N/lib
gpu_tests $GPU_ALL_TESTS
echo "tests done at $(( $(date +%s) - GPU_T0 )) s"
gpu_ab_rounds ab 4 "-b 4M -e 32M -f 2 -c 1 -n 20 -w 5 -N 2" all_reduce reduce_scatter -- $M $N
echo "a/b done at $(( $(date +%s) - GPU_T0 )) s"
B=$N; export LD_LIBRARY_PATH=$N/lib
for r in 1 2 3; do
  [[ $(( $(date +%s) - GPU_T0 )) -gt ${GUARD:-400} ]] && { echo "ag round $r skipped (time)"; continue; }
  if (( r % 2 )); then order="braid nccl"; else order="nccl braid"; fi
  for lib in $order; do one all_gather $lib ag${r}_$lib -- -b 8 -e 1M -f 2 -c 1 -n 20 -w 5 -N 2 > /dev/null; done
done
gpu_pack
