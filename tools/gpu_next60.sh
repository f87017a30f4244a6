#!/usr/bin/env bash
# Device call (2 GPUs, ~8 min), eighteenth session: main as it stands (b0497fc's source: d2b5988's launch changes
# and d0a3c70's bound fold since the last full tables) -- every gpu test, then the full tables again: every
# collective 8 B-512 MB, NCCL and Braid's tuner (-c 1, -J JSON for tools/perf_full_table.py and tools/perf/plot),
# forced protocols for the ring collectives while time remains. Copy /usr/src/googletest to .gtest first.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next60_out}; L=$OUT/next60; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun matmul_demo all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf \
  alltoall_perf sendrecv_perf gather_perf scatter_perf device_coll_test device_p2p_group_test device_mp_test \
  numeric_device_test matmul_gpu_test device_one_rank_test device_errors_test
gpu_tests device_coll_test device_p2p_group_test device_mp_test numeric_device_test matmul_gpu_test \
  device_one_rank_test device_errors_test
export PERF_TIMEOUT=60
gpu_full_tables 480
gpu_pack
