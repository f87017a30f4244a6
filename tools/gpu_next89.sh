#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min), twenty-second session, build-main of main (b23bea6, as in gpu_next88.sh) and
# build-o, the same source with p2p launches cut over 7/16 of a CTA bound again (tools/var_p2p716.patch):
#   tools/build_carry.sh build-o tools/var_p2p716.patch -DBRAID_KERNELS=minimal -DBRAID_BUILD_TESTS=OFF -- \
#     sendrecv_perf alltoall_perf gather_perf scatter_perf
# device_coll_test under NCCL_MAX_CTAS=8 (every collective with p2p cut over half the bound); three interleaved
# rounds of the all-reduce 256 KB-32 MB unbounded (issue 5's 1.5x range); three rounds of gather and scatter
# 4-64 MB under NCCL_MAX_CTAS=24 (NCCL, half, 7/16: 12 against 10 channels, call 2026-12-04a's single run had
# scatter 16 MB at 39.8 us against 35.7 and NCCL's 34.4); then every collective 1-256 MB under 8 and 16 beside
# NCCL, one round.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next89_out}; L=$OUT/next89; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-main
[[ -x $B/bin/device_coll_test ]] || { echo "build-main was not carried"; exit 1; }
gpu_carried build-o tools/var_p2p716.patch
echo "build-main of $(cat $B/HEAD)"
nvidia-smi -L
export LD_LIBRARY_PATH=$B/lib
(export NCCL_MAX_CTAS=8; L=$L/ctas8; mkdir -p $L; gpu_tests device_coll_test)
export PERF_TIMEOUT=60
E=LD_LIBRARY_PATH=$B/lib
for r in 1 2 3; do
  one all_reduce nccl ar_nccl_$r $E -- -b 256K -e 32M -f 2 -c 1 -n 50 -w 10
  one all_reduce braid ar_main_$r $E -- -b 256K -e 32M -f 2 -c 1 -n 50 -w 10
done
S="-b 4M -e 64M -f 2 -c 1 -n 20 -w 5"
for r in 1 2 3; do
  for c in gather scatter; do
    B=$PWD/build-main; E=LD_LIBRARY_PATH=$B/lib
    one $c nccl ${c}24_nccl_$r $E NCCL_MAX_CTAS=24 -- $S
    one $c braid ${c}24_main_$r $E NCCL_MAX_CTAS=24 -- $S
    B=$PWD/build-o; E=LD_LIBRARY_PATH=$B/lib
    one $c braid ${c}24_o716_$r $E NCCL_MAX_CTAS=24 -- $S
  done
done
B=$PWD/build-main; E=LD_LIBRARY_PATH=$B/lib
S="-b 1M -e 256M -f 4 -c 1 -n 10 -w 3"
for b in 8 16; do
  for c in all_gather reduce_scatter all_reduce broadcast reduce sendrecv alltoall gather scatter; do
    one $c nccl ${c}${b}_nccl_1 $E NCCL_MAX_CTAS=$b -- $S
    one $c braid ${c}${b}_main_1 $E NCCL_MAX_CTAS=$b -- $S
  done
done
gpu_pack
