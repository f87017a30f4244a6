#!/usr/bin/env bash
# Device call (2 GPUs, ~2 min), eighteenth session: what the split one-shot's in-place guard costs. At 8 MB the
# all-reduce runs 0.6-0.9 us slower in place than out of place (calls `…a`, `…c`), at 4 and 16 MB 0.1 us or
# less. build-ng (carried; -DBRAID_KERNELS=minimal -DBRAID_BUILD_TESTS=OFF) is main with tools/var_noguard.patch:
# BRAID_DIAG_NOGUARD=1 launches the in-place split without its guard words (a diagnostic: the receiving CTA may
# then overwrite input its sending CTA has yet to read, so #wrong may count). Three interleaved rounds, 4-16 MB,
# NCCL, the build as is, and the build without the guard.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next62_out}; L=$OUT/next62; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-ng
[[ -x $B/bin/all_reduce_perf ]] || { echo "build-ng was not carried"; exit 1; }
export PERF_TIMEOUT=60
S="-b 4M -e 16M -f 2 -c 1 -n 40 -w 10"
for r in 1 2 3; do
  one all_reduce nccl ar_nccl_$r LD_LIBRARY_PATH=$B/lib -- $S
  one all_reduce braid ar_guard_$r LD_LIBRARY_PATH=$B/lib -- $S
  one all_reduce braid ar_noguard_$r LD_LIBRARY_PATH=$B/lib BRAID_DIAG_NOGUARD=1 -- $S
done
gpu_pack
