#!/usr/bin/env bash
# Twenty-fifth session, call e: main 4253832 as it lands (balanced transfers, 9294273; gathers' and scatters'
# transfers on the whole bound above 16 CTAs, 4253832), carried as build-final. device_p2p_balance_test,
# device_p2p_group_test, device_mp_test and device_errors_test unbounded; the p2p tests under 24, 20 and 17.
# Gathers and scatters 32-256 MB under 24, two rounds, NCCL / build-new (call d's: balanced, half the bound under
# 24) / final; under 20 and 17, 128-512 MB, NCCL / final. tools/pack_carry.sh build-new build-final.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next110_out}; L=$OUT/next110; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
N=$PWD/build-new F=$PWD/build-final
B=$F; export LD_LIBRARY_PATH=$F/lib
echo "build-final of $(cat $F/HEAD); build-new of $(cat $N/HEAD)"
gpu_tests device_p2p_balance_test device_p2p_group_test device_mp_test device_errors_test
for b in 24 20 17; do (export NCCL_MAX_CTAS=$b; L=$L/ctas$b; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test); done
export PERF_TIMEOUT=40
S="-b 32M -e 256M -f 2 -c 1 -n 10 -w 3"
for r in 1 2; do
  for c in gather scatter; do
    B=$F; one $c nccl ${c}24_nccl_$r LD_LIBRARY_PATH=$F/lib NCCL_MAX_CTAS=24 -- $S
    B=$N; one $c braid ${c}24_new_$r LD_LIBRARY_PATH=$N/lib NCCL_MAX_CTAS=24 -- $S
    B=$F; one $c braid ${c}24_final_$r LD_LIBRARY_PATH=$F/lib NCCL_MAX_CTAS=24 -- $S
  done
done
S="-b 128M -e 512M -f 2 -c 1 -n 8 -w 2"
for c in gather scatter; do
  for b in 20 17; do
    B=$F; one $c nccl ${c}${b}_nccl LD_LIBRARY_PATH=$F/lib NCCL_MAX_CTAS=$b -- $S
    B=$F; one $c braid ${c}${b}_final LD_LIBRARY_PATH=$F/lib NCCL_MAX_CTAS=$b -- $S
  done
done
gpu_pack
