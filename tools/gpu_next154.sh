#!/usr/bin/env bash
# Device call (2 GPUs, ~2.5 min): main b428569 (the review mends: PrimsShared::reset zeroes stopCall; the logger
# writes under the stream's lock; the log test's bounded child handling) - the gpu tests whose kernels run the
# SIMPLE poster and its error paths (device_errors_test, device_p2p_group_test, device_mp_test, device_coll_test)
# and core_test's log cases on this machine's glibc. Carry [build-pack] (tools/pack_carry.sh build-new).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next154_out}; L=$OUT/next154; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
B=$PWD/build-new; export LD_LIBRARY_PATH=$B/lib
echo "build-new of $(cat $B/HEAD)"
$B/bin/core_test --gtest_filter='Log.*' > $L/core_test.txt 2>&1
echo "== core_test Log.* rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $L/core_test.txt | tr '\n' ' ')"
gpu_tests device_errors_test device_p2p_group_test device_mp_test device_coll_test
gpu_pack
