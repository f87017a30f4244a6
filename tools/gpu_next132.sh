#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min), twenty-ninth session, call b: main b2ee239 (EnvScope restores the variables it set;
# the GPU tests only), carried as build-main. The tests that set bounds themselves, run under outer bounds:
# NCCL_MAX_P2P_NCHANNELS=8 (call a's failure) and NCCL_MAX_CTAS=24, and unbounded with device_coll_test; then
# broadcast and reduce with each protocol forced (call a's guard skipped them), and three rounds of NCCL / Braid
# for all-reduce 256 KB-32 MB (issue 5's 1.5x range) and gather 256 KB-2 MB (call a's 512 KB gather ran 0.77x).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next132_out}; L=$OUT/next132; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
B=$PWD/build-main
[[ -x $B/bin/device_coll_test && -x $B/bin/scatter_perf ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
export LD_LIBRARY_PATH=$B/lib
(export NCCL_MAX_P2P_NCHANNELS=8; L=$L/p2p8; mkdir -p $L; gpu_tests device_p2p_group_test)
(export NCCL_MAX_CTAS=24; L=$L/ctas24; mkdir -p $L; gpu_tests device_p2p_group_test device_p2p_balance_test device_mp_test)
gpu_tests device_p2p_group_test device_coll_test
export PERF_TIMEOUT=60
F="-b 8 -e 512M -f 2 -c 1 -n 20 -w 5"
for c in broadcast reduce; do
  for p in LL128 Simple LL; do one $c braid full_${c}_$p NCCL_PROTO=$p -- $F -J $L/full_${c}_$p.json; done
done
for r in 1 2 3; do
  one all_reduce nccl ar_nccl_$r -- -b 256K -e 32M -f 2 -c 1 -n 20 -w 5
  one all_reduce braid ar_braid_$r -- -b 256K -e 32M -f 2 -c 1 -n 20 -w 5
  one gather nccl ga_nccl_$r -- -b 256K -e 2M -f 2 -c 1 -n 20 -w 5
  one gather braid ga_braid_$r -- -b 256K -e 2M -f 2 -c 1 -n 20 -w 5
done
gpu_pack
