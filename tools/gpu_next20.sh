#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min): the host cost of small p2p calls. launchP2p planned into fresh nested vectors
# (~40 allocations, ~0.8 us per 8-byte send/recv on the development VM); it now reuses its lists and plans
# flat. A/B against the tree in base.tgz (git archive of the previous main), interleaved so the VM's drift
# between runs falls on both: launch_cost (host time per call, stream time per op) and the perf tools at
# 8 B-128 KB for send/recv, all-to-all, gather and all-reduce, NCCL / base / new, three rounds. Then every gpu test.
# Raw outputs: $OUT/next20.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next20_out}; L=$OUT/next20; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build_base braid sendrecv_perf alltoall_perf gather_perf all_reduce_perf
gpu_build braid sendrecv_perf alltoall_perf gather_perf all_reduce_perf \
  device_coll_test device_mp_test matmul_gpu_test numeric_device_test
wait
launch_cost_build
B=$BASE/build-var; (cd $BASE && B=build-var launch_cost_build); B=$NEWB
export PERF_TIMEOUT=40
S="-b 8 -e 128K -f 4 -c 1 -n 100 -w 20"
for round in 1 2 3; do
  echo "== round $round"
  B=$NEWB; launch_cost nccl | grep -E "rank 0 (sendrecv|alltoall|allreduce)"
  B=$BASE/build-var; launch_cost braid | grep -E "rank 0 (sendrecv|alltoall|allreduce)"
  B=$NEWB; launch_cost braid | grep -E "rank 0 (sendrecv|alltoall|allreduce)"
  for c in sendrecv alltoall gather all_reduce; do abc $c $c $round -- $S; done
done
B=$NEWB
gpu_tests numeric_device_test device_coll_test device_mp_test matmul_gpu_test
gpu_pack
