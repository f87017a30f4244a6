#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min), the sixteenth session's second: collective launches carry the ring connections'
# base pointer instead of 128 per-channel pointers (CollLaunchArgs 1.1 KiB -> ~100 B). Does the parameter block
# cost back-to-back stream launches GPU time (512 KB all-reduce: 7.8 us on a stream against 6.4 in a graph, where
# NCCL's gap is 0.7)? The working tree against base.tgz (main) and NCCL in three interleaved rounds, 8 B-4 MB, on
# a stream and in a graph; the other ring collectives one round each; the collective gpu tests on the change.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next43_out}; L=$OUT/next43; mkdir -p "$L"
source tools/gpu_common.sh
T="braid braidrun all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf"
gpu_build_base $T
gpu_build $T device_coll_test device_mp_test numeric_device_test matmul_gpu_test device_one_rank_test \
  device_errors_test
wait
gpu_tests device_coll_test device_mp_test numeric_device_test matmul_gpu_test device_one_rank_test device_errors_test
export PERF_TIMEOUT=60
S="-b 8 -e 4M -f 4 -c 1 -n 50 -w 10"
for r in 1 2 3; do
  abc all_reduce ar $r -- $S
  abc all_reduce arg $r -- $S -G 20
done
for c in all_gather reduce_scatter broadcast reduce; do abc $c $c 1 -- $S; done
gpu_pack
