#!/usr/bin/env bash
# Twenty-third session, call h: main's last code commit (applyBudget, a no-behaviour-change refactor of the
# executor's p2p budget) on the GPUs: device_p2p_group_test and device_mp_test unbounded and under 8 and 24.
# tools/pack_carry.sh build-final (a default build of HEAD with those two tests).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next100_out}; L=$OUT/next100; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
B=$PWD/build-final; export LD_LIBRARY_PATH=$B/lib
echo "build-final of $(cat $B/HEAD)"
gpu_tests device_p2p_group_test device_mp_test
for b in 8 24; do (export NCCL_MAX_CTAS=$b; L=$L/ctas$b; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test); done
gpu_pack
