#!/usr/bin/env bash
# Device call (2 GPUs, ~3 min): where all-reduce at 4-32 MB loses time (issue 5 asks 1.5x NCCL; 8 MB runs
# 1.36x, 32 MB 1.10x). Knobs, two interleaved rounds each, NCCL once per round: the default; BRAID_PIPELINE_STEPS
# 2 / 3 / 4 (a channel's share in that many FIFO steps); NCCL_MAX_NCHANNELS 32 / 48; NCCL_NTHREADS 256 / 1024.
# Also matmul_gpu_test (its binaries were missing from call 2026-11-25b).
# Raw outputs: $OUT/next21.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next21_out}; L=$OUT/next21; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun matmul_demo all_reduce_perf matmul_gpu_test
gpu_tests matmul_gpu_test
export PERF_TIMEOUT=40
S="-b 4M -e 32M -f 2 -c 1 -n 40 -w 10"
for round in 1 2; do
  one all_reduce nccl ar_nccl_$round -- $S
  one all_reduce braid ar_def_$round -- $S
  for p in 2 3 4; do one all_reduce braid ar_pipe${p}_$round BRAID_PIPELINE_STEPS=$p -- $S; done
  for c in 32 48; do one all_reduce braid ar_ch${c}_$round NCCL_MAX_NCHANNELS=$c -- $S; done
  for t in 256 1024; do one all_reduce braid ar_nt${t}_$round NCCL_NTHREADS=$t -- $S; done
done
gpu_pack
