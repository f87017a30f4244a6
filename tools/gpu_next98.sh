#!/usr/bin/env bash
# Twenty-third session, call f: cluster_gpu_test and fifo_gpu_test on build-final (main at c1b0628), which call e
# carried without the perf tools these two start (rc 127 there); tools/pack_carry.sh build-final.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next98_out}; L=$OUT/next98; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
B=$PWD/build-final; export LD_LIBRARY_PATH=$B/lib
echo "build-final of $(cat $B/HEAD)"
gpu_tests cluster_gpu_test fifo_gpu_test
gpu_pack
