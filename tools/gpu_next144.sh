#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min): graph mixing (tools/var_graphmix.patch) with one record node per capture, after its
# last batch, instead of one per batch (2026-12-13b: a record node per batch cost ~0.95 us per all-reduce in a graph).
#   1. DeviceP2pGroup.GraphReplaysOrderedAgainstEachOtherAndUncapturedGroups on build-gm (graph X now holds two
#      groups: one record node, after the last kernel).
#   2. Every gpu test on build-gm.
#   3. All-reduce in CUDA graphs, five interleaved rounds of main, build-gm, build-gm with NCCL_GRAPH_MIXING_SUPPORT=0
#      and NCCL: graphs of 50 all-reduces (-n 50 -G 20, as 2026-12-13b) and graphs of one (-n 1 -G 200: what the
#      wait and record nodes cost a replay that holds a single call).
# Make build-gm: tools/build_carry.sh build-gm tools/var_graphmix.patch -- <the gpu tests, braidrun, matmul_demo,
# all_reduce_perf, all_gather_perf, broadcast_perf>. Carry [build-pack] (tools/pack_carry.sh build-new build-gm).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next144_out}; L=$OUT/next144; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-new X=$PWD/build-gm
echo "build-new of $(cat $M/HEAD); build-gm of $(cat $X/HEAD)"
gpu_test_on_libs $X/bin/device_p2p_group_test '*GraphReplaysOrderedAgainstEachOtherAndUncapturedGroups' mixing $X
B=$X; export LD_LIBRARY_PATH=$X/lib
gpu_tests device_p2p_group_test device_coll_test device_errors_test device_mp_test device_one_rank_test \
  fifo_gpu_test cluster_gpu_test device_p2p_balance_test matmul_gpu_test numeric_device_test
F50="-b 8 -e 256K -f 8 -c 1 -n 50 -w 10 -G 20" F1="-b 8 -e 256K -f 8 -c 1 -n 1 -w 10 -G 200"
for r in 1 2 3 4 5; do
  [[ $(( $(date +%s) - GPU_T0 )) -gt ${GUARD:-420} ]] && { echo "round $r skipped (time)"; continue; }
  for f in 50 1; do
    eval F=\$F$f
    B=$M; export LD_LIBRARY_PATH=$M/lib; one all_reduce braid g${f}_main_$r -- $F -J $L/g${f}_main_$r.json
    B=$X; export LD_LIBRARY_PATH=$X/lib; one all_reduce braid g${f}_gm_$r -- $F -J $L/g${f}_gm_$r.json
    one all_reduce braid g${f}_gm0_$r NCCL_GRAPH_MIXING_SUPPORT=0 -- $F -J $L/g${f}_gm0_$r.json
    one all_reduce nccl g${f}_nccl_$r -- $F -J $L/g${f}_nccl_$r.json
  done
done
gpu_pack
