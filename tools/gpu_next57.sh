#!/usr/bin/env bash
# Device call (2 GPUs, ~30 s, nothing built there): when does the LL128-tail variant (build-lt) fault? One
# launch each way without the sanitizer, then 10 + 20 launches under compute-sanitizer.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next57_out}; L=$OUT/next57; mkdir -p "$L"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$PWD/build-lt/lib BRAID_LL128_TAIL=1
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
M="mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0 -x LD_LIBRARY_PATH -x BRAID_LL128_TAIL"
for nw in "1 0" "2 0" "5 0"; do set -- $nw
  timeout 20 $M build-lt/bin/all_reduce_perf -b 8M -e 8M -c 1 -n $1 -w $2 > "$L/n$1.txt" 2>&1
  echo "n=$1 w=$2 rc=$?: $(grep -E '^ +8388608' "$L/n$1.txt")"
done
timeout 60 $M $CS --print-limit 4 build-lt/bin/all_reduce_perf -b 8M -e 8M -c 1 -n 20 -w 10 > "$L/sanitizer.txt" 2>&1
echo "sanitizer rc=$?"; grep -E "Invalid|at 0x|by thread|Address|out of bounds|ERROR SUMMARY|^ +8388608" "$L/sanitizer.txt" | head -24
tar -C "$OUT" -czf "$OUT/next57.tgz" next57 && rm -rf "$L"
