#!/usr/bin/env bash
# Ran in the nineteenth session as call b (docs/gpu/2026-12-01b).
# Device call (2 GPUs, ~1.5 min), nineteenth session: the perf half of gpu_next64.sh again. Its first run
# (docs/gpu/2026-12-01a) passed every gpu test on the warp guard but could not time anything: the carried perf
# tools were built without MPI (build_carry.sh now refuses that). Carry build-ng and build-wgp, both minimal
# kernels, perf tools only:
#   tools/build_carry.sh build-ng tools/var_noguard.patch -DBRAID_KERNELS=minimal -DBRAID_BUILD_TESTS=OFF \
#     -- all_reduce_perf broadcast_perf reduce_perf
#   tools/build_carry.sh build-wgp tools/var_warpguard.patch -DBRAID_KERNELS=minimal -DBRAID_BUILD_TESTS=OFF \
#     -- all_reduce_perf
# then run: carry ["build-wgp", "build-ng"], `bash tools/gpu_next65.sh`.
#  1. all-reduce 4-32 MB, three interleaved rounds, NCCL, main (build-ng) and the patch, both columns;
#  2. broadcast and reduce 128-512 MB, two rounds, NCCL and main (the patch does not touch them).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next65_out}; L=$OUT/next65; mkdir -p "$L"
source tools/gpu_common.sh
V=$PWD/build-wgp
M=$PWD/build-ng
gpu_carried "$V" tools/var_warpguard.patch
gpu_carried "$M" tools/var_noguard.patch
nvidia-smi -L; ldd $M/bin/all_reduce_perf | grep "not found"
export PERF_TIMEOUT=60
S="-b 4M -e 32M -f 2 -c 1 -n 40 -w 10"
for r in 1 2 3; do
  B=$M one all_reduce nccl ar_nccl_$r LD_LIBRARY_PATH=$M/lib -- $S
  B=$M one all_reduce braid ar_main_$r LD_LIBRARY_PATH=$M/lib -- $S
  B=$V one all_reduce braid ar_wg_$r LD_LIBRARY_PATH=$V/lib -- $S
done
R="-b 128M -e 512M -f 2 -c 1 -n 20 -w 5"
for r in 1 2; do
  for c in broadcast reduce; do
    B=$M one $c nccl ${c}_nccl_$r LD_LIBRARY_PATH=$M/lib -- $R
    B=$M one $c braid ${c}_main_$r LD_LIBRARY_PATH=$M/lib -- $R
  done
done
gpu_pack
