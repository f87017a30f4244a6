#!/usr/bin/env bash
# Twenty-third session, call a. Carry [build-pack] (tools/pack_carry.sh build-main build-lg):
#  build-main: a default build of main at 5dec3f1 (device_p2p_group_test, device_mp_test, device_coll_test, the
#    p2p perf tools, braidrun). Its 7d2dbd5 (TuningFacts::p2pPair: with NCCL_NTHREADS=96 no rank can pair, so
#    under NCCL_MAX_CTAS=8 every rank keeps half the bound, a CTA per direction) has not run on a GPU.
#  build-lg: tools/var_llgroups.patch (LL p2p blocks on a paired CTA's warp groups too), the same targets.
# If the lg tests pass under 8 and 16 and its small p2p sizes under 8 are no slower than main's: land it.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next93_out}; L=$OUT/next93; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main G=$PWD/build-lg
B=$M; export LD_LIBRARY_PATH=$B/lib
(L=$L/main; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test device_coll_test)
(export NCCL_MAX_CTAS=8 NCCL_NTHREADS=96; L=$L/main_t96; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test)
one sendrecv braid sendrecv8_t96_main_1 LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=8 NCCL_NTHREADS=96 NCCL_DEBUG=INFO -- -b 1M -e 256M -f 4 -c 1 -n 10 -w 3
gpu_carried build-lg tools/var_llgroups.patch
B=$G; export LD_LIBRARY_PATH=$B/lib
for b in 8 16; do (export NCCL_MAX_CTAS=$b; L=$L/lg_ctas$b; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test device_coll_test); done
export PERF_TIMEOUT=60
for r in 1 2; do
  for c in sendrecv alltoall gather scatter; do
    B=$G; one $c nccl ${c}8_small_nccl_$r LD_LIBRARY_PATH=$G/lib NCCL_MAX_CTAS=8 -- -b 8 -e 1M -f 8 -c 1 -n 20 -w 5
    B=$G; one $c braid ${c}8_small_lg_$r LD_LIBRARY_PATH=$G/lib NCCL_MAX_CTAS=8 -- -b 8 -e 1M -f 8 -c 1 -n 20 -w 5
    B=$M; one $c braid ${c}8_small_main_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=8 -- -b 8 -e 1M -f 8 -c 1 -n 20 -w 5
  done
done
for c in sendrecv gather; do
  B=$G; one $c braid ${c}8_big_lg_1 LD_LIBRARY_PATH=$G/lib NCCL_MAX_CTAS=8 -- -b 4M -e 256M -f 8 -c 1 -n 10 -w 3
  B=$M; one $c braid ${c}8_big_main_1 LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=8 -- -b 4M -e 256M -f 8 -c 1 -n 10 -w 3
done
gpu_pack
