#!/usr/bin/env bash
# Twenty-third session, call e: main as it landed (c1b0628), carried as build-final (a default build: the gpu
# tests, braidrun and matmul_demo; tools/pack_carry.sh build-final). Every gpu test, then the p2p tests under
# NCCL_MAX_CTAS=16 and 24.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next97_out}; L=$OUT/next97; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
B=$PWD/build-final; export LD_LIBRARY_PATH=$B/lib
echo "build-final of $(cat $B/HEAD)"
gpu_tests cluster_gpu_test fifo_gpu_test device_coll_test device_errors_test device_p2p_group_test \
  numeric_device_test device_one_rank_test device_mp_test matmul_gpu_test
for b in 16 24; do (export NCCL_MAX_CTAS=$b; L=$L/ctas$b; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test); done
gpu_pack
