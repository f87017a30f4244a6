#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min), eleventh session: how many channels a p2p transfer should take.
# Call 2026-11-23a: all-to-all 8 MB (4 MB each way, 64 channels of 64 KiB) took 33-35 us at the default
# BRAID_P2P_CHANNEL_BYTES=65536 and 23.7 us at 131072 (NCCL 32.9); send/recv 4 MB (also 64 channels) flips
# between ~23 and ~36 us across runs. Sweeps the bytes per channel (64/128/256 KiB) and a 32-channel cap
# (NCCL_MAX_NCHANNELS=32) on send/recv, all-to-all, gather and scatter at 128 KB-64 MB, two runs each, NCCL once.
# Raw outputs: $OUT/cbsweep.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_cb_out}; L=$OUT/cbsweep; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun sendrecv_perf alltoall_perf gather_perf scatter_perf
export PERF_TIMEOUT=40
A="-b 128K -e 64M -f 2 -c 1 -n 30 -w 5"
for c in sendrecv alltoall gather scatter; do
  one $c nccl ${c}_nccl -- $A
  for r in 1 2; do
    one $c braid ${c}_64k_$r -- $A
    one $c braid ${c}_128k_$r BRAID_P2P_CHANNEL_BYTES=131072 -- $A
    one $c braid ${c}_256k_$r BRAID_P2P_CHANNEL_BYTES=262144 -- $A
    one $c braid ${c}_max32_$r NCCL_MAX_NCHANNELS=32 -- $A
  done
done
gpu_pack
