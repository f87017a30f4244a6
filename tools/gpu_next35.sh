#!/usr/bin/env bash
# Device call (2 GPUs, ~2 min): the split one-shot's in-place guard, release/acquire operations (HEAD, in
# base.tgz) against a relaxed store after devPostSend's fence and a relaxed poll with one fence.acq_rel.gpu
# after it (the working tree): the former ran 8 MB in place ~1.3 us slower than the first (volatile) form in
# docs/gpu/2026-11-26d. all-reduce 4-64 MB, NCCL / base / new, three rounds (in-place column); the new build's
# OneShotForced test. Raw outputs: $OUT/next35.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next35_out}; L=$OUT/next35; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build_base braid all_reduce_perf
gpu_build braid all_reduce_perf device_coll_test
wait
export PERF_TIMEOUT=60
S="-b 4M -e 64M -f 2 -c 1 -n 30 -w 5"
for round in 1 2 3; do abc all_reduce ar $round -- $S; done
for f in "$L"/ar_*.txt; do
  echo "$(basename $f .txt) in-place: $(grep -v '^#' "$f" | awk 'NF>12 && $1 ~ /^[0-9]+$/ {printf "%s:%s(%s) ", $1, $10, $13}')"
done
timeout 120 $B/bin/device_coll_test --gtest_filter='*OneShotForced*' > "$L/oneshot_test.txt" 2>&1
echo "OneShotForced rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$L/oneshot_test.txt" | tr '\n' ' ')"
gpu_pack
