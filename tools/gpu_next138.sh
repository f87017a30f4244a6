#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min), for the next session: d283218 (captured batches ordered per capture, the four most
# recently used) and its test DeviceP2pGroup.GroupsCapturedOnForkedStreamsRunInTurn (two groups on forked streams of
# graph X, a third captured into graph Y between them; X's kernel nodes must form one chain), neither GPU-run yet.
# The test against the library before any captured ordering (build-main: b2ee239 or any build before 44e512c;
# expected to fail its chain check) and main (build-new; expected to pass), then every gpu test on main, since the
# executor changed after call 2026-12-11g. Carry both as [build-pack] (tools/pack_carry.sh build-new build-main),
# the test binary from build-new.
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
gpu_tests device_p2p_group_test device_coll_test device_errors_test device_mp_test device_one_rank_test \
  fifo_gpu_test cluster_gpu_test device_p2p_balance_test matmul_gpu_test
gpu_pack
