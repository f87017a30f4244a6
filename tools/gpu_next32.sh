#!/usr/bin/env bash
# Device call (2 GPUs, ~3 min), the fourteenth session's fifth: knobs around the split one-shot at 4-64 MB
# (FIFO steps 4 (default) / 6 / 7, 256 threads, 48 channels), and broadcast / reduce at 64-512 MB against NCCL
# with smaller FIFO steps (BRAID_PIPELINE_STEPS=16, NCCL_BUFFSIZE=2 MiB): the 0.99x at 256 MB. Two rounds each.
# Raw outputs: $OUT/next32.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next32_out}; L=$OUT/next32; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid all_reduce_perf broadcast_perf reduce_perf
export PERF_TIMEOUT=60
S="-b 4M -e 64M -f 2 -c 1 -n 30 -w 5"
for round in 1 2; do
  one all_reduce nccl ar_nccl_$round -- $S
  one all_reduce braid ar_def_$round -- $S
  one all_reduce braid ar_s6_$round BRAID_PIPELINE_STEPS=6 -- $S
  one all_reduce braid ar_s7_$round BRAID_PIPELINE_STEPS=7 -- $S
  one all_reduce braid ar_t256_$round NCCL_NTHREADS=256 -- $S
  one all_reduce braid ar_c48_$round NCCL_MAX_NCHANNELS=48 -- $S
done
B2="-b 64M -e 512M -f 2 -c 1 -n 20 -w 5"
for round in 1 2; do
  for c in broadcast reduce; do
    one $c nccl ${c}_nccl_$round -- $B2
    one $c braid ${c}_def_$round -- $B2
    one $c braid ${c}_s16_$round BRAID_PIPELINE_STEPS=16 -- $B2
    one $c braid ${c}_b2m_$round NCCL_BUFFSIZE=2097152 -- $B2
  done
done
gpu_pack
