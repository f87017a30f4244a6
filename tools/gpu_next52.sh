#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min): the split one-shot's sending CTA running ahead of its poster
# (tools/var_runahead.patch: BRAID_RUNAHEAD=1, one barrier id per step, one credit check per launch) and its
# step count (BRAID_SPLIT_STEPS, default 4), 8-32 MB, two rounds, against main and NCCL.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next52_out}; L=$OUT/next52; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build_patch ra tools/var_runahead.patch all_reduce_perf
gpu_build all_reduce_perf
wait
export PERF_TIMEOUT=90
S="-b 8M -e 32M -f 2 -c 1 -n 40 -w 10"
V=/tmp/braid-ra/build-var
for r in 1 2; do
  one all_reduce nccl ar_nccl_$r -- $S
  one all_reduce braid ar_main_$r -- $S
  B=$V one all_reduce braid ar_s4_$r -- $S
  B=$V one all_reduce braid ar_s6_$r BRAID_SPLIT_STEPS=6 -- $S
  for st in 4 5 6 7; do B=$V one all_reduce braid ar_ra_s${st}_$r BRAID_RUNAHEAD=1 BRAID_SPLIT_STEPS=$st -- $S; done
done
gpu_pack
