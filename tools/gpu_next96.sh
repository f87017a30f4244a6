#!/usr/bin/env bash
# Twenty-third session, call d. Carry [build-pack] (tools/pack_carry.sh build-main build-new):
#  build-main: main at 5dec3f1; build-new: the working tree as it lands: a gather's or scatter's ring transfer
#  over the whole bound above 16 CTAs, from 32 CTAs at any size, below up to 8 MiB (p2p_plan.h), pairWithin;
#  device_p2p_group_test's RootedCollectivesBesideTransfersTheOtherWay under 24, 32, 8 and none.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next96_out}; L=$OUT/next96; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main N=$PWD/build-new
B=$N; export LD_LIBRARY_PATH=$B/lib
(L=$L/new; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test)
for b in 24 32; do (export NCCL_MAX_CTAS=$b; L=$L/new_ctas$b; mkdir -p $L; gpu_tests device_mp_test); done
export PERF_TIMEOUT=60
for r in 1 2; do
  for b in 24 32; do
    for c in gather scatter; do
      B=$N; one $c nccl ${c}${b}_nccl_$r LD_LIBRARY_PATH=$N/lib NCCL_MAX_CTAS=$b -- -b 4M -e 512M -f 2 -c 1 -n 10 -w 3
      B=$M; one $c braid ${c}${b}_main_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=$b -- -b 4M -e 512M -f 2 -c 1 -n 10 -w 3
      B=$N; one $c braid ${c}${b}_new_$r LD_LIBRARY_PATH=$N/lib NCCL_MAX_CTAS=$b -- -b 4M -e 512M -f 2 -c 1 -n 10 -w 3
    done
  done
done
gpu_pack
