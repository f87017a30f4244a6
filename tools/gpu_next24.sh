#!/usr/bin/env bash
# Device call (2 GPUs, ~2 min): send/recv and all-to-all at 32-128 KB lose to NCCL (9.7-10.6 us against
# 8.2-8.8 in 2026-11-25e): one channel per 64 KiB (BRAID_P2P_CHANNEL_BYTES) puts a 32 KB transfer on one CTA
# pair, one SIMPLE step. Smaller units (32 / 16 / 8 KiB), and 16 KiB with LL only up to 4 KiB shares
# (NCCL_P2P_LL_THRESHOLD=4096), at 8 KB-1 MB, NCCL once per round, two interleaved rounds.
# Raw outputs: $OUT/next24.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next24_out}; L=$OUT/next24; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid sendrecv_perf alltoall_perf
export PERF_TIMEOUT=40
S="-b 8K -e 1M -f 2 -c 1 -n 50 -w 10"
for round in 1 2; do
  for c in sendrecv alltoall; do
    one $c nccl ${c}_nccl_$round -- $S
    one $c braid ${c}_cb64_$round -- $S
    one $c braid ${c}_cb32_$round BRAID_P2P_CHANNEL_BYTES=32768 -- $S
    one $c braid ${c}_cb16_$round BRAID_P2P_CHANNEL_BYTES=16384 -- $S
    one $c braid ${c}_cb16s_$round BRAID_P2P_CHANNEL_BYTES=16384 NCCL_P2P_LL_THRESHOLD=4096 -- $S
    one $c braid ${c}_cb8_$round BRAID_P2P_CHANNEL_BYTES=8192 -- $S
  done
done
gpu_pack
