#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min), the twelfth session's fourth: the P2pNvlink/LL128 row refitted to
# docs/gpu/2026-11-24c (one-shot LL128 at 16/32/64 channels, ring LL128 at 64, 2-rank all-reduce 8 KB-8 MB)
# makes the tuner pick LL128 for every ring collective up to 0.5-2 MB and one-shot LL128 for all-reduce up to
# 512 KB. Before keeping it: the five collectives 8 B-32 MB with the new row, with the old row (a variant
# tree) and NCCL; every gpu test under the new defaults; the new tuner's choices (NCCL_DEBUG_SUBSYS=TUNING).
# Raw outputs: $OUT/next16.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next16_out}; L=$OUT/next16; mkdir -p "$L"
source tools/gpu_common.sh
P="all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf"
gpu_build braid braidrun $P device_coll_test device_mp_test matmul_gpu_test numeric_device_test
VAR=/tmp/braid-oldrow
gpu_build_variant $VAR src/collectives/tuner_model.def \
  "$(grep -m1 '^BRAID_TUNER_ROW(P2pNvlink, LL128' src/collectives/tuner_model.def)" \
  "BRAID_TUNER_ROW(P2pNvlink, LL128, 6.4, 1.0, 0.0, 0.0275, 7.15, 567.0, 64, 122880, true)" braid braidrun $P
gpu_tests numeric_device_test device_coll_test device_mp_test matmul_gpu_test
wait
export PERF_TIMEOUT=60
A="-b 8 -e 32M -f 4 -c 1 -n 30 -w 5"
for c in all_reduce all_gather reduce_scatter broadcast reduce; do
  one $c nccl ${c}_nccl -- $A
  one $c braid ${c}_new -- $A; B=$VAR/build-var one $c braid ${c}_old -- $A
  one $c braid ${c}_new2 -- $A; B=$VAR/build-var one $c braid ${c}_old2 -- $A
done
one all_reduce braid ar_tuning_log NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING -- -b 8 -e 32M -f 4 -c 1 -n 5 -w 1
grep -h "TUNING\|tuning" $L/ar_tuning_log.txt | sort | uniq | head -40 > $L/ar_tuning_picks.txt
gpu_pack
