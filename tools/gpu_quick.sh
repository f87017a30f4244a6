#!/usr/bin/env bash
# One device call: build what the GPU checks need, run the two-process GPU tests, then all-reduce /
# all-gather / reduce-scatter perf under mpirun for Braid and NVIDIA NCCL (LD_PRELOAD), same flags, -c 1.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=${OUT:-$PWD/gpu_quick_out}; mkdir -p "$OUT"
B=build-gpu; NCCL_LIB=/usr/lib/x86_64-linux-gnu/libnccl.so.2
t0=$(date +%s)
cmake -S . -B $B -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > "$OUT/cmake.log" 2>&1 || { tail -20 "$OUT/cmake.log"; exit 1; }
ninja -C $B -j32 braid device_mp_test device_coll_test all_reduce_perf all_gather_perf reduce_scatter_perf \
  > "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$OUT/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
echo "== device_mp_test (2 processes x 1 GPU)"
timeout ${MP_TIMEOUT:-150} $B/bin/device_mp_test 2>&1 | tail -25
run() {  # name lib flags...
  local name=$1 lib=$2; shift 2
  local pre=(); [[ $lib == nccl ]] && pre=(-x LD_PRELOAD=$NCCL_LIB)
  timeout 120 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0 "${pre[@]}" $B/bin/${name}_perf "$@" \
    > "$OUT/${name}_${lib}.txt" 2>&1
  echo "== $name $lib rc=$?"; grep -v "^#" "$OUT/${name}_${lib}.txt" | awk 'NF>8' | tail -14
}
for lib in braid nccl; do run all_reduce $lib -b 8 -e 1G -f 8 -c 1 -n 10 -w 3; done
for p in all_gather reduce_scatter; do for lib in braid nccl; do run $p $lib -b 1M -e 1G -f 32 -c 1 -n 10 -w 3; done; done
