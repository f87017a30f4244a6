#!/usr/bin/env bash
# Device call (2 GPUs, ~1.5 min), twenty-sixth session, call g: paired p2p under 17 and 20 (next, 91c9ae6) runs its
# ring on 17-20 channels, so it gets the 4 MiB FIFO (the bound's larger FIFOs start at 16 channels or fewer, README
# NCCL_BUFFSIZE), and each FIFO step ends in a fence. Send/recv and all-to-all 128 / 512 MB under 17 and 20 with
# NCCL_BUFFSIZE unset / 8 MiB / 16 MiB; NCCL beside them.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next117_out}; L=$OUT/next117; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
X=$PWD/build-next
echo "build-next of $(cat $X/HEAD)"
export PERF_TIMEOUT=60
S="-b 128M -e 512M -f 4 -c 1 -n 10 -w 3"
B=$X
for b in 17 20; do
  for c in sendrecv alltoall; do
    one $c nccl ${c}${b}_nccl LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=$b -- $S
    one $c braid ${c}${b}_4m LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=$b -- $S
    one $c braid ${c}${b}_8m LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=$b NCCL_BUFFSIZE=8388608 -- $S
    one $c braid ${c}${b}_16m LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=$b NCCL_BUFFSIZE=16777216 -- $S
  done
done
gpu_pack
