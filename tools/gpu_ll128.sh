#!/usr/bin/env bash
# First device call for the LL128 branch (2 GPUs, ~8 min, streamed: do not pipe into tail). Runs every gpu
# test (LL128 forced over every case, graph replay with LL128, 100,000 small LL128 all-reduces) and the
# 2-process tests under NCCL_PROTO=LL128, proves from the TUNING log that LL128 kernels ran, then the grid
# tools/tuner_fit.py fits the P2pNvlink/LL128 row to (all-reduce/all-gather with LL128 forced at 1-64
# channels, 8 B-32 MB) and all-reduce 8 B-64 MB with LL128 forced against NCCL with NCCL_PROTO=LL128 and
# NCCL's defaults. Raw: $OUT/ll128.tgz.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=${OUT:-$PWD/gpu_ll128_out}; L=$OUT/ll128; mkdir -p "$L/grid"
B=build-gpu; NCCL_LIB=/usr/lib/x86_64-linux-gnu/libnccl.so.2
t0=$(date +%s)
cmake -S . -B $B -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > "$L/cmake.log" 2>&1 || { tail -20 "$L/cmake.log"; exit 1; }
ninja -C $B -j32 braid all_reduce_perf all_gather_perf device_coll_test device_mp_test > "$L/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$L/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
for t in device_coll_test device_mp_test; do
  s=$(date +%s); timeout 200 $B/bin/$t > "$L/$t.txt" 2>&1; rc=$?
  echo "== $t rc=$rc $(( $(date +%s) - s )) s: $(grep -E '^\[  (PASSED|FAILED) |^\[       OK|^\[  FAILED' "$L/$t.txt" | tr '\n' ' ')"
  grep -E 'Failure|error' "$L/$t.txt" | head -8
done
NCCL_PROTO=LL128 timeout 60 $B/bin/device_mp_test > "$L/mp_ll128.txt" 2>&1; echo "device_mp_test LL128 rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$L/mp_ll128.txt" | tr '\n' ' ')"
one() {
  local name=$1 lib=$2 file=$3; shift 3
  local envs=(-x NCCL_NVLS_ENABLE=0)
  while [[ $# -gt 0 && $1 != -- ]]; do envs+=(-x "$1"); shift; done; shift
  [[ $lib == nccl ]] && envs+=(-x LD_PRELOAD=$NCCL_LIB)
  local s=$(date +%s)
  timeout ${PERF_TIMEOUT:-30} mpirun --allow-run-as-root -np 2 "${envs[@]}" $B/bin/${name}_perf "$@" > "$L/$file.txt" 2>&1
  echo "$file rc=$? $(( $(date +%s) - s ))s: $(grep -v '^#' "$L/$file.txt" | awk 'NF>8 && $1 ~ /^[0-9]+$/ {printf "%s:%s(%s,%s) ", $1, $6, $8, $9}')"
}
one all_reduce braid tuning_log NCCL_PROTO=LL128 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING -- -b 1M -e 1M -c 1 -n 2 -w 1
echo "TUNING lines naming LL128: $(grep -c 'LL128' "$L/tuning_log.txt")"; grep -m3 -E 'LL128|WARN' "$L/tuning_log.txt"
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
tar -C "$OUT" -czf "$OUT/ll128.tgz" ll128 && rm -rf "$L"
echo "total: $(( $(date +%s) - t0 )) s"
