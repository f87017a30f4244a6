#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min), twenty-ninth session, call g: 44e512c, the executor ordering a batch captured on a
# forked stream after the communicator's previous batch in the same graph, carried as build-new (the gpu tests, the
# perf tools, braidrun, matmul_demo); build-main is b2ee239 (bbb9dd5's library). First the new test against the old
# library (DeviceP2pGroup.GroupsCapturedOnForkedStreamsRunInTurn, expected to fail there: two p2p launches of one
# communicator at once), then every gpu test on the new library, then the small all-reduce in CUDA graphs, NCCL /
# old / new (the capture path now records an event per batch).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next137_out}; L=$OUT/next137; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main X=$PWD/build-new
echo "build-main of $(cat $M/HEAD); build-new of $(cat $X/HEAD)"
s=$(date +%s)
BRAID_CASE_TIMEOUT=10 LD_LIBRARY_PATH=$M/lib timeout 120 $X/bin/device_p2p_group_test \
  --gtest_filter='*GroupsCapturedOnForkedStreamsRunInTurn' > $L/forked_old_lib.txt 2>&1
echo "== new test on the old library rc=$? $(( $(date +%s) - s )) s: $(grep -E '^\[  (PASSED|FAILED) ' $L/forked_old_lib.txt | tr '\n' ' ')"
grep -E 'Failure|still running|byte|async' $L/forked_old_lib.txt | head -8
B=$X; export LD_LIBRARY_PATH=$X/lib
gpu_tests device_p2p_group_test device_coll_test device_errors_test device_mp_test device_one_rank_test \
  fifo_gpu_test cluster_gpu_test device_p2p_balance_test matmul_gpu_test
export PERF_TIMEOUT=60
G="-b 8 -e 512K -f 8 -c 1 -n 20 -w 5 -G 20"
one all_reduce nccl graph_nccl -- $G
B=$M; one all_reduce braid graph_old LD_LIBRARY_PATH=$M/lib -- $G
B=$X; one all_reduce braid graph_new LD_LIBRARY_PATH=$X/lib -- $G
B=$X; one sendrecv braid graph_sr_new LD_LIBRARY_PATH=$X/lib -- -b 8 -e 64M -f 64 -c 1 -n 20 -w 5 -G 20
gpu_pack
