#!/usr/bin/env bash
# Device call (2 GPUs, ~2.5 min), the thirteenth session's last: every gpu test on the final main (the finer
# p2p cut had run device_coll_test and device_mp_test only). Raw outputs: $OUT/next27.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next27_out}; L=$OUT/next27; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun matmul_demo device_coll_test device_mp_test matmul_gpu_test numeric_device_test
gpu_tests numeric_device_test device_coll_test device_mp_test matmul_gpu_test
gpu_pack
