#!/usr/bin/env bash
# Twenty-fourth session, call d: main after the revert of the gather step cap (build-main: HEAD, the p2p tests
# unbounded and under 20), then why gathers under 20 trail NCCL (0.89x at 512 MB in call c): one-way transfers
# past 8 MiB on half the bound (main: 10 channels under 20, 14 under 28) against the whole bound (build-whole:
# kP2pOneWayWideCtas 17, not committed), gathers and scatters 16-512 MB under 20 and 28, two rounds, NCCL beside.
# tools/pack_carry.sh build-main build-whole.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next104_out}; L=$OUT/next104; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main W=$PWD/build-whole
B=$M; export LD_LIBRARY_PATH=$M/lib
echo "build-main of $(cat $M/HEAD); build-whole of $(cat $W/HEAD)"
gpu_tests device_p2p_group_test device_mp_test
(export NCCL_MAX_CTAS=20; L=$L/ctas20; mkdir -p $L; gpu_tests device_p2p_group_test)
export PERF_TIMEOUT=60
S="-b 16M -e 512M -f 2 -c 1 -n 10 -w 3"
for r in 1 2; do
  for c in gather scatter; do
    for b in 20 28; do
      B=$M; one $c nccl ${c}${b}_nccl_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=$b -- $S
      B=$M; one $c braid ${c}${b}_main_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=$b -- $S
      B=$W; one $c braid ${c}${b}_whole_$r LD_LIBRARY_PATH=$W/lib NCCL_MAX_CTAS=$b -- $S
    done
  done
done
gpu_pack
