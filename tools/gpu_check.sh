#!/usr/bin/env bash
# GPU data-path check for the device machine (issue 4): build on the device, run the gpu-label tests,
# then the perf tools for Braid and for NVIDIA NCCL (LD_PRELOAD) side by side.
# Usage: tools/gpu_check.sh [build|test|perf|all] ; results under $OUT (or ./gpu_check_out).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
what=${1:-all}
OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT"
B=build-gpu
NCCL_LIB=/usr/lib/x86_64-linux-gnu/libnccl.so.2
if [[ $what == build || $what == all || ! -d $B ]]; then
  gtest=()
  [[ -d .gtest ]] && gtest=(-DBRAID_GTEST_SOURCE=$PWD/.gtest)
  t0=$(date +%s)
  cmake -S . -B $B -G Ninja "${gtest[@]}" > "$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
  ninja -C $B -j32 -k 0 > "$OUT/build.log" 2>&1 || grep -E "error|FAILED" -A3 "$OUT/build.log" | head -60
  echo "build: $(( $(date +%s) - t0 )) s"
fi
if [[ $what == test || $what == all ]]; then
  for t in $B/tests/device_coll_test $B/tests/device_mp_test $B/bin/device_coll_test $B/bin/device_mp_test; do
    [[ -x $t ]] || continue
    echo "== $t"
    timeout 300 $t ${GTEST_FILTER:+--gtest_filter=$GTEST_FILTER} 2>&1 | tail -40
  done
fi
if [[ $what == perf || $what == all ]]; then
  for p in ${PERF_TOOLS:-all_reduce all_gather reduce_scatter broadcast}; do
    bin=$B/bin/${p}_perf
    [[ -x $bin ]] || { echo "no $bin"; continue; }
    for lib in braid nccl; do
      pre=()
      [[ $lib == nccl ]] && pre=(env LD_PRELOAD=$NCCL_LIB)
      echo "== $p $lib"
      timeout 200 "${pre[@]}" $bin -b ${PERF_MIN:-8} -e ${PERF_MAX:-2G} -f ${PERF_STEP:-4} -g 2 -c 1 -n ${PERF_ITERS:-20} -w 5 2>&1 \
        | tee "$OUT/${p}_${lib}.txt" | grep -v "^#" | awk 'NF>8' | tail -20
    done
  done
fi
