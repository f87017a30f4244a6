#!/usr/bin/env bash
# Device call (2 GPUs, ~7 min), the sixteenth session's first: (1) every gpu test on main (386631a: the p2p CTA
# budget's final form and the host-side review fixes had not run on a GPU); (2) all-to-all, gather and scatter
# 1-64 MB with and without NCCL_MAX_CTAS=24, Braid and NCCL (the budget lets local copies take half the bound);
# (3) a variant with no cudaEventRecord after each single-stream batch (tools/var_noev.patch), against main and
# NCCL in three interleaved rounds at 8 B-4 MB on a stream and in a graph: does the per-batch event cost GPU time
# between back-to-back launches? Raw outputs: $OUT/next42.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next42_out}; L=$OUT/next42; mkdir -p "$L"
source tools/gpu_common.sh
which nsys ncu > "$L/profilers.txt" 2>&1
gpu_build_patch noev tools/var_noev.patch braid braidrun all_reduce_perf
gpu_build braid braidrun all_reduce_perf alltoall_perf gather_perf scatter_perf matmul_demo device_coll_test \
  device_mp_test numeric_device_test matmul_gpu_test device_one_rank_test device_errors_test device_p2p_group_test
wait
gpu_tests device_p2p_group_test device_coll_test device_errors_test device_one_rank_test numeric_device_test \
  device_mp_test matmul_gpu_test
export NCCL_MAX_CTAS=24
mv "$L/device_p2p_group_test.txt" "$L/device_p2p_group_test_default.txt"
gpu_tests device_p2p_group_test device_mp_test
unset NCCL_MAX_CTAS
export PERF_TIMEOUT=60
S="-b 1M -e 64M -f 4 -c 1 -n 20 -w 5"
for c in alltoall gather scatter; do
  one $c nccl ${c}_nccl -- $S
  one $c nccl ${c}_nccl_ctas24 NCCL_MAX_CTAS=24 -- $S
  one $c braid ${c}_default -- $S
  one $c braid ${c}_ctas24 NCCL_MAX_CTAS=24 -- $S
done
S="-b 8 -e 4M -f 4 -c 1 -n 50 -w 10"
NB=$B
for r in 1 2 3; do
  B=$NB; one all_reduce nccl ar_nccl_$r -- $S
  B=$NB; one all_reduce braid ar_main_$r -- $S
  B=/tmp/braid-noev/build-var; one all_reduce braid ar_noev_$r -- $S
  B=$NB; one all_reduce nccl arg_nccl_$r -- $S -G 20
  B=$NB; one all_reduce braid arg_main_$r -- $S -G 20
  B=/tmp/braid-noev/build-var; one all_reduce braid arg_noev_$r -- $S -G 20
done
B=$NB
gpu_pack
