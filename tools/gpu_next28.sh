#!/usr/bin/env bash
# Device call (2 GPUs, ~3 min), the fourteenth session's first: every gpu test on main, with the new
# device_one_rank_test (a 1-rank GPU comm: its p2p ops are local copies; dede843 fixed a null dereference there
# that no GPU run has exercised), dede843's planP2p change (device_coll_test's p2p tests run it) and the
# failure-path tests split from device_coll_test into device_errors_test (8edf2ab); then
# send/recv and all-to-all 8 B-4 MB against NCCL, two rounds (the plan change should not move them).
# Raw outputs: $OUT/next28.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next28_out}; L=$OUT/next28; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun matmul_demo sendrecv_perf alltoall_perf device_coll_test device_mp_test matmul_gpu_test \
  numeric_device_test device_one_rank_test device_errors_test
gpu_tests device_one_rank_test numeric_device_test device_coll_test device_errors_test device_mp_test matmul_gpu_test
export PERF_TIMEOUT=40
S="-b 8 -e 4M -f 4 -c 1 -n 40 -w 10"
for round in 1 2; do
  for c in sendrecv alltoall; do one $c nccl ${c}_nccl_$round -- $S; one $c braid ${c}_braid_$round -- $S; done
done
gpu_pack
