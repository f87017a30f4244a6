#!/usr/bin/env bash
# Device call (2 GPUs, ~8 min), twenty-seventh session, call c, on the machine call b left warm (build-next: main
# d14e9c9; build-main: fa51a57): send/recv 128 / 512 MB under NCCL_MAX_CTAS=24 and 22 (half the bound a direction,
# where call b's one run had next 2% behind main at 512 MB), three rounds, NCCL / main / next; then the full tables
# of build-next (every collective 8 B-512 MB, NCCL and Braid's tuner, then each protocol forced while the call has
# run under 400 s) and the small all-reduce in CUDA graphs.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next121_out}; L=$OUT/next121; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
[[ -x build-next/bin/scatter_perf ]] || gpu_unpack
M=$PWD/build-main X=$PWD/build-next
echo "build-main of $(cat $M/HEAD); build-next of $(cat $X/HEAD)"
export PERF_TIMEOUT=60
S="-b 128M -e 512M -f 4 -c 1 -n 10 -w 3"
for r in 1 2 3; do
  for b in 24 22; do
    B=$X; one sendrecv nccl sr${b}_nccl_$r LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=$b -- $S
    B=$M; one sendrecv braid sr${b}_main_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=$b -- $S
    B=$X; one sendrecv braid sr${b}_next_$r LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=$b -- $S
  done
done
B=$X; export LD_LIBRARY_PATH=$X/lib
gpu_full_tables 400
G="-b 8 -e 512K -f 8 -c 1 -n 20 -w 5 -G 20"
one all_reduce nccl graph_nccl -- $G
one all_reduce braid graph_braid -- $G
gpu_pack
