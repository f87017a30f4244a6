#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min): the split one-shot's last chunk on LL128 lines (tools/var_ll128tail.patch,
# BRAID_LL128_TAIL=1, out of place), against main and NCCL, 8-32 MB, three rounds.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next54_out}; L=$OUT/next54; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build_patch lt tools/var_ll128tail.patch all_reduce_perf
gpu_build all_reduce_perf
wait
export PERF_TIMEOUT=90
S="-b 8M -e 32M -f 2 -c 1 -n 40 -w 10"
for r in 1 2 3; do
  one all_reduce nccl ar_nccl_$r -- $S
  one all_reduce braid ar_main_$r -- $S
  B=/tmp/braid-lt/build-var one all_reduce braid ar_lt_$r BRAID_LL128_TAIL=1 -- $S
done
gpu_pack
