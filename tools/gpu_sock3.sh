#!/usr/bin/env bash
# Short device call (2 GPUs, ~3 min): the socket path with the proxy polling 2 ms after activity (GPU comms),
# against NCCL, and SHM all-reduce 8 B-1 MB (LL channel cost) against NCCL.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=${OUT:-$PWD/gpu_sock3_out}; L=$OUT/s3; mkdir -p "$L"
B=build-gpu; NCCL_LIB=/usr/lib/x86_64-linux-gnu/libnccl.so.2
t0=$(date +%s)
cmake -S . -B $B -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > "$L/cmake.log" 2>&1 || { tail -20 "$L/cmake.log"; exit 1; }
ninja -C $B -j32 braid all_reduce_perf > "$L/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$L/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
one() {
  local name=$1 lib=$2 file=$3 tmo=$4; shift 4
  local envs=(-x NCCL_NVLS_ENABLE=0)
  while [[ $# -gt 0 && $1 != -- ]]; do envs+=(-x "$1"); shift; done; shift
  [[ $lib == nccl ]] && envs+=(-x LD_PRELOAD=$NCCL_LIB)
  local s=$(date +%s)
  timeout $tmo mpirun --allow-run-as-root -np 2 "${envs[@]}" $B/bin/${name}_perf "$@" > "$L/$file.txt" 2>&1
  echo "$file rc=$? $(( $(date +%s) - s ))s: $(grep -v '^#' "$L/$file.txt" | awk 'NF>8 && $1 ~ /^[0-9]+$/ {printf "%s:%s(%s,%s) ", $1, $6, $8, $9}')"
}
one all_reduce braid sock_braid 50 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 -- -b 64M -e 1G -f 4 -c 1 -n 3 -w 1
one all_reduce nccl sock_nccl 50 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 -- -b 64M -e 1G -f 4 -c 1 -n 3 -w 1
one all_reduce braid shm_braid 25 NCCL_P2P_DISABLE=1 -- -b 8 -e 1M -f 4 -c 1 -n 50 -w 5
one all_reduce nccl shm_nccl 25 NCCL_P2P_DISABLE=1 -- -b 8 -e 1M -f 4 -c 1 -n 50 -w 5
tar -C "$OUT" -czf "$OUT/s3.tgz" s3 && rm -rf "$L"
echo "total: $(( $(date +%s) - t0 )) s"
