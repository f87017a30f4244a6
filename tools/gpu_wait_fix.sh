#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min), ninth session: the waits' host reads gated by time (prims_simple.h
# DevWaitClock) and the integer reductions inlined (reduce_copy.h). Runs every gpu test, the per-iteration
# send/recv probe that showed the 55/295 us alternation, then send/recv, all-to-all and all-reduce (float,
# int8, int64) against NCCL. Raw outputs: $OUT/fix.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_fix_out}; L=$OUT/fix; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun matmul_demo all_reduce_perf sendrecv_perf alltoall_perf \
  device_coll_test device_mp_test matmul_gpu_test numeric_device_test
nvcc -O2 -std=c++17 -Iinclude tools/iter_probe.cu -o $B/iter_probe -L$B/lib -lbraid -Xlinker -rpath=$PWD/$B/lib || exit 1
gpu_tests numeric_device_test device_coll_test device_mp_test matmul_gpu_test
pr() {  # LIB SIZE ITERS [ENV=V...]
  local lib=$1 size=$2 it=$3; shift 3
  local pre=""; [[ $lib == nccl ]] && pre="LD_PRELOAD=$NCCL_LIB"
  env $pre "$@" timeout 60 $B/iter_probe 0 $size $it > $L/r0.txt 2>&1 & env $pre "$@" timeout 60 $B/iter_probe 1 $size $it > $L/r1.txt 2>&1 &
  wait
  echo "-- $lib $size $* : $(grep -h "" $L/r0.txt $L/r1.txt | grep -v INFO | cut -c1-200 | tr '\n' '|')"
}
for i in 1 2 3 4; do pr braid 16777216 1000; done
for i in 1 2; do pr braid 2097152 1000 BRAID_P2P_CHANNEL_BYTES=16384; done
for i in 1 2; do pr braid 33554432 1000; done
pr nccl 16777216 1000
export PERF_TIMEOUT=40
P="-b 8 -e 128M -f 8 -c 1 -n 50 -w 10"
for round in 1 2; do
  one sendrecv nccl sr_nccl_$round -- $P
  one sendrecv braid sr_braid_$round -- $P
done
one sendrecv braid sr_braid_sweep2 -- -b 1M -e 128M -f 2 -c 1 -n 50 -w 10
one sendrecv nccl sr_nccl_sweep2 -- -b 1M -e 128M -f 2 -c 1 -n 50 -w 10
one alltoall nccl a2a_nccl -- $P
one alltoall braid a2a_braid -- $P
A="-b 8 -e 256M -f 4 -c 1 -n 30 -w 5"
one all_reduce nccl ar_nccl -- $A
one all_reduce braid ar_braid -- $A
F="-b 1M -e 256M -f 4 -c 1 -n 20 -w 5"
for d in int8 int64; do
  one all_reduce nccl ar_${d}_nccl -- $F -d $d
  one all_reduce braid ar_${d}_braid -- $F -d $d
done
gpu_pack
