#!/usr/bin/env bash
# Device call (2 GPUs, ~2 min): device_coll_test's p2p tests after P2pCountsAcrossLlThresholdFail moved to
# sizes that straddle the LL threshold under the finer p2p cut (2026-11-25g: 10 and 20 KiB are both LL now).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next26_out}; L=$OUT/next26; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid device_coll_test
timeout 200 $B/bin/device_coll_test --gtest_filter='*P2p*:*SendRecv*:*AllToAll*:*Gather*:*Scatter*' > "$L/device_coll_test_p2p.txt" 2>&1
echo "rc=$?"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|Failure|^\[       OK" -A2 "$L/device_coll_test_p2p.txt" | head -40
grep -E "LL<-SIMPLE|SIMPLE<-LL" "$L/device_coll_test_p2p.txt"
gpu_pack
