#!/usr/bin/env bash
# Twenty-third session, call c. Carry [build-pack] (tools/pack_carry.sh build-main build-new build-cap):
#  build-main: main at 5dec3f1; build-new: the working tree (a gather's or scatter's ring transfer over the whole
#  bound, pairWithin), its device_p2p_group_test's new case with the test's own past-end check fixed (call b
#  read the gather's second share as the first one's overrun); build-cap: build-new with the whole-bound cut only
#  for transfers up to 64 MiB (call b: at a bound of 24 the 128 MiB scatter lost 4%, at 32 it gained).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next95_out}; L=$OUT/next95; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main N=$PWD/build-new C=$PWD/build-cap
B=$N; export LD_LIBRARY_PATH=$B/lib
(L=$L/new; mkdir -p $L; gpu_tests device_p2p_group_test)
export PERF_TIMEOUT=60
for r in 1 2 3; do
  for b in 24 32; do
    [[ $b == 32 && $r == 3 ]] && continue
    for c in gather scatter; do
      B=$N; one $c nccl ${c}${b}_nccl_$r LD_LIBRARY_PATH=$N/lib NCCL_MAX_CTAS=$b -- -b 16M -e 512M -f 2 -c 1 -n 10 -w 3
      B=$M; one $c braid ${c}${b}_main_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=$b -- -b 16M -e 512M -f 2 -c 1 -n 10 -w 3
      B=$N; one $c braid ${c}${b}_new_$r LD_LIBRARY_PATH=$N/lib NCCL_MAX_CTAS=$b -- -b 16M -e 512M -f 2 -c 1 -n 10 -w 3
      B=$C; one $c braid ${c}${b}_cap_$r LD_LIBRARY_PATH=$C/lib NCCL_MAX_CTAS=$b -- -b 16M -e 512M -f 2 -c 1 -n 10 -w 3
    done
  done
done
gpu_pack
