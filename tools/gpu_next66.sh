#!/usr/bin/env bash
# Device call (2 GPUs, ~1.5 min), nineteenth session: tools/var_interleave.patch, broadcast and reduce on SIMPLE
# with each channel taking every nChannels-th FIFO-step chunk of the whole buffer (NCCL's order) instead of a
# contiguous share, against main at 128-512 MB (where Braid trails NCCL by 1-2%: docs/gpu/2026-12-01b).
# Ran as call c (docs/gpu/2026-12-01c): no change at any size or channel count; not landed.
# Carry build-ng (gpu_next65.sh) and build-il:
#   tools/build_carry.sh build-il tools/var_interleave.patch -DBRAID_KERNELS=minimal -DBRAID_BUILD_TESTS=OFF \
#     -- broadcast_perf reduce_perf
# then run: carry ["build-il", "build-ng"], `bash tools/gpu_next66.sh`. Three interleaved rounds, -c 1; then
# both at 32 and 48 channels (NCCL_MAX_NCHANNELS).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next66_out}; L=$OUT/next66; mkdir -p "$L"
source tools/gpu_common.sh
V=$PWD/build-il
M=$PWD/build-ng
gpu_carried "$V" tools/var_interleave.patch
gpu_carried "$M" tools/var_noguard.patch
nvidia-smi -L
export PERF_TIMEOUT=60
R="-b 32M -e 512M -f 4 -c 1 -n 20 -w 5"
for r in 1 2 3; do
  for c in broadcast reduce; do
    B=$M one $c nccl ${c}_nccl_$r LD_LIBRARY_PATH=$M/lib -- $R
    B=$M one $c braid ${c}_main_$r LD_LIBRARY_PATH=$M/lib -- $R
    B=$V one $c braid ${c}_il_$r LD_LIBRARY_PATH=$V/lib -- $R
  done
done
# Fewer channels: NCCL moves as much on 24 CTAs; does the interleaved order let Braid do more per channel?
for c in broadcast reduce; do
  for nc in 32 48; do
    B=$M one $c braid ${c}_main_ch$nc LD_LIBRARY_PATH=$M/lib NCCL_MAX_NCHANNELS=$nc -- $R
    B=$V one $c braid ${c}_il_ch$nc LD_LIBRARY_PATH=$V/lib NCCL_MAX_NCHANNELS=$nc -- $R
  done
done
gpu_pack
