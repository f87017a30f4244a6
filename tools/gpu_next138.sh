#!/usr/bin/env bash
# Device call (2 GPUs, ~2 min), for the next session: DeviceP2pGroup.GroupsCapturedOnForkedStreamsRunInTurn, fixed
# after call 2026-12-11g (both captures end before any check), against the library before the executor ordered
# forked captured batches (build-main: b2ee239 or any build before 44e512c; expected to fail: two p2p launches of
# one communicator at once) and main (build-new; expected to pass), then the whole device_p2p_group_test on main.
# Carry both as [build-pack] (tools/pack_carry.sh build-new build-main), each with the fixed test binary in build-new.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next138_out}; L=$OUT/next138; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main X=$PWD/build-new
echo "build-main of $(cat $M/HEAD); build-new of $(cat $X/HEAD)"
for lib in $M $X; do
  s=$(date +%s)
  BRAID_CASE_TIMEOUT=10 LD_LIBRARY_PATH=$lib/lib timeout 120 $X/bin/device_p2p_group_test \
    --gtest_filter='*GroupsCapturedOnForkedStreamsRunInTurn' > $L/forked_$(basename $lib).txt 2>&1
  echo "== forked captures on $(basename $lib) rc=$? $(( $(date +%s) - s )) s: $(grep -E '^\[  (PASSED|FAILED) ' $L/forked_$(basename $lib).txt | tr '\n' ' ')"
  grep -E 'Failure|still running|byte|async' $L/forked_$(basename $lib).txt | head -8
done
B=$X; export LD_LIBRARY_PATH=$X/lib
gpu_tests device_p2p_group_test
gpu_pack
