#!/usr/bin/env bash
# Device call (2 GPUs, ~1 min), twenty-sixth session, call h: paired p2p under 17 and 20 (next, 91c9ae6) runs its
# ring on 17-20 channels, so it gets the 4 MiB FIFO (the bound's larger FIFOs start at 16 channels or fewer, README
# NCCL_BUFFSIZE), and each FIFO step ends in a fence. Send/recv and all-to-all 128 / 512 MB under 17 and 20 with
# NCCL_BUFFSIZE unset / 2 MiB / 1 MiB (call g: 8 and 16 MiB were slower than the 4 MiB default).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next118_out}; L=$OUT/next118; mkdir -p "$L"
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
    one $c braid ${c}${b}_4m LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=$b -- $S
    one $c braid ${c}${b}_2m LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=$b NCCL_BUFFSIZE=2097152 -- $S
    one $c braid ${c}${b}_1m LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=$b NCCL_BUFFSIZE=1048576 -- $S
  done
done
gpu_pack
