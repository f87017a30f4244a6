#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min), eighteenth session: tools/var_unroll5.patch alone (reduce_copy's packs in guarded
# rounds of 5 for reductions, no separate remainder loop) against main, on every collective that reduces or
# copies through reduce_copy. The seventeenth session measured it only on all-reduce (8 MB -0.3 us, 2 MB -4%) and
# together with var_sizelate (then reduce-scatter 16-64 MB lost 3%). Carry build-u5 (the patch on main, built
# here: git archive HEAD | tar -x -C /tmp/u5; patch -p1 < tools/var_unroll5.patch; cmake -S /tmp/u5 -B build-u5
# -G Ninja -DBRAID_GTEST_SOURCE=/usr/src/googletest; ninja -C build-u5 <the perf tools and gpu tests>; slimmed to
# lib/ and bin/). Copy /usr/src/googletest to .gtest first. Raw outputs: $OUT/next59.tgz.
#  1. the gpu tests on the patched build (matmul_gpu_test needs the launcher and demo, not carried);
#  2. all-reduce 512 KB-16 MB, three interleaved rounds: NCCL, main, unroll5;
#  3. reduce-scatter, all-gather, reduce, broadcast 1-64 MB, two interleaved rounds: main, unroll5.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next59_out}; L=$OUT/next59; mkdir -p "$L"
source tools/gpu_common.sh
V=$PWD/build-u5
[[ -x $V/bin/device_coll_test ]] || { echo "build-u5 was not carried"; exit 1; }
gpu_build all_reduce_perf reduce_scatter_perf all_gather_perf reduce_perf broadcast_perf
MAIN=$B
LD_LIBRARY_PATH=$V/lib B=$V gpu_tests device_coll_test device_p2p_group_test device_mp_test numeric_device_test \
  device_one_rank_test device_errors_test
B=$MAIN
export PERF_TIMEOUT=90
S="-b 512K -e 16M -f 2 -c 1 -n 40 -w 10"
for r in 1 2 3; do
  one all_reduce nccl ar_nccl_$r -- $S
  one all_reduce braid ar_main_$r -- $S
  B=$V one all_reduce braid ar_u5_$r LD_LIBRARY_PATH=$V/lib -- $S
done
R="-b 1M -e 64M -f 4 -c 1 -n 30 -w 5"
for r in 1 2; do
  for c in reduce_scatter all_gather reduce broadcast; do
    one $c braid ${c}_main_$r -- $R
    B=$V one $c braid ${c}_u5_$r LD_LIBRARY_PATH=$V/lib -- $R
  done
done
gpu_pack
