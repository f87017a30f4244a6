#!/usr/bin/env bash
# Twenty-third session, call b. Carry [build-pack] (tools/pack_carry.sh build-main build-new):
#  build-main: main at 5dec3f1 (gather and scatter under a bound above 16 cut over half of it).
#  build-new: the working tree: a gather's or scatter's ring transfer cut over the whole bound (oneWayChannels),
#    ring channels paired only as far as a group mixing those with transfers the other way needs
#    (pairWithin); device_p2p_group_test's new RootedCollectivesBesideTransfersTheOtherWay runs that mix.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next94_out}; L=$OUT/next94; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main N=$PWD/build-new
B=$N; export LD_LIBRARY_PATH=$B/lib
(L=$L/new; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test)
for b in 24 8; do (export NCCL_MAX_CTAS=$b; L=$L/new_ctas$b; mkdir -p $L; gpu_tests device_mp_test); done
export PERF_TIMEOUT=60
for r in 1 2; do
  for c in gather scatter; do
    B=$N; one $c nccl ${c}24_nccl_$r LD_LIBRARY_PATH=$N/lib NCCL_MAX_CTAS=24 -- -b 1M -e 256M -f 4 -c 1 -n 20 -w 5
    B=$M; one $c braid ${c}24_main_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=24 -- -b 1M -e 256M -f 4 -c 1 -n 20 -w 5
    B=$N; one $c braid ${c}24_new_$r LD_LIBRARY_PATH=$N/lib NCCL_MAX_CTAS=24 -- -b 1M -e 256M -f 4 -c 1 -n 20 -w 5
  done
done
# CTAPolicy efficiency (24 CTAs) through the env, and 32, one round.
for c in gather scatter; do
  B=$N; one $c nccl ${c}32_nccl_1 LD_LIBRARY_PATH=$N/lib NCCL_MAX_CTAS=32 -- -b 1M -e 256M -f 4 -c 1 -n 20 -w 5
  B=$M; one $c braid ${c}32_main_1 LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=32 -- -b 1M -e 256M -f 4 -c 1 -n 20 -w 5
  B=$N; one $c braid ${c}32_new_1 LD_LIBRARY_PATH=$N/lib NCCL_MAX_CTAS=32 -- -b 1M -e 256M -f 4 -c 1 -n 20 -w 5
  B=$N; one $c braid ${c}pol_new_1 LD_LIBRARY_PATH=$N/lib NCCL_CTA_POLICY=1 -- -b 1M -e 256M -f 4 -c 1 -n 20 -w 5
done
gpu_pack
