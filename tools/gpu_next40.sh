#!/usr/bin/env bash
# Device call (2 GPUs, ~2 min), the fifteenth session's sixth: config.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY
# (a 24-CTA bound, src/core/comm.h) end to end through tools/overlap_probe.cu (PROBE_CTA_POLICY=1), against the
# default policy and against NCCL 2.28.3 with the same two policies. Raw outputs: $OUT/next40.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next40_out}; L=$OUT/next40; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid
nvcc -O2 -std=c++17 -arch=sm_90 -Iinclude tools/overlap_probe.cu -o $B/overlap_probe -L$B/lib -lbraid \
  -Xlinker -rpath=$PWD/$B/lib > "$L/overlap_build.log" 2>&1 || cat "$L/overlap_build.log"
for s in "16777216 60" "67108864 16"; do
  for lib in nccl braid; do overlap_run $lib $s; overlap_run $lib $s PROBE_CTA_POLICY=1; done
done
gpu_pack
