#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min): two changes to the Simple receive path, alone and together, against main and
# NCCL: tools/var_unroll5.patch (reduce_copy: guarded rounds, 5 packs in flight per thread for two sources, so
# a 32 KiB step of 480 workers is one memory round instead of 1920 + 128 packs), tools/var_sizelate.patch (the
# size word is loaded with the tail but checked after the step's work). All-reduce 256 KB-32 MB, reduce-
# scatter and all-gather 1-64 MB, two rounds.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next53_out}; L=$OUT/next53; mkdir -p "$L"
source tools/gpu_common.sh
T="all_reduce_perf reduce_scatter_perf all_gather_perf"
gpu_build_patch u5 tools/var_unroll5.patch $T
gpu_build_patch sl tools/var_sizelate.patch $T
cat tools/var_unroll5.patch tools/var_sizelate.patch > /tmp/both.patch
gpu_build_patch both /tmp/both.patch $T
gpu_build $T
wait
export PERF_TIMEOUT=90
S="-b 256K -e 32M -f 2 -c 1 -n 40 -w 10"
R="-b 1M -e 64M -f 4 -c 1 -n 30 -w 5"
for r in 1 2; do
  one all_reduce nccl ar_nccl_$r -- $S
  one all_reduce braid ar_main_$r -- $S
  for v in u5 sl both; do B=/tmp/braid-$v/build-var one all_reduce braid ar_${v}_$r -- $S; done
  one reduce_scatter braid rs_main_$r -- $R
  B=/tmp/braid-both/build-var one reduce_scatter braid rs_both_$r -- $R
  one all_gather braid ag_main_$r -- $R
  B=/tmp/braid-both/build-var one all_gather braid ag_both_$r -- $R
done
gpu_pack
