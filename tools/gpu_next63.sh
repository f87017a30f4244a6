#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min), eighteenth session: tools/var_pieceguard.patch, the split one-shot's in-place
# guard counted in four pieces per step instead of one (call `…f` put the whole-step guard at ~0.6 us of 8 and
# 16 MB in place). Carry build-pg (the patch on main, built here; slimmed to lib/ and bin/); copy
# /usr/src/googletest to .gtest first. Raw outputs: $OUT/next63.tgz.
#  1. the gpu tests on the patched build (device_coll_test runs the split in place: OneShotForced, mixed
#     placement; matmul_gpu_test needs the launcher and demo, not carried);
#  2. all-reduce 4-32 MB, three interleaved rounds: NCCL, main, the patch (both columns);
#  3. reduce-scatter 1-64 MB main against the patch, one round (the patch changes no code it runs).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next63_out}; L=$OUT/next63; mkdir -p "$L"
source tools/gpu_common.sh
V=$PWD/build-pg
[[ -x $V/bin/device_coll_test &&
   "$(cat $V/PATCH_SHA256)" == "$(sha256sum tools/var_pieceguard.patch | cut -d' ' -f1)" ]] ||
  { echo "build-pg missing or not of this patch"; exit 1; }
gpu_build all_reduce_perf reduce_scatter_perf
MAIN=$B
LD_LIBRARY_PATH=$V/lib B=$V gpu_tests device_coll_test device_p2p_group_test device_mp_test numeric_device_test \
  device_one_rank_test device_errors_test
B=$MAIN
export PERF_TIMEOUT=60
S="-b 4M -e 32M -f 2 -c 1 -n 40 -w 10"
for r in 1 2 3; do
  one all_reduce nccl ar_nccl_$r -- $S
  one all_reduce braid ar_main_$r -- $S
  B=$V one all_reduce braid ar_pg_$r LD_LIBRARY_PATH=$V/lib -- $S
done
R="-b 1M -e 64M -f 4 -c 1 -n 30 -w 5"
one reduce_scatter braid rs_main_1 -- $R
B=$V one reduce_scatter braid rs_pg_1 LD_LIBRARY_PATH=$V/lib -- $R
gpu_pack
