#!/usr/bin/env bash
# Prepared in the twenty-second session for the next one (not run). Two things no GPU has run:
#  1. main's 7d2dbd5: whether every rank can pair p2p CTAs is agreed at init (TuningFacts::p2pPair); with
#     NCCL_NTHREADS=96 (cannot pair) under NCCL_MAX_CTAS=8 every rank must keep half the bound, a CTA per
#     direction. build-main: a default build of main (device_p2p_group_test, device_mp_test, device_coll_test,
#     the p2p perf tools, braidrun).
#  2. tools/var_llgroups.patch: LL p2p blocks on a paired CTA's warp groups too (DevPrimsLL<T, Fn, Sync> on a
#     thread range and named barrier 5 / 6; every ring channel pairs under bounds of 16 or fewer, so a group
#     mixing 64 KB and 256 MB transfers takes the bound and no more, not 1.5x it). build-lg:
#       tools/build_carry.sh build-lg tools/var_llgroups.patch -- braidrun sendrecv_perf alltoall_perf \
#         gather_perf scatter_perf device_coll_test device_p2p_group_test device_mp_test
#     (with build-main over the 64 MiB carry limit: carry build-main with the tests only, or run part 1 alone).
# Device call (2 GPUs, ~6 min). If part 2 passes and the small p2p sizes under 8 are no slower: land it
# (prims_ll.h, prims_ll128.h's macro use, dev_kernels.cu, p2p_plan.cc/.h, p2p_plan_test.cc, README row).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next92_out}; L=$OUT/next92; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
if [[ -x build-main/bin/device_p2p_group_test ]]; then
  B=$PWD/build-main; export LD_LIBRARY_PATH=$B/lib
  (export NCCL_MAX_CTAS=8 NCCL_NTHREADS=96; L=$L/main_t96; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test)
  E=LD_LIBRARY_PATH=$B/lib
  one sendrecv braid sendrecv8_t96_main_1 $E NCCL_MAX_CTAS=8 NCCL_NTHREADS=96 -- -b 1M -e 256M -f 4 -c 1 -n 10 -w 3
fi
if [[ -x build-lg/bin/device_coll_test ]]; then
  gpu_carried build-lg tools/var_llgroups.patch
  B=$PWD/build-lg; export LD_LIBRARY_PATH=$B/lib
  for b in 8 16; do (export NCCL_MAX_CTAS=$b; L=$L/lg_ctas$b; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test device_coll_test); done
  export PERF_TIMEOUT=60
  for c in sendrecv alltoall gather scatter; do
    one $c nccl ${c}8_small_nccl_1 LD_LIBRARY_PATH=$B/lib NCCL_MAX_CTAS=8 -- -b 8 -e 1M -f 8 -c 1 -n 20 -w 5
    one $c braid ${c}8_small_lg_1 LD_LIBRARY_PATH=$B/lib NCCL_MAX_CTAS=8 -- -b 8 -e 1M -f 8 -c 1 -n 20 -w 5
    [[ -x build-main/bin/${c}_perf ]] && B=$PWD/build-main && one $c braid ${c}8_small_main_1 LD_LIBRARY_PATH=$B/lib NCCL_MAX_CTAS=8 -- -b 8 -e 1M -f 8 -c 1 -n 20 -w 5
    B=$PWD/build-lg
  done
fi
gpu_pack
