#!/usr/bin/env bash
# Device call (2 GPUs, ~1.5 min), twenty-ninth session, call e: is the slow 512 KB gather column of sweeps (calls a-c,
# 4 of 32) a cost paid once per process? build-cc of calls c-d, its variable unset (main's library). Six sweeps
# 256 KB-2 MB of three cycles each (-N 3: only the first cycle slow, if so); then no warm-up at all (-w 0), three
# processes per size at 256 KB, 512 KB, 1 MB and 2 MB, three rows each (a first-use cost lands in row 1).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next135_out}; L=$OUT/next135; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
B=$PWD/build-cc
gpu_carried $B tools/var_copycta.patch
export LD_LIBRARY_PATH=$B/lib PERF_TIMEOUT=60
for r in 1 2 3 4 5 6; do one gather braid sweep_$r -- -b 256K -e 2M -f 2 -c 1 -n 20 -w 5 -N 3; done
for s in 256K 512K 1M 2M; do
  for r in 1 2 3; do one gather braid cold_${s}_$r -- -b $s -e $s -c 1 -n 20 -w 0 -N 3; done
done
gpu_pack
