#!/usr/bin/env bash
# Twenty-third session, call g (diagnostic): why 24 channels ran large one-way transfers slowly and unevenly
# (docs/gpu/2026-12-05c). build-final: main at c1b0628 (under 24: one-way transfers past 8 MiB on 12 channels);
# build-whole: the same with every one-way transfer on 24 (the plan's oneWayMax lifted in device_executor.cc
# alone). Each with the FIFO at 2, 4 (the default here) and 8 MiB (NCCL_BUFFSIZE, rank 0's), NCCL beside.
# tools/pack_carry.sh build-final build-whole.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next99_out}; L=$OUT/next99; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
F=$PWD/build-final W=$PWD/build-whole
export PERF_TIMEOUT=60
S="-b 128M -e 512M -f 2 -c 1 -n 10 -w 3"
for r in 1 2; do
  for c in gather scatter; do
    B=$F; one $c nccl ${c}24_nccl_$r LD_LIBRARY_PATH=$F/lib NCCL_MAX_CTAS=24 -- $S
    for f in 2 4 8; do
      B=$F; one $c braid ${c}24_half${f}m_$r LD_LIBRARY_PATH=$F/lib NCCL_MAX_CTAS=24 NCCL_BUFFSIZE=$((f << 20)) -- $S
      B=$W; one $c braid ${c}24_whole${f}m_$r LD_LIBRARY_PATH=$W/lib NCCL_MAX_CTAS=24 NCCL_BUFFSIZE=$((f << 20)) -- $S
    done
  done
done
gpu_pack
