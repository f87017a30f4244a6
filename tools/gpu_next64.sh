#!/usr/bin/env bash
# Ran in the nineteenth session as call a (docs/gpu/2026-12-01a: every test passed; the timings failed, perf tools built without MPI).
# Device call (2 GPUs, ~2.5 min), prepared in the eighteenth session and NOT run there (its device time was
# spent; the nineteenth added NCCL to the rounds): tools/var_warpguard.patch, the split one-shot's in-place
# guard per worker warp (warp w of the receiving CTA waits only for warp w of the sending CTA, which read
# exactly the elements it will overwrite), and the harness's in-place cases 1 or 3 elements off alignment.
# Nothing is built on the device: carry build-wg (the patch on main, built here, slimmed to lib/ and bin/) and
# build-ng (main + tools/var_noguard.patch, minimal kernels: main's code while BRAID_DIAG_NOGUARD is unset).
# Both were built in the eighteenth session (ignored folders; rebuild them if missing or if a patch changed):
#   tools/build_carry.sh build-wg tools/var_warpguard.patch -- all_reduce_perf device_coll_test \
#     device_p2p_group_test device_mp_test numeric_device_test device_one_rank_test device_errors_test   (~4 min)
#   tools/build_carry.sh build-ng tools/var_noguard.patch -DBRAID_KERNELS=minimal -DBRAID_BUILD_TESTS=OFF \
#     -- all_reduce_perf   (~1.3 min)
# then run: carry ["build-wg", "build-ng"], `bash tools/gpu_next64.sh`.
#  1. the gpu tests on the patched build (matmul_gpu_test needs the launcher and demo, not carried);
#  2. all-reduce 8-16 MB, three interleaved rounds, NCCL, main (build-ng) and the patch, both columns.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next64_out}; L=$OUT/next64; mkdir -p "$L"
source tools/gpu_common.sh
V=$PWD/build-wg
M=$PWD/build-ng
gpu_carried "$V" tools/var_warpguard.patch
gpu_carried "$M" tools/var_noguard.patch
LD_LIBRARY_PATH=$V/lib B=$V gpu_tests device_coll_test device_errors_test device_p2p_group_test numeric_device_test \
  device_one_rank_test device_mp_test
export PERF_TIMEOUT=40
S="-b 8M -e 16M -f 2 -c 1 -n 40 -w 10"
for r in 1 2 3; do
  B=$M one all_reduce nccl ar_nccl_$r LD_LIBRARY_PATH=$M/lib -- $S
  B=$M one all_reduce braid ar_main_$r LD_LIBRARY_PATH=$M/lib -- $S
  B=$V one all_reduce braid ar_wg_$r LD_LIBRARY_PATH=$V/lib -- $S
done
gpu_pack
