#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min), the sixteenth session's fifth: the full tables again on main with programmatic
# dependent launches (d82e472). StreamOrdering and device_mp_test on main; all-reduce 256 KB-32 MB in two more
# interleaved rounds (NCCL, Braid); every collective 8 B-512 MB, NCCL and Braid's tuner (-c 1, -J JSON for
# tools/perf_full_table.py and tools/perf/plot); forced protocols for the ring collectives while time remains.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next46_out}; L=$OUT/next46; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf \
  sendrecv_perf gather_perf scatter_perf device_coll_test device_mp_test
s=$(date +%s); timeout 60 $B/bin/device_coll_test --gtest_filter=DeviceColl2Gpu.StreamOrdering > "$L/ordering.txt" 2>&1
echo "== StreamOrdering rc=$? $(( $(date +%s) - s )) s"
gpu_tests device_mp_test
export PERF_TIMEOUT=60
S="-b 256K -e 32M -f 2 -c 1 -n 30 -w 5"
for r in 1 2; do one all_reduce nccl ar_nccl_$r -- $S; one all_reduce braid ar_braid_$r -- $S; done
gpu_full_tables 330
gpu_pack
