#!/usr/bin/env bash
# Device call (2 GPUs, ~3 min): BRAID_PIPELINE_STEPS at large sizes. In 2026-11-25c, 2-4 steps per channel
# share took all-reduce 32 MB to 114-118 us from 124-126 (two rounds), tied at 16 MB and lost at 4-8 MB.
# Here: all-reduce, reduce-scatter, all-gather, broadcast, reduce at 16-512 MB, default / 2 / 3 steps, NCCL once,
# two interleaved rounds; and the tuner's log of one 32 MB all-reduce (what it picked).
# Raw outputs: $OUT/next22.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next22_out}; L=$OUT/next22; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid all_reduce_perf reduce_scatter_perf all_gather_perf broadcast_perf reduce_perf
export PERF_TIMEOUT=60
one all_reduce braid tuning_log NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING -- -b 32M -e 32M -c 1 -n 2 -w 1
grep -i "tun" "$L/tuning_log.txt" | head -8
S="-b 16M -e 512M -f 4 -c 1 -n 20 -w 5"
for round in 1 2; do
  for c in all_reduce reduce_scatter all_gather broadcast reduce; do
    one $c nccl ${c}_nccl_$round -- $S
    one $c braid ${c}_def_$round -- $S
    one $c braid ${c}_pipe2_$round BRAID_PIPELINE_STEPS=2 -- $S
    one $c braid ${c}_pipe3_$round BRAID_PIPELINE_STEPS=3 -- $S
  done
done
gpu_pack
