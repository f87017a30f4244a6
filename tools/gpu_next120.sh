#!/usr/bin/env bash
# Device call (2 GPUs, ~7 min), twenty-seventh session, call b: main d14e9c9 as it lands (balanced p2p chunks of at
# most 256 KiB), carried as build-next, against build-main (fa51a57, 512 KiB chunks). The p2p gpu tests,
# device_coll_test and device_errors_test unbounded; the p2p tests under NCCL_MAX_CTAS=20, 17 and 24; send/recv,
# all-to-all, gather and scatter 2-512 MB (x4) under 17, 20 and 24 (24: half the bound a direction, also balanced),
# NCCL / main / next. tools/pack_carry.sh build-main build-next.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next120_out}; L=$OUT/next120; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main X=$PWD/build-next
[[ -x $X/bin/device_coll_test && -x $X/bin/scatter_perf ]] || { echo "build-next was not carried"; exit 1; }
echo "build-main of $(cat $M/HEAD); build-next of $(cat $X/HEAD)"
B=$X; export LD_LIBRARY_PATH=$X/lib
gpu_tests device_p2p_balance_test device_p2p_group_test device_mp_test device_errors_test device_coll_test
for b in 20 17 24; do (export NCCL_MAX_CTAS=$b; L=$L/ctas$b; mkdir -p $L; gpu_tests device_p2p_balance_test device_p2p_group_test device_mp_test); done
unset LD_LIBRARY_PATH
export PERF_TIMEOUT=60
S="-b 2M -e 512M -f 4 -c 1 -n 10 -w 3"
for b in 17 20 24; do
  for c in sendrecv alltoall gather scatter; do
    B=$X; one $c nccl ${c}${b}_nccl LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=$b -- $S
    [[ $c == gather || $c == scatter ]] || { B=$M; one $c braid ${c}${b}_main LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=$b -- $S; }
    B=$X; one $c braid ${c}${b}_next LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=$b -- $S
  done
done
gpu_pack
