#!/usr/bin/env bash
# Second LL128 device call (2 GPUs, ~4 min, streamed): every gpu test (the LL and LL128 primitives now load
# the own input before awaiting the received data), then all-reduce / all-gather with each protocol forced
# against NCCL's default, and the 1-64 channel grid tools/tuner_fit.py fits the LL and LL128 rows to.
# Raw: $OUT/ll128b.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_ll128b_out}; L=$OUT/ll128b; mkdir -p "$L/grid"
source tools/gpu_common.sh
gpu_build braid all_reduce_perf all_gather_perf device_coll_test device_mp_test
gpu_tests device_coll_test device_mp_test
NCCL_PROTO=LL128 timeout 60 $B/bin/device_mp_test > "$L/mp_ll128.txt" 2>&1; echo "device_mp_test LL128 rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$L/mp_ll128.txt" | tr '\n' ' ')"
export PERF_TIMEOUT=30
F="-b 8 -e 64M -f 4 -c 1 -n 30 -w 5"
for p in all_reduce all_gather; do
  echo "== $p"
  one $p nccl ${p}_nccl -- $F
  one $p braid ${p}_default -- $F
  one $p braid ${p}_LL128 NCCL_PROTO=LL128 -- $F
  one $p braid ${p}_LL NCCL_PROTO=LL -- $F
  one $p nccl ${p}_nccl2 -- $F
done
echo "== grid"
for p in all_reduce all_gather; do
  for c in 1 16 64; do
    one $p braid grid/${p}_LL128_$c NCCL_PROTO=LL128 NCCL_MIN_NCHANNELS=$c NCCL_MAX_NCHANNELS=$c -- -b 8 -e 32M -f 4 -c 1 -n 30 -w 5
    one $p braid grid/${p}_LL_$c NCCL_PROTO=LL NCCL_MIN_NCHANNELS=$c NCCL_MAX_NCHANNELS=$c -- -b 8 -e 32M -f 4 -c 1 -n 30 -w 5
  done
done
gpu_pack
