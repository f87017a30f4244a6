#!/usr/bin/env bash
# Device call (2 GPUs, ~1.5 min, nothing built there): find the illegal access of tools/var_ll128tail.patch.
# Expects build-lt (carried): that variant built here with -DBRAID_KERNELS=minimal -DCMAKE_CUDA_FLAGS=-lineinfo.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next55_out}; L=$OUT/next55; mkdir -p "$L"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$PWD/build-lt/lib
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 30 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0 -x LD_LIBRARY_PATH build-lt/bin/all_reduce_perf \
  -b 8M -e 8M -c 1 -n 5 -w 1 > "$L/plain.txt" 2>&1; echo "plain rc=$?"; grep -E "^ +8388608" "$L/plain.txt"
timeout 150 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0 -x LD_LIBRARY_PATH -x BRAID_LL128_TAIL=1 \
  $CS --print-limit 4 build-lt/bin/all_reduce_perf -b 8M -e 8M -c 1 -n 1 -w 0 > "$L/sanitizer.txt" 2>&1
echo "sanitizer rc=$?"; grep -E "Invalid|at 0x|by thread|Address|is out of bounds|coll_kernel|prims_" "$L/sanitizer.txt" | head -30
tar -C "$OUT" -czf "$OUT/next55.tgz" next55 && rm -rf "$L"
