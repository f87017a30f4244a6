#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min), the thirteenth session's first: small bidirectional p2p. In the twelfth
# session's table (docs/gpu/2026-11-24e) send/recv and all-to-all at 8 B-128 KB took 8.4-10.7 us against NCCL's
# 6.3-8.5 (0.65-0.84x), while gather and scatter, one direction per rank, took 5.8-7.4 against 8.8-10.6.
#   1. every gpu test (the 16-block p2p parameter tier of bf9c786 ran device_coll_test only);
#   2. tools/launch_cost.cu, Braid twice and NCCL once: host time per call and stream time per op of 8 B
#      all-reduce, send/recv both ways, send one way, gather, all-to-all;
#   3. send/recv, all-to-all and gather 8 B-128 KB, Braid twice, NCCL once.
# Raw outputs: $OUT/next19.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next19_out}; L=$OUT/next19; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun matmul_demo sendrecv_perf alltoall_perf gather_perf \
  device_coll_test device_mp_test matmul_gpu_test numeric_device_test
launch_cost_build
launch_cost braid; launch_cost nccl; launch_cost braid
gpu_tests numeric_device_test device_coll_test device_mp_test matmul_gpu_test
export PERF_TIMEOUT=40
S="-b 8 -e 128K -f 4 -c 1 -n 50 -w 10"
for c in sendrecv alltoall gather; do
  one $c nccl ${c}_nccl -- $S; one $c braid ${c}_1 -- $S; one $c braid ${c}_2 -- $S
done
gpu_pack
