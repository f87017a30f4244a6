#!/usr/bin/env bash
# Device call (2 GPUs, ~3 min), twenty-eighth session, call e: paired p2p CTAs of 640 threads (tools/var_pt640.patch,
# the p2p kernels built for 640: 96 registers) against main (cfa174a), now like for like with NCCL: all three under
# NCCL_MAX_P2P_NCHANNELS=8 and =16 (call c: Braid 0.98-0.99x NCCL at send/recv 512 MB on 8). Two rounds of send/recv
# and all-to-all 8-512 MB; first device_p2p_balance_test on the variant under the bound of 8.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next128_out}; L=$OUT/next128; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main
echo "build-main of $(cat $M/HEAD)"
gpu_carried build-pt640 tools/var_pt640.patch
(B=$PWD/build-pt640; export LD_LIBRARY_PATH=$B/lib NCCL_MAX_P2P_NCHANNELS=8 BRAID_P2P_PAIR_THREADS=640; L=$L/pt640
 mkdir -p $L; gpu_tests device_p2p_balance_test)
export PERF_TIMEOUT=60
S="-b 8M -e 512M -f 4 -c 1 -n 10 -w 3"
for r in 1 2; do
  for c in sendrecv alltoall; do
    for b in 8 16; do
      B=$M; one $c nccl ${c}_p2p${b}_nccl_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_P2P_NCHANNELS=$b -- $S
      B=$M; one $c braid ${c}_p2p${b}_main_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_P2P_NCHANNELS=$b -- $S
      B=$PWD/build-pt640; one $c braid ${c}_p2p${b}_pt640_$r LD_LIBRARY_PATH=$B/lib BRAID_P2P_PAIR_THREADS=640 \
        NCCL_MAX_P2P_NCHANNELS=$b -- $S
    done
  done
done
gpu_pack
