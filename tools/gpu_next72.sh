#!/usr/bin/env bash
# Device call (2 GPUs, ~9 min), twentieth session: main as it stands (0b50eea's NVLink-only narrowing of clusters
# had run on no GPU), carried as build-main (a default build of the committed tree; bin/ holds the gpu tests, the
# nine perf tools, braidrun and matmul_demo; lib/ libbraid and libnccl; HEAD the commit). Every gpu test, the
# init line, then the full tables (every collective 8 B-512 MB, NCCL and Braid's tuner, then each protocol forced
# for the ring collectives while time remains; -c 1, -J JSON for tools/perf_full_table.py and tools/perf/plot).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next72_out}; L=$OUT/next72; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-main
[[ -x $B/bin/device_coll_test && -x $B/bin/scatter_perf ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
nvidia-smi -L
export LD_LIBRARY_PATH=$B/lib
gpu_tests cluster_gpu_test device_coll_test device_errors_test device_p2p_group_test numeric_device_test \
  device_one_rank_test device_mp_test matmul_gpu_test
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT timeout 60 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0 -x NCCL_DEBUG \
  -x NCCL_DEBUG_SUBSYS -x LD_LIBRARY_PATH $B/bin/broadcast_perf -b 1M -e 1M -n 2 -w 1 2>&1 | grep -i 'cluster'
export PERF_TIMEOUT=60
gpu_full_tables 480
gpu_pack
