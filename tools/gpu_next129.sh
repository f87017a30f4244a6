#!/usr/bin/env bash
# Device call (2 GPUs, ~3 min), twenty-eighth session, call f: the landing build (build-new: the balanced close
# word's fold stays below kDevBalIndexMask, the receiver's stop word). device_p2p_balance_test (with the new
# CloseWhoseFoldOnceReadAsAStop: 5472764716 bytes each way, twice), device_p2p_group_test and device_mp_test; that new
# test again on build-main's library (cfa174a, the old fold), which it should fail; the balanced tests under
# NCCL_MAX_P2P_NCHANNELS=8; then send/recv 8-512 MB, NCCL and Braid, unbounded and under NCCL_MAX_P2P_NCHANNELS=16.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next129_out}; L=$OUT/next129; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
X=$PWD/build-new; M=$PWD/build-main
echo "build-new of $(cat $X/HEAD), build-main of $(cat $M/HEAD)"
(B=$X; export LD_LIBRARY_PATH=$X/lib
 gpu_tests device_p2p_balance_test device_p2p_group_test device_mp_test; grep -h "estimated" $L/device_mp_test.txt)
(B=$X; export LD_LIBRARY_PATH=$M/lib BRAID_CASE_TIMEOUT=10; L=$L/oldlib; mkdir -p $L
 s=$(date +%s); timeout 120 $X/bin/device_p2p_balance_test --gtest_filter='*CloseWhoseFold*' > $L/old_fold.txt 2>&1
 echo "== old library (cfa174a), CloseWhoseFoldOnceReadAsAStop: rc=$? $(( $(date +%s) - s )) s"
 grep -E "Failure|FAILED|PASSED|error|mismatch|round" $L/old_fold.txt | head -8)
(B=$X; export LD_LIBRARY_PATH=$X/lib NCCL_MAX_P2P_NCHANNELS=8; L=$L/p2p8; mkdir -p $L
 s=$(date +%s); timeout 200 $X/bin/device_p2p_balance_test --gtest_filter='*EveryByte*' > $L/balance.txt 2>&1
 echo "== under NCCL_MAX_P2P_NCHANNELS=8, EveryByteOnStreamsAndInGraphs: rc=$? $(( $(date +%s) - s )) s: $(grep -E '^\[  (PASSED|FAILED)' $L/balance.txt | tr '\n' ' ')")
export PERF_TIMEOUT=60
S="-b 8M -e 512M -f 4 -c 1 -n 10 -w 3"
B=$X
one sendrecv nccl sendrecv_none_nccl LD_LIBRARY_PATH=$X/lib -- $S
one sendrecv braid sendrecv_none_braid LD_LIBRARY_PATH=$X/lib -- $S
one sendrecv nccl sendrecv_p2p16_nccl LD_LIBRARY_PATH=$X/lib NCCL_MAX_P2P_NCHANNELS=16 -- $S
one sendrecv braid sendrecv_p2p16_braid LD_LIBRARY_PATH=$X/lib NCCL_MAX_P2P_NCHANNELS=16 -- $S
gpu_pack
