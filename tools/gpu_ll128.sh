#!/usr/bin/env bash
# First device call for the LL128 branch (2 GPUs, ~8 min, streamed: do not pipe into tail). Runs every gpu
# test (LL128 forced over every case, graph replay with LL128, 100,000 small LL128 all-reduces) and the
# 2-process tests under NCCL_PROTO=LL128, proves from the TUNING log that LL128 kernels ran, then the grid
# tools/tuner_fit.py fits the P2pNvlink/LL128 row to (all-reduce/all-gather with LL128 forced at 1-64
# channels, 8 B-32 MB) and all-reduce 8 B-64 MB with LL128 forced against NCCL with NCCL_PROTO=LL128 and
# NCCL's defaults. Raw: $OUT/ll128.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_ll128_out}; L=$OUT/ll128; mkdir -p "$L/grid"
source tools/gpu_common.sh
gpu_build braid all_reduce_perf all_gather_perf device_coll_test device_mp_test
gpu_tests device_coll_test device_mp_test
NCCL_PROTO=LL128 timeout 60 $B/bin/device_mp_test > "$L/mp_ll128.txt" 2>&1; echo "device_mp_test LL128 rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$L/mp_ll128.txt" | tr '\n' ' ')"
export PERF_TIMEOUT=30
one all_reduce braid tuning_log NCCL_PROTO=LL128 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING,INIT -- -b 1M -e 1M -c 1 -n 2 -w 1
echo "TUNING lines naming LL128: $(grep -c 'TUNING.*LL128\|/LL128' "$L/tuning_log.txt")"
grep -m4 -E 'NVLink|NVML|/LL128|WARN' "$L/tuning_log.txt"
echo "== vs NCCL, all-reduce 8 B-64 MB"
one all_reduce braid ar_ll128 NCCL_PROTO=LL128 -- -b 8 -e 64M -f 4 -c 1 -n 30 -w 5
one all_reduce braid ar_default -- -b 8 -e 64M -f 4 -c 1 -n 30 -w 5
one all_reduce nccl ar_nccl_ll128 NCCL_PROTO=LL128 -- -b 8 -e 64M -f 4 -c 1 -n 30 -w 5
one all_reduce nccl ar_nccl -- -b 8 -e 64M -f 4 -c 1 -n 30 -w 5
echo "== grid (LL128 forced x channels, 8 B-32 MB)"
for p in all_reduce all_gather; do
  for c in 1 8 16 32 64; do
    one $p braid grid/${p}_LL128_$c NCCL_PROTO=LL128 NCCL_MIN_NCHANNELS=$c NCCL_MAX_NCHANNELS=$c -- -b 8 -e 32M -f 4 -c 1 -n 30 -w 5
  done
done
gpu_pack
