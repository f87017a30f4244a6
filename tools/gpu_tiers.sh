#!/usr/bin/env bash
# Device call (2 GPUs, ~3 min), eleventh session: p2p shares widen at 8 channels too (p2pChannelsForBytes:
# 64 KiB shares up to 512 KiB, 128 KiB up to 4 MiB on 8-32 channels, 256 KiB from 8 MiB). device_coll_test,
# then send/recv, all-to-all, gather and scatter at 128 KB-16 MB, two runs each, NCCL once. Raw outputs:
# $OUT/tiers.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_tiers_out}; L=$OUT/tiers; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun sendrecv_perf alltoall_perf gather_perf scatter_perf device_coll_test
gpu_tests device_coll_test
export PERF_TIMEOUT=40
A="-b 128K -e 16M -f 2 -c 1 -n 30 -w 5"
for c in sendrecv alltoall gather scatter; do
  a=""; [[ $c == gather || $c == scatter ]] && a="-a 3"
  one $c nccl ${c}_nccl -- $A $a
  for r in 1 2; do one $c braid ${c}_$r -- $A $a; done
done
gpu_pack
