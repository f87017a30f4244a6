#!/usr/bin/env bash
# One device call: the matmul demo on 2 GPUs (both modes, checked) and an all-reduce channel/buffer sweep
# at large sizes (Braid), to pick GPU defaults. Results under $OUT.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=${OUT:-$PWD/gpu_final_out}; mkdir -p "$OUT"
B=build-gpu
t0=$(date +%s)
cmake -S . -B $B -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > "$OUT/cmake.log" 2>&1 || { tail -20 "$OUT/cmake.log"; exit 1; }
ninja -C $B -j32 braid all_reduce_perf matmul_demo > "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$OUT/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
for mode in rows inner; do
  for t in float bf16; do
    echo "== matmul 2 GPUs mode=$mode type=$t"
    timeout 90 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0 $B/bin/matmul_demo --device gpu --mode $mode --type $t \
      > "$OUT/matmul_${mode}_${t}.txt" 2>&1; echo "rc=$?"; tail -12 "$OUT/matmul_${mode}_${t}.txt"
  done
done
for ch in 16 24 32; do for bs in 4194304 16777216; do
  echo "== all_reduce braid channels=$ch buffsize=$bs"
  timeout 60 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0 -x NCCL_MIN_NCHANNELS=$ch -x NCCL_MAX_NCHANNELS=$ch \
    -x NCCL_BUFFSIZE=$bs $B/bin/all_reduce_perf -b 16M -e 1G -f 8 -c 1 -n 10 -w 3 > "$OUT/ar_${ch}_${bs}.txt" 2>&1
  grep -v "^#" "$OUT/ar_${ch}_${bs}.txt" | awk 'NF>8' | tail -3
done; done
for nt in 256 1024; do
  echo "== all_reduce braid channels=32 nthreads=$nt"
  timeout 60 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0 -x NCCL_MIN_NCHANNELS=32 -x NCCL_MAX_NCHANNELS=32 \
    -x NCCL_NTHREADS=$nt $B/bin/all_reduce_perf -b 16M -e 1G -f 8 -c 1 -n 10 -w 3 > "$OUT/ar_32_nt$nt.txt" 2>&1
  grep -v "^#" "$OUT/ar_32_nt$nt.txt" | awk 'NF>8' | tail -3
done
