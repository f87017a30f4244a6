#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min) for small point-to-point latency: the p2p kernel's compact parameter block.
# Builds this tree and, beside it, the tree with the files under gpu_ab_old/ put back (the version before the
# change; skipped when that folder is absent), runs every gpu test on this tree, then send/recv 8 B-128 KB
# for NCCL, Braid and the old Braid, alternating, on a stream and in CUDA graphs; all-to-all, scatter, gather
# against NCCL; then reduce-scatter of fp16/bf16/fp8 and all-reduce of float/int8 at 1 MB-512 MB against NCCL
# (the 16/8-bit reducing kernels). Raw outputs: $OUT/p2pargs.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_p2p_args_out}; L=$OUT/p2pargs; mkdir -p "$L"
source tools/gpu_common.sh
OLD=/tmp/braid-old
if [[ -d gpu_ab_old ]]; then
  mkdir -p $OLD && tar --exclude=./build-gpu --exclude=./gpu_ab_old -cf - . | tar -C $OLD -xf - && cp -r gpu_ab_old/. $OLD/
  (cd $OLD && cmake -S . -B build-old -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > "$L/cmake_old.log" 2>&1 &&
   ninja -C build-old -j16 braid sendrecv_perf > "$L/build_old.log" 2>&1; echo "old build rc=$?") &
fi
gpu_build braid all_reduce_perf reduce_scatter_perf sendrecv_perf alltoall_perf scatter_perf gather_perf \
  device_coll_test device_mp_test numeric_device_test
wait
gpu_tests numeric_device_test device_coll_test device_mp_test
export PERF_TIMEOUT=40
F="-b 8 -e 128K -f 4 -c 1 -n 300 -w 30"
NEW=$B
for round in 1 2; do
  one sendrecv nccl sr_nccl_$round -- $F
  one sendrecv braid sr_new_$round -- $F
  [[ -x $OLD/build-old/bin/sendrecv_perf ]] && B=$OLD/build-old one sendrecv braid sr_old_$round -- $F
  B=$NEW
done
one sendrecv nccl sr_graph_nccl -- $F -G 20
one sendrecv braid sr_graph_new -- $F -G 20
[[ -x $OLD/build-old/bin/sendrecv_perf ]] && B=$OLD/build-old one sendrecv braid sr_graph_old -- $F -G 20
B=$NEW
for p in alltoall scatter gather; do
  one $p nccl ${p}_nccl -- $F
  one $p braid ${p}_new -- $F
done
# The 16/8-bit reducing kernels (hardware conversions, packed sums): reduce-scatter per type, all-reduce controls.
G="-b 1M -e 512M -f 8 -c 1 -n 20 -w 5"
for d in half bfloat16 f8e4m3; do
  one reduce_scatter nccl rs_${d}_nccl -- $G -d $d
  one reduce_scatter braid rs_${d}_new -- $G -d $d
done
for d in float int8; do
  one all_reduce nccl ar_${d}_nccl -- $G -d $d
  one all_reduce braid ar_${d}_new -- $G -d $d
done
gpu_pack
