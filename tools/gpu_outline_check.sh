#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min) for the reducing kernels of the 16- and 8-bit types: hardware conversions and
# packed sums (numeric_types.h, device/packed_math.h) and the out-of-line reduceCopy (reduce_copy.h,
# kRcOutline). Builds this tree and, beside it, a copy with kRcOutline forced off (every type inlined), runs
# every gpu test on this tree (the conversions and packed sums exhaustively, every datatype x op x
# collective), then all-reduce and reduce-scatter busbw per low-precision type at 1 MB - 256 MB: NCCL, Braid,
# Braid inlined; float is the control. AR_TYPES / RS_TYPES choose the types (e.g. AR_TYPES="int8 int64").
# Raw outputs: $OUT/outline.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_outline_out}; L=$OUT/outline; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build_inlined braid all_reduce_perf reduce_scatter_perf
gpu_build braid braidrun matmul_demo all_reduce_perf reduce_scatter_perf sendrecv_perf device_coll_test device_mp_test matmul_gpu_test numeric_device_test
wait
gpu_tests numeric_device_test device_coll_test device_mp_test matmul_gpu_test
export PERF_TIMEOUT=40
F="-b 1M -e 256M -f 4 -c 1 -n 20 -w 5"  # 512 MB of a 1-byte type: the host-side fill/check passes 40 s
NEW=$B
for d in ${AR_TYPES:-half bfloat16 f8e4m3 f8e5m2 int8 float}; do
  one all_reduce nccl ar_${d}_nccl -- $F -d $d
  one all_reduce braid ar_${d}_out -- $F -d $d
  B=$INL/build-var one all_reduce braid ar_${d}_inl -- $F -d $d; B=$NEW
done
for d in ${RS_TYPES:-half bfloat16 f8e4m3}; do
  one reduce_scatter nccl rs_${d}_nccl -- $F -d $d
  one reduce_scatter braid rs_${d}_out -- $F -d $d
  B=$INL/build-var one reduce_scatter braid rs_${d}_inl -- $F -d $d; B=$NEW
done
gpu_pack
