#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min), twenty-sixth session, call d: main 91c9ae6 as it lands (kP2pPairMaxCtas 20: p2p
# launches pair over the whole bound up to 20), carried as build-next. The p2p gpu tests and device_errors_test
# unbounded, the p2p tests under 20, 17 and 21; send/recv, all-to-all, gather and scatter 2-512 MB (x4) under 17
# and 20, NCCL / next; under 22 (where half still runs) send/recv and all-to-all, NCCL / main (44b5e55) / pair
# (tools/var_pair24.patch), two rounds, for where pairing stops winning. tools/pack_carry.sh build-main build-pair
# build-next.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next114_out}; L=$OUT/next114; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main P=$PWD/build-pair X=$PWD/build-next
gpu_carried $P tools/var_pair24.patch
echo "build-main of $(cat $M/HEAD); build-next of $(cat $X/HEAD)"
B=$X; export LD_LIBRARY_PATH=$X/lib
gpu_tests device_p2p_balance_test device_p2p_group_test device_mp_test device_errors_test
for b in 20 17 21; do (export NCCL_MAX_CTAS=$b; L=$L/ctas$b; mkdir -p $L; gpu_tests device_p2p_balance_test device_p2p_group_test device_mp_test); done
unset LD_LIBRARY_PATH
export PERF_TIMEOUT=60
S="-b 2M -e 512M -f 4 -c 1 -n 10 -w 3"
for b in 17 20; do
  for c in sendrecv alltoall gather scatter; do
    B=$X; one $c nccl ${c}${b}_nccl LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=$b -- $S
    B=$X; one $c braid ${c}${b}_next LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=$b -- $S
  done
done
for r in 1 2; do
  for c in sendrecv alltoall; do
    B=$M; one $c nccl ${c}22_nccl_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=22 -- $S
    B=$M; one $c braid ${c}22_main_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=22 -- $S
    B=$P; one $c braid ${c}22_pair_$r LD_LIBRARY_PATH=$P/lib NCCL_MAX_CTAS=22 -- $S
  done
done
gpu_pack
