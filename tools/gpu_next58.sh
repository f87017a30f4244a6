#!/usr/bin/env bash
# Device call (2 GPUs, ~8 min), prepared in the seventeenth session for the next one: tools/var_ll128tail2.patch,
# the one-shot's last chunk on LL128 lines in landing form, never run on a GPU before this call:
# BRAID_ONESHOT_LL128_TAIL (on only where every rank allows it), float/half/bf16 sums, in its own kernels
# (collKernel<..., Ll128Tail = true>, so every other kernel compiles as on main: same stack and spills), in
# place too behind the split guard, decided from agreed facts only (ranks that differ in placement agree).
# The first form (tools/var_ll128tail.patch) faulted because a 32 MB step (128 KiB) overran the 120 KiB of an
# LL128 slot; this form takes the tail only where a step fits (8-30 MB on 64 channels). A read-only review
# (helper) found no race for same-build ranks. Copy /usr/src/googletest to .gtest first, and carry
# build-tail2 if it was built here (see below; ~5 min less). Raw outputs: $OUT/next58.tgz.
#  1. every gpu test on the patched tree (device_coll_test's OneShotForced runs the tail in and out of place,
#     three times back to back, with mixed placement, at a full 120 KiB slot, and all again with it off);
#  2. the TUNING line that says the tail ran;
#  3. all-reduce 4-32 MB, three interleaved rounds: NCCL, main, the patch (tail on), the patch with it off;
#     reduce-scatter 1-64 MB main against the patch, two rounds.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next58_out}; L=$OUT/next58; mkdir -p "$L"
source tools/gpu_common.sh
T="all_reduce_perf reduce_scatter_perf device_coll_test device_p2p_group_test device_mp_test numeric_device_test \
  matmul_gpu_test device_one_rank_test device_errors_test"
if [[ -x build-tail2/bin/device_coll_test && -e build-tail2/lib/libbraid.so.0 &&
      "$(cat build-tail2/PATCH_SHA256 2>/dev/null)" == "$(sha256sum tools/var_ll128tail2.patch | cut -d' ' -f1)" ]]; then
  # Carried (`run` with carry ["build-tail2"]): this very patch built on the development machine into
  # /work/main/build-tail2 (its RUNPATH), slimmed to lib/ and the binaries below (30 MB), the patch's sha256 in
  # build-tail2/PATCH_SHA256; saves the variant's build here. Made in the seventeenth session:
  #   git archive HEAD | tar -x -C /tmp/tail2 && (cd /tmp/tail2 && patch -p1 < tools/var_ll128tail2.patch)
  #   cmake -S /tmp/tail2 -B build-tail2 -G Ninja -DBRAID_GTEST_SOURCE=/usr/src/googletest
  #   ninja -C build-tail2 $T
  #   then keep only lib/libbraid.so*, lib/libnccl.so* and bin/$T, and write PATCH_SHA256.
  V=$PWD/build-tail2; echo "the patch: carried build-tail2"
else
  GPU_PATCH_JOBS=24 gpu_build_patch tail2 tools/var_ll128tail2.patch $T
  V=/tmp/braid-tail2/build-var
fi
gpu_build all_reduce_perf reduce_scatter_perf
wait
MAIN=$B
LD_LIBRARY_PATH=$V/lib B=$V gpu_tests device_coll_test device_p2p_group_test device_mp_test numeric_device_test \
  matmul_gpu_test device_one_rank_test device_errors_test
B=$MAIN
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING LD_LIBRARY_PATH=$V/lib B=$V one all_reduce braid tail_info NCCL_DEBUG \
  NCCL_DEBUG_SUBSYS LD_LIBRARY_PATH -- \
  -b 8M -e 8M -c 1 -n 2 -w 1
grep -m2 "LL128 lines" "$L/tail_info.txt"
export PERF_TIMEOUT=90
S="-b 4M -e 32M -f 2 -c 1 -n 40 -w 10"
for r in 1 2 3; do
  one all_reduce nccl ar_nccl_$r -- $S
  one all_reduce braid ar_main_$r -- $S
  B=$V one all_reduce braid ar_tail_$r LD_LIBRARY_PATH=$V/lib -- $S
  B=$V one all_reduce braid ar_off_$r LD_LIBRARY_PATH=$V/lib BRAID_ONESHOT_LL128_TAIL=0 -- $S
done
R="-b 1M -e 64M -f 4 -c 1 -n 30 -w 5"
for r in 1 2; do
  one reduce_scatter braid rs_main_$r -- $R
  B=$V one reduce_scatter braid rs_tail_$r LD_LIBRARY_PATH=$V/lib -- $R
done
gpu_pack
