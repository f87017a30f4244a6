#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min) for the out-of-line reduceCopy of half/fp8/int8/int32/int64 reducing kernels
# (src/device/reduce_copy.h, kRcOutline): builds this tree and, beside it, a copy with kRcOutline forced off
# (the inlined code of before), runs every gpu test on this tree (every datatype x op x collective), then
# all-reduce and reduce-scatter busbw per outlined datatype at 256 KB, 4 MB and 64 MB: NCCL, Braid, Braid inlined. float is
# the control (its kernels are byte-identical in both builds). Raw outputs: $OUT/outline.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_outline_out}; L=$OUT/outline; mkdir -p "$L"
source tools/gpu_common.sh
INL=/tmp/braid-inline
mkdir -p $INL && tar --exclude=./build-gpu -cf - . | tar -C $INL -xf -
sed -i 's/^constexpr bool kRcOutline = .*/constexpr bool kRcOutline = false;/' $INL/src/device/reduce_copy.h
grep -q "kRcOutline = false;" $INL/src/device/reduce_copy.h || { echo "could not force kRcOutline off"; exit 1; }
(cd $INL && cmake -S . -B build-inl -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > "$L/cmake_inl.log" 2>&1 &&
 ninja -C build-inl -j16 braid all_reduce_perf reduce_scatter_perf > "$L/build_inl.log" 2>&1; echo "inline build rc=$?") &
gpu_build braid all_reduce_perf reduce_scatter_perf sendrecv_perf device_coll_test device_mp_test matmul_gpu_test
wait
gpu_tests device_coll_test device_mp_test matmul_gpu_test
export PERF_TIMEOUT=40
F="-b 256K -e 256M -f 16 -c 1 -n 20 -w 5"
NEW=$B
for d in half f8e4m3 f8e5m2 int8 int32 int64 float; do
  one all_reduce nccl ar_${d}_nccl -- $F -d $d
  one all_reduce braid ar_${d}_out -- $F -d $d
  B=$INL/build-inl one all_reduce braid ar_${d}_inl -- $F -d $d; B=$NEW
done
for d in half int8; do
  one reduce_scatter nccl rs_${d}_nccl -- $F -d $d
  one reduce_scatter braid rs_${d}_out -- $F -d $d
  B=$INL/build-inl one reduce_scatter braid rs_${d}_inl -- $F -d $d; B=$NEW
done
tar -C "$OUT" -czf "$OUT/outline.tgz" outline && rm -rf "$L"
echo "total: $(( $(date +%s) - GPU_T0 )) s"
