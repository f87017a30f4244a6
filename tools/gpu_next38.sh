#!/usr/bin/env bash
# Device call (2 GPUs, ~8 min), the fifteenth session's fourth: the full tables issue 5 asks for. Every
# collective 8 B-512 MB (-c 1, one run each, -J JSON for tools/perf/plot): NCCL and Braid's tuner; and for
# the five ring collectives Braid with NCCL_PROTO forced to LL, LL128 and Simple. Then tools/link_probe.cu's
# two-destination copies, and tools/overlap_probe.cu (an all-reduce stream beside a stream of compute kernels:
# Braid, Braid with BRAID_ONESHOT_SPLIT=0, NCCL). Raw outputs: $OUT/next38.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next38_out}; L=$OUT/next38; mkdir -p "$L"
source tools/gpu_common.sh
nvcc -O3 -arch=sm_90 -std=c++17 tools/link_probe.cu -o /tmp/link_probe > "$L/link_probe_build.log" 2>&1 &
gpu_build braid all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf \
  sendrecv_perf gather_perf scatter_perf
nvcc -O2 -std=c++17 -arch=sm_90 -Iinclude tools/overlap_probe.cu -o $B/overlap_probe -L$B/lib -lbraid \
  -Xlinker -rpath=$PWD/$B/lib > "$L/overlap_build.log" 2>&1 || { cat "$L/overlap_build.log"; }
wait
export PERF_TIMEOUT=90
F="-b 8 -e 512M -f 2 -c 1 -n 20 -w 5"
for c in all_reduce all_gather reduce_scatter broadcast reduce; do
  one $c nccl full_${c}_nccl -- $F -J $L/full_${c}_nccl.json
  one $c braid full_${c}_braid -- $F -J $L/full_${c}_braid.json
  for p in LL LL128 Simple; do
    [[ $(( $(date +%s) - GPU_T0 )) -gt 440 ]] && { echo "skipping $c $p (time)"; continue; }
    one $c braid full_${c}_$p NCCL_PROTO=$p -- $F -J $L/full_${c}_$p.json
  done
done
for c in alltoall sendrecv gather scatter; do
  [[ $(( $(date +%s) - GPU_T0 )) -gt 480 ]] && { echo "skipping $c (time)"; continue; }
  one $c nccl full_${c}_nccl -- $F -J $L/full_${c}_nccl.json
  one $c braid full_${c}_braid -- $F -J $L/full_${c}_braid.json
done
timeout 30 /tmp/link_probe 512 2dst > "$L/link_probe_2dst.txt" 2>&1; cat "$L/link_probe_2dst.txt"
if [[ -x $B/overlap_probe && $(( $(date +%s) - GPU_T0 )) -lt 540 ]]; then
  for s in "16777216 60" "67108864 16"; do
    overlap_run nccl $s; overlap_run braid $s; overlap_run braid $s BRAID_ONESHOT_SPLIT=0
  done
fi
gpu_pack
