#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min), for a next session: graph mixing (tools/var_graphmix.patch, not landed), the one
# known ordering gap against NCCL: replays of CUDA graphs of one communicator, and its uncaptured operations, ordered
# by one event (external wait/record nodes in graphs), NCCL_GRAPH_MIXING_SUPPORT on by default as NCCL.
#   1. DeviceP2pGroup.GraphReplaysOrderedAgainstEachOtherAndUncapturedGroups (the test binary of build-gm) against
#      main's library (build-new: expected to fail its node counts, and may corrupt or time out) and build-gm's.
#   2. Every gpu test on build-gm (every capture now carries the event nodes).
#   3. What the nodes cost a replay: all-reduce in CUDA graphs (-G 20), 8 B-256 KB, five interleaved rounds of main,
#      build-gm, build-gm with NCCL_GRAPH_MIXING_SUPPORT=0, and NCCL (issue 5's target: 8 B <= 4 us in a graph).
# Make build-gm: a default build with the patch applied (git apply tools/var_graphmix.patch; ninja -C build; copy as
# for build-new; git apply -R); the patch was built and passed 416/416 cpu tests on 6b869d7, was reviewed, and has not
# run on a GPU. Carry [build-pack] (tools/pack_carry.sh build-new build-gm).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next143_out}; L=$OUT/next143; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-new X=$PWD/build-gm
echo "build-new of $(cat $M/HEAD); build-gm of $(cat $X/HEAD)"
gpu_test_on_libs $X/bin/device_p2p_group_test '*GraphReplaysOrderedAgainstEachOtherAndUncapturedGroups' mixing $M $X
B=$X; export LD_LIBRARY_PATH=$X/lib
gpu_tests device_p2p_group_test device_coll_test device_errors_test device_mp_test device_one_rank_test \
  fifo_gpu_test cluster_gpu_test device_p2p_balance_test matmul_gpu_test numeric_device_test
F="-b 8 -e 256K -f 8 -c 1 -n 50 -w 10 -G 20"
for r in 1 2 3 4 5; do
  [[ $(( $(date +%s) - GPU_T0 )) -gt ${GUARD:-480} ]] && { echo "round $r skipped (time)"; continue; }
  B=$M; export LD_LIBRARY_PATH=$M/lib; one all_reduce braid g${r}_main -- $F -J $L/g${r}_main.json
  B=$X; export LD_LIBRARY_PATH=$X/lib; one all_reduce braid g${r}_gm -- $F -J $L/g${r}_gm.json
  one all_reduce braid g${r}_gm0 NCCL_GRAPH_MIXING_SUPPORT=0 -- $F -J $L/g${r}_gm0.json
  one all_reduce nccl g${r}_nccl -- $F -J $L/g${r}_nccl.json
done
gpu_pack
