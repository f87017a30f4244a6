#!/usr/bin/env bash
# Device call (2 GPUs, ~2 min), ninth session: per-iteration GPU times of grouped send/recv (tools/iter_probe.cu,
# two processes) to tell a steady slow state from rare long stalls (time slicing, host gaps).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_iter_out}; L=$OUT/iter; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid
nvcc -O2 -std=c++17 -Iinclude tools/iter_probe.cu -o $B/iter_probe -L$B/lib -lbraid -Xlinker -rpath=$PWD/$B/lib || exit 1
pr() {  # LIB SIZE ITERS [ENV=V...]
  local lib=$1 size=$2 it=$3; shift 3
  local pre=""; [[ $lib == nccl ]] && pre="LD_PRELOAD=$NCCL_LIB"
  env $pre "$@" timeout 60 $B/iter_probe 0 $size $it > $L/r0.txt 2>&1 & env $pre "$@" timeout 60 $B/iter_probe 1 $size $it > $L/r1.txt 2>&1 &
  sleep 1.5; nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory --format=csv,noheader > $L/smi.txt 2>&1
  wait
  echo "-- $lib $size $* : $(grep -h "" $L/r0.txt $L/r1.txt | grep -v INFO | tr '\n' '|')"
}
pr braid 16777216 2000
pr braid 16777216 2000
pr braid 16777216 2000
echo "smi during last: $(tr '\n' ';' < $L/smi.txt)"
pr nccl 16777216 2000
pr braid 2097152 2000 BRAID_P2P_CHANNEL_BYTES=16384
pr braid 2097152 2000 BRAID_P2P_CHANNEL_BYTES=16384
pr braid 33554432 1000
pr braid 33554432 1000
pr nccl 33554432 1000
pr braid 16777216 2000 NCCL_NTHREADS=256
pr braid 16777216 2000 NCCL_NTHREADS=256
echo "total: $(( $(date +%s) - GPU_T0 )) s"
