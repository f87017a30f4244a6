#!/usr/bin/env bash
# Device call (2 GPUs, ~3 min), the fifteenth session's seventh: p2p launches within a CTA bound (p2pCtaBudget:
# the ring cut over half of what the copies leave). The p2p-heavy gpu tests with NCCL_MAX_CTAS=24 exported (so
# every p2p launch of theirs is cut within it) and device_p2p_group_test without; send/recv and all-to-all
# 1-64 MB with and without the bound, -c 1. Raw outputs: $OUT/next41.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next41_out}; L=$OUT/next41; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun sendrecv_perf alltoall_perf device_coll_test device_mp_test device_p2p_group_test
gpu_tests device_p2p_group_test
export NCCL_MAX_CTAS=24
mv "$L/device_p2p_group_test.txt" "$L/device_p2p_group_test_default.txt"
gpu_tests device_p2p_group_test device_mp_test device_coll_test
unset NCCL_MAX_CTAS
export PERF_TIMEOUT=60
S="-b 1M -e 64M -f 4 -c 1 -n 20 -w 5"
for c in sendrecv alltoall; do
  one $c nccl ${c}_nccl -- $S
  one $c braid ${c}_default -- $S
  one $c braid ${c}_ctas24 NCCL_MAX_CTAS=24 -- $S
done
gpu_pack
