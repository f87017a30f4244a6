#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min), twenty-sixth session, call b: does pairing a ring channel's send and receive in
# one CTA win under bounds of 17-24 now that transfers are balanced? build-main (main 44b5e55) against build-pair
# (tools/var_pair24.patch: kP2pPairMaxCtas 24, so under 17-24 send/recv and all-to-all pair over the whole bound
# instead of a CTA per direction on half of it; paired lost under 24 before balancing, 957.7 against 846.7 us at
# 256 MB, docs/gpu/2026-12-04e). The p2p gpu tests on build-pair under 24 and 20; send/recv and all-to-all 2-512 MB (x4)
# under 20 and 24, NCCL / main / pair, two rounds; reduce-scatter 1-4 MB again (call a's 2 MB jitter run).
# tools/pack_carry.sh build-main build-pair.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next112_out}; L=$OUT/next112; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main P=$PWD/build-pair
gpu_carried $P tools/var_pair24.patch
echo "build-main of $(cat $M/HEAD)"
B=$P; export LD_LIBRARY_PATH=$P/lib
for b in 24 20; do (export NCCL_MAX_CTAS=$b; L=$L/pair$b; mkdir -p $L; gpu_tests device_p2p_balance_test device_p2p_group_test device_mp_test); done
unset LD_LIBRARY_PATH
export PERF_TIMEOUT=60
S="-b 2M -e 512M -f 4 -c 1 -n 10 -w 3"
for r in 1 2; do
  for b in 20 24; do
    for c in sendrecv alltoall; do
      B=$M; one $c nccl ${c}${b}_nccl_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=$b -- $S
      B=$M; one $c braid ${c}${b}_main_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=$b -- $S
      B=$P; one $c braid ${c}${b}_pair_$r LD_LIBRARY_PATH=$P/lib NCCL_MAX_CTAS=$b -- $S
    done
  done
done
S="-b 1M -e 4M -f 2 -c 1 -n 100 -w 10"
for r in 1 2; do
  B=$M; one reduce_scatter nccl rs_nccl_$r LD_LIBRARY_PATH=$M/lib -- $S
  B=$M; one reduce_scatter braid rs_main_$r LD_LIBRARY_PATH=$M/lib -- $S
done
gpu_pack
