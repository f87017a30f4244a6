#!/usr/bin/env bash
# Device call (2 GPUs, ~2.5 min), twenty-seventh session, call e: the landing build (balanced chunks capped on paired
# budgets and on transfers over 16 channels or more; device_mp_test now flushes its estimate line before _exit),
# carried as build-final. device_mp_test under 17 first (call d's GroupSimulateEndNearMeasured failed there once, its
# line lost to _exit), then the p2p tests unbounded, under 24 (gather's 24 channels now capped) and 28 (14: not),
# and gather 128 / 512 MB under 24 and send/recv under 28 (one run each).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next123_out}; L=$OUT/next123; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
X=$PWD/build-final
echo "build-final: $(cat $X/HEAD)"
B=$X; export LD_LIBRARY_PATH=$X/lib
(export NCCL_MAX_CTAS=17; L=$L/ctas17; mkdir -p $L; gpu_tests device_mp_test device_p2p_balance_test; grep -h "estimated" $L/device_mp_test.txt)
gpu_tests device_p2p_balance_test device_p2p_group_test device_mp_test; grep -h "estimated" $L/device_mp_test.txt
(export NCCL_MAX_CTAS=24; L=$L/ctas24; mkdir -p $L; gpu_tests device_p2p_balance_test device_p2p_group_test)
(export NCCL_MAX_CTAS=28; L=$L/ctas28; mkdir -p $L; gpu_tests device_p2p_balance_test)
unset LD_LIBRARY_PATH
export PERF_TIMEOUT=40
S="-b 128M -e 512M -f 4 -c 1 -n 10 -w 3"
one gather braid gather24 LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=24 -- $S
one sendrecv braid sendrecv28 LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=28 -- $S
gpu_pack
