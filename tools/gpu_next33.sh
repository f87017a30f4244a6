#!/usr/bin/env bash
# Device call (2 GPUs, ~3.5 min), the fourteenth session's last: the review fixes (the split's FIFO-fit check
# from the connection's own steps, acquire/release guard words, NVLink only, exact in-place or disjoint buffers,
# kernels that cannot split run unsplit; the p2p table's cudaMalloc fallback) and the stronger p2p group test
# (replays after another group rewrote the table, a table first allocated inside a global-mode capture).
# Every gpu test; all-reduce 256 KB-64 MB, NCCL and Braid, one round. Raw outputs: $OUT/next33.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next33_out}; L=$OUT/next33; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun all_reduce_perf matmul_demo device_coll_test device_mp_test numeric_device_test \
  matmul_gpu_test device_one_rank_test device_errors_test device_p2p_group_test
gpu_tests device_p2p_group_test device_coll_test device_errors_test device_one_rank_test numeric_device_test \
  device_mp_test matmul_gpu_test
export PERF_TIMEOUT=60
S="-b 256K -e 64M -f 2 -c 1 -n 30 -w 5"
one all_reduce nccl ar_nccl_1 -- $S
one all_reduce braid ar_braid_1 -- $S
for f in "$L"/ar_*.txt; do
  echo "$(basename $f .txt) in-place: $(grep -v '^#' "$f" | awk 'NF>12 && $1 ~ /^[0-9]+$/ {printf "%s:%s(%s) ", $1, $10, $13}')"
done
gpu_pack
