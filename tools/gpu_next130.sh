#!/usr/bin/env bash
# Device call (2 GPUs, ~3 min), twenty-eighth session, call g: the rest of the gpu tests on the landing build
# (build-new, 2c21574; call f ran the p2p tests and device_mp_test on it): device_coll_test, device_errors_test,
# device_one_rank_test, fifo_gpu_test and cluster_gpu_test, unbounded (GPU_TESTS=...: a subset; fifo_gpu_test and
# cluster_gpu_test need braidrun and the all-reduce and all-gather perf tools beside them).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next130_out}; L=$OUT/next130; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
X=$PWD/build-new
echo "build-new of $(cat $X/HEAD)"
B=$X; export LD_LIBRARY_PATH=$X/lib
gpu_tests ${GPU_TESTS:-device_errors_test device_one_rank_test fifo_gpu_test cluster_gpu_test device_coll_test}
gpu_pack
