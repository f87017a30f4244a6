#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min): the 2-rank one-shot all-reduce split into sending and receiving CTAs on LL128
# lines (tools/var_ll128split.patch, BRAID_LL128_SPLIT=1, out of place only) against the Simple split (main)
# and NCCL, 1-32 MB, two rounds; LL128 unsplit for reference; channel counts 32/48/64 at 8 MB.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next51_out}; L=$OUT/next51; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build_patch ls tools/var_ll128split.patch all_reduce_perf
gpu_build all_reduce_perf
wait
export PERF_TIMEOUT=90
S="-b 1M -e 32M -f 2 -c 1 -n 40 -w 10"
V=/tmp/braid-ls/build-var; MAIN=$B
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING B=$V one all_reduce braid tuning NCCL_PROTO=LL128 BRAID_LL128_SPLIT=1 NCCL_DEBUG NCCL_DEBUG_SUBSYS -- -b 8M -e 8M -c 1 -n 2 -w 1
grep -m2 "AllReduce 8388608" "$L/tuning.txt"
for r in 1 2; do
  one all_reduce nccl ar_nccl_$r -- $S
  one all_reduce braid ar_main_$r -- $S
  B=$V one all_reduce braid ar_ll128_$r NCCL_PROTO=LL128 -- $S
  B=$V one all_reduce braid ar_ll128split_$r NCCL_PROTO=LL128 BRAID_LL128_SPLIT=1 -- $S
done
for c in 32 48 64; do
  B=$V one all_reduce braid ar8_ll128split_ch$c NCCL_PROTO=LL128 BRAID_LL128_SPLIT=1 NCCL_MIN_NCHANNELS=$c NCCL_MAX_NCHANNELS=$c -- -b 4M -e 16M -f 2 -c 1 -n 40 -w 10
done
gpu_pack
