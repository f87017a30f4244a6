#!/usr/bin/env bash
# One device call for the LL protocol (branch wip/ll): build, the LL gpu tests (NCCL_PROTO=LL sweep, 100,000
# small all-reduces from step 0 and from just before the 32-bit flag wrap, which also runs LL cleaning), the
# one-process-per-GPU sweep under NCCL_PROTO=LL, then small-size all-reduce / all-gather / broadcast perf with
# NCCL_PROTO=LL against Simple and NVIDIA NCCL (default tuning and NCCL_PROTO=LL), -c 1. Bounded so the whole
# call stays under the device tool's 10 minutes even when LL hangs; logs go to $OUT.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=${OUT:-$PWD/gpu_ll_out}; L=$OUT/logs; mkdir -p "$L"  # one tarball comes back (the device tool returns <= 8 files)
B=build-gpu; NCCL_LIB=/usr/lib/x86_64-linux-gnu/libnccl.so.2
cmake -S . -B $B -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > "$L/cmake.log" 2>&1 || { tail -20 "$L/cmake.log"; exit 1; }
ninja -C $B -j32 braid device_coll_test device_mp_test all_reduce_perf all_gather_perf broadcast_perf \
  > "$L/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$L/build.log" | head -40; exit 1; }
export BRAID_CASE_TIMEOUT=10
timeout 180 stdbuf -oL $B/bin/device_coll_test --gtest_filter='*Ll*' > "$L/ll_tests.txt" 2>&1
echo "LL tests rc=$?"; grep -E "^\[  (PASSED|FAILED) |still running|Failure|cases,|element" "$L/ll_tests.txt" | head -12
NCCL_PROTO=LL timeout 90 $B/bin/device_mp_test > "$L/ll_mp.txt" 2>&1
echo "device_mp_test under NCCL_PROTO=LL rc=$?"; grep -E "^\[  (PASSED|FAILED) |Failure" "$L/ll_mp.txt" | head -6
for p in all_reduce all_gather broadcast; do
  for v in "braid NCCL_PROTO=LL" "braid NCCL_PROTO=Simple" "nccl X=1" "nccl NCCL_PROTO=LL"; do
    set -- $v; pre=(); [[ $1 == nccl ]] && pre=(-x LD_PRELOAD=$NCCL_LIB)
    echo "== $p $v"
    timeout ${PERF_TIMEOUT:-25} mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0 -x $2 "${pre[@]}" $B/bin/${p}_perf \
      -b 8 -e 4M -f 4 -c 1 -n 200 -w 20 > "$L/${p}_$1_${2%%=*}_${2##*=}.txt" 2>&1
    grep -v "^#" "$L/${p}_$1_${2%%=*}_${2##*=}.txt" | awk 'NF>8 {print $1, $6, $8, $9}' | tr '\n' ';'
    echo
  done
done
tar -C "$OUT" -czf "$OUT/ll_logs.tgz" logs && rm -rf "$L"
