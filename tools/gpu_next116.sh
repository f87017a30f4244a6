#!/usr/bin/env bash
# Device call (2 GPUs, ~1 min), twenty-sixth session, call f: send/recv 64-512 MB (x2) under 20 and 17, NCCL / main
# (44b5e55, half) / next (91c9ae6, paired): where between 128 MB (paired 8% slower, call e) and 512 MB (paired 5%
# faster) the two cross.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next116_out}; L=$OUT/next116; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main X=$PWD/build-next
echo "build-main of $(cat $M/HEAD); build-next of $(cat $X/HEAD)"
export PERF_TIMEOUT=60
S="-b 64M -e 512M -f 2 -c 1 -n 10 -w 3"
for b in 20 17; do
  B=$X; one sendrecv nccl sr${b}_nccl LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=$b -- $S
  B=$M; one sendrecv braid sr${b}_main LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=$b -- $S
  B=$X; one sendrecv braid sr${b}_next LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=$b -- $S
done
gpu_pack
