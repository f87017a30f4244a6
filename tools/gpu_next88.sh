#!/usr/bin/env bash
# Device call (2 GPUs, ~9 min), twenty-second session: main as it stands (b23bea6: p2p launches cut over half a
# CTA bound; c96a28e: clusters of 4 keep the one-shot from 128 MiB on 24-31 channels), carried as build-main (a
# default build of the committed tree: the gpu tests, the nine perf tools, braidrun and matmul_demo). Every gpu
# test; device_p2p_group_test and device_mp_test under NCCL_MAX_CTAS=8; the full tables (every collective
# 8 B-512 MB, NCCL and Braid's tuner, then each protocol forced for the ring collectives while the call has run
# under 430 s; -c 1, -J JSON for tools/perf_full_table.py and tools/perf/plot); the small all-reduce in CUDA
# graphs (-G 20), NCCL beside it.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next88_out}; L=$OUT/next88; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-main
[[ -x $B/bin/device_coll_test && -x $B/bin/scatter_perf ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
nvidia-smi -L
export LD_LIBRARY_PATH=$B/lib
gpu_tests cluster_gpu_test fifo_gpu_test device_coll_test device_errors_test device_p2p_group_test \
  numeric_device_test device_one_rank_test device_mp_test matmul_gpu_test
(export NCCL_MAX_CTAS=8; L=$L/ctas8; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test)
export PERF_TIMEOUT=60
gpu_full_tables 430
G="-b 8 -e 512K -f 8 -c 1 -n 20 -w 5 -G 20"
one all_reduce nccl graph_nccl -- $G
one all_reduce braid graph_braid -- $G
gpu_pack
