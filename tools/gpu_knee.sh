#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min), eleventh session: the p2p channel knee (p2pChannelsForBytes: 32 channels from
# 2 to 8 MB per transfer, 64 of 256 KiB from 16 MB). Runs the gpu tests that carry p2p (device_coll_test,
# device_mp_test), then send/recv, all-to-all, gather and scatter at 128 KB-64 MB, three runs each, NCCL once,
# and per-launch times (tools/iter_probe.cu) of send/recv 4 MB and all-to-all 8 MB, three processes each.
# Raw outputs: $OUT/knee.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_knee_out}; L=$OUT/knee; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun sendrecv_perf alltoall_perf gather_perf scatter_perf device_coll_test device_mp_test
gpu_tests device_coll_test device_mp_test
export PERF_TIMEOUT=40
A="-b 128K -e 64M -f 2 -c 1 -n 30 -w 5"
for c in sendrecv alltoall gather scatter; do
  one $c nccl ${c}_nccl -- $A
  for r in 1 2 3; do one $c braid ${c}_$r -- $A; done
done
probe_build
for r in 1 2 3; do probe braid sendrecv 4194304 1000; done; probe nccl sendrecv 4194304 1000
for r in 1 2 3; do probe braid alltoall 8388608 1000; done; probe nccl alltoall 8388608 1000
gpu_pack
