#!/usr/bin/env bash
# Device call (2 GPUs, ~3 min), twenty-second session: the paired p2p CTAs as they land (gpu_next90.sh's kernel;
# the pairing now only under bounds of 16 or fewer, kP2pPairMaxCtas: under 24 it lost, send/recv 256 MB 957.7
# against 846.7 us). build-new: a default build of the working tree (the p2p perf tools, braidrun,
# device_p2p_group_test, device_mp_test); build-b0 as in gpu_next90.sh. Tests under NCCL_MAX_CTAS=8, 16, 24; then
# two rounds of the four p2p collectives 1-256 MB under 16 (NCCL, before, after: call e's gather 4 MB ran
# 21.9 us paired against 15.2) and one round under 24 (after must equal before: the same plan).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next91_out}; L=$OUT/next91; mkdir -p "$L"
source tools/gpu_common.sh
[[ -x build-new/bin/device_p2p_group_test && -x build-b0/bin/sendrecv_perf ]] || { echo "build-new / build-b0 not carried"; exit 1; }
nvidia-smi -L
B=$PWD/build-new; export LD_LIBRARY_PATH=$B/lib
for b in 8 16 24; do (export NCCL_MAX_CTAS=$b; L=$L/ctas$b; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test); done
export PERF_TIMEOUT=60
S="-b 1M -e 256M -f 4 -c 1 -n 10 -w 3"
for r in 1 2; do
  for c in sendrecv gather scatter alltoall; do
    B=$PWD/build-b0; E=LD_LIBRARY_PATH=$B/lib
    one $c nccl ${c}16_nccl_$r $E NCCL_MAX_CTAS=16 -- $S
    one $c braid ${c}16_b0_$r $E NCCL_MAX_CTAS=16 -- $S
    B=$PWD/build-new; E=LD_LIBRARY_PATH=$B/lib
    one $c braid ${c}16_pair_$r $E NCCL_MAX_CTAS=16 -- $S
  done
done
for c in sendrecv gather; do
  B=$PWD/build-b0; E=LD_LIBRARY_PATH=$B/lib
  one $c braid ${c}24_b0_1 $E NCCL_MAX_CTAS=24 -- $S
  B=$PWD/build-new; E=LD_LIBRARY_PATH=$B/lib
  one $c braid ${c}24_new_1 $E NCCL_MAX_CTAS=24 -- $S
done
gpu_pack
