#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min), the fifteenth session's fifth: the CTA bound (NCCL_MAX_CTAS / NCCL_MAX_NCHANNELS /
# config.maxCTAs keep the split one-shot's two CTAs per channel within them). Every gpu test; all-reduce 4-64 MB
# with no bound, NCCL_MAX_CTAS=128 (split fits) and 64 (unsplit) against NCCL; tools/overlap_probe.cu with the
# bound at 24, 32 and 64 CTAs beside no bound and NCCL. Raw outputs: $OUT/next39.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next39_out}; L=$OUT/next39; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun all_reduce_perf matmul_demo device_coll_test device_mp_test numeric_device_test \
  matmul_gpu_test device_one_rank_test device_errors_test device_p2p_group_test
nvcc -O2 -std=c++17 -arch=sm_90 -Iinclude tools/overlap_probe.cu -o $B/overlap_probe -L$B/lib -lbraid \
  -Xlinker -rpath=$PWD/$B/lib > "$L/overlap_build.log" 2>&1 || cat "$L/overlap_build.log"
gpu_tests device_p2p_group_test device_coll_test device_errors_test device_one_rank_test numeric_device_test \
  device_mp_test matmul_gpu_test
export PERF_TIMEOUT=60
S="-b 4M -e 64M -f 2 -c 1 -n 30 -w 5"
one all_reduce nccl ar_nccl -- $S
one all_reduce braid ar_default -- $S
one all_reduce braid ar_ctas128 NCCL_MAX_CTAS=128 -- $S
one all_reduce braid ar_ctas64 NCCL_MAX_CTAS=64 -- $S
one all_reduce braid ar_nch32 NCCL_MAX_NCHANNELS=32 -- $S
for s in "16777216 60" "67108864 16"; do
  overlap_run nccl $s; overlap_run braid $s
  for c in 64 32 24; do overlap_run braid $s NCCL_MAX_CTAS=$c; done
done
gpu_pack
