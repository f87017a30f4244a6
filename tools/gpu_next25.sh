#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min): the finer p2p cut (p2pChannelsForBytes: up to 128 KiB shares of 8 KiB on up
# to 8 channels, up to 1 MiB shares of 32 KiB on 8-32) against the tree in base.tgz (main before it), NCCL
# alongside: send/recv, all-to-all, gather, scatter 8 B-16 MB, two interleaved rounds; device_coll_test and
# device_mp_test (p2p correctness, GroupSimulateEnd against measured).
# Raw outputs: $OUT/next25.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next25_out}; L=$OUT/next25; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build_base braid sendrecv_perf alltoall_perf gather_perf scatter_perf
gpu_build braid sendrecv_perf alltoall_perf gather_perf scatter_perf device_coll_test device_mp_test
wait
gpu_tests device_coll_test device_mp_test
export PERF_TIMEOUT=40
S="-b 8 -e 16M -f 4 -c 1 -n 40 -w 10"
for round in 1 2; do
  for c in sendrecv alltoall gather scatter; do abc $c $c $round -- $S; done
done
gpu_pack
