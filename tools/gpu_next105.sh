#!/usr/bin/env bash
# Twenty-fourth session, call e: gathers' and scatters' transfers on the whole bound at any size from 25 CTAs
# (kP2pOneWayWideCtas 25, was 32; build-new, the working tree on 94b8b0c) against main (build-main, 94b8b0c):
# device_p2p_group_test (its rooted case now also past 8 MiB under 28 and 24) and device_mp_test under 28 and 25,
# then gathers and scatters 16-512 MB under 28 and 26, two rounds, NCCL beside.
# tools/pack_carry.sh build-main build-new.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next105_out}; L=$OUT/next105; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main N=$PWD/build-new
B=$N; export LD_LIBRARY_PATH=$N/lib
echo "build-new of $(cat $N/HEAD); build-main of $(cat $M/HEAD)"
gpu_tests device_p2p_group_test
for b in 28 25; do (export NCCL_MAX_CTAS=$b; L=$L/ctas$b; mkdir -p $L; gpu_tests device_mp_test); done
export PERF_TIMEOUT=40
S="-b 16M -e 512M -f 2 -c 1 -n 10 -w 3"
for r in 1 2; do
  for c in gather scatter; do
    for b in 28 26; do
      B=$M; one $c nccl ${c}${b}_nccl_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=$b -- $S
      B=$M; one $c braid ${c}${b}_main_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=$b -- $S
      B=$N; one $c braid ${c}${b}_new_$r LD_LIBRARY_PATH=$N/lib NCCL_MAX_CTAS=$b -- $S
    done
  done
done
gpu_pack
