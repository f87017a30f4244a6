#!/usr/bin/env bash
# One short device call (2 GPUs, ~4 min): the SHM and socket paths with their defaults against NCCL (socket
# rings on 4 channels with 2 proxy threads; LL through SHM up to ~256 KB), and the gpu tests that sweep them.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=${OUT:-$PWD/gpu_paths2_out}; L=$OUT/p2; mkdir -p "$L"
B=build-gpu; NCCL_LIB=/usr/lib/x86_64-linux-gnu/libnccl.so.2
t0=$(date +%s)
cmake -S . -B $B -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > "$L/cmake.log" 2>&1 || { tail -20 "$L/cmake.log"; exit 1; }
ninja -C $B -j32 braid all_reduce_perf all_gather_perf device_coll_test device_mp_test > "$L/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$L/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
timeout 60 $B/bin/device_coll_test --gtest_filter='*Shm*:*Socket*' > "$L/coll.txt" 2>&1; echo "device_coll_test rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' "$L/coll.txt" | tr '\n' ' ')"
timeout 60 $B/bin/device_mp_test --gtest_filter='*Shm*:*Socket*' > "$L/mp.txt" 2>&1; echo "device_mp_test rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' "$L/mp.txt" | tr '\n' ' ')"
one() {
  local name=$1 lib=$2 file=$3 tmo=$4; shift 4
  local envs=(-x NCCL_NVLS_ENABLE=0)
  while [[ $# -gt 0 && $1 != -- ]]; do envs+=(-x "$1"); shift; done; shift
  [[ $lib == nccl ]] && envs+=(-x LD_PRELOAD=$NCCL_LIB)
  local s=$(date +%s)
  timeout $tmo mpirun --allow-run-as-root -np 2 "${envs[@]}" $B/bin/${name}_perf "$@" > "$L/$file.txt" 2>&1
  echo "$file rc=$? $(( $(date +%s) - s ))s: $(grep -v '^#' "$L/$file.txt" | awk 'NF>8 && $1 ~ /^[0-9]+$/ {printf "%s:%s(%s,%s) ", $1, $6, $8, $9}')"
}
one all_reduce braid sock_braid 60 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 -- -b 64M -e 1G -f 4 -c 1 -n 3 -w 1
one all_reduce nccl sock_nccl 60 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 -- -b 64M -e 1G -f 4 -c 1 -n 3 -w 1
for p in all_reduce all_gather; do
  one $p braid shm_${p}_braid 30 NCCL_P2P_DISABLE=1 -- -b 8 -e 1G -f 4 -c 1 -n 10 -w 3
  one $p nccl shm_${p}_nccl 30 NCCL_P2P_DISABLE=1 -- -b 8 -e 1G -f 4 -c 1 -n 10 -w 3
done
tar -C "$OUT" -czf "$OUT/p2.tgz" p2 && rm -rf "$L"
echo "total: $(( $(date +%s) - t0 )) s"
