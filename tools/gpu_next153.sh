#!/usr/bin/env bash
# Device call (2 GPUs, ~2 min): the split one-shot's CTAs on loops of their own direction (tools/var_splitloops.patch,
# build-sl) against the same tree without it (build-bm), both -DBRAID_KERNELS=minimal, and main's default build
# (build-new, 98f52e8). Call b saw a build with a variable first step run 8 MB 0.7 us slower than main at the same
# schedule: the 8 MB all-reduce moves with the loop's code. Four interleaved rounds, all-reduce 4-32 MB, -c 1.
# Carry [build-pack] (tools/pack_carry.sh build-new build-bm build-sl). As run (docs/gpu/2026-12-14e) its loop was inline
# and named the files r<round>_ar_<build>; gpu_ab_rounds names them r<round>_all_reduce_<build>.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next153_out}; L=$OUT/next153; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
for b in build-new build-bm build-sl; do echo "$b of $(cat $b/HEAD)"; done
GUARD=${GUARD:-100} gpu_ab_rounds r 4 "-b 4M -e 32M -f 2 -c 1 -n 20 -w 5 -N 2" all_reduce -- $PWD/build-new $PWD/build-bm \
  $PWD/build-sl
gpu_pack
