#!/usr/bin/env bash
# Device call (2 GPUs, ~2 min), twenty-sixth session, call e: call d's two low readings again, longer (-n 50): gather
# under 20 and scatter under 17 at 2-32 MB (51.09 us at 8 MB, 18.85 at 2 MB, against NCCL's ~24 and ~14.5; their
# code did not change), NCCL / next (91c9ae6); and send/recv 128 MB under 20 three times each, main (44b5e55, half)
# / next (paired), for how often paired lands in its slow state (~480-490 us against ~411-440).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next115_out}; L=$OUT/next115; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main X=$PWD/build-next
echo "build-main of $(cat $M/HEAD); build-next of $(cat $X/HEAD)"
export PERF_TIMEOUT=60
S="-b 2M -e 32M -f 2 -c 1 -n 50 -w 5"
B=$X; one gather nccl gather20_nccl LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=20 -- $S
B=$X; one gather braid gather20_next LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=20 -- $S
B=$X; one scatter nccl scatter17_nccl LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=17 -- $S
B=$X; one scatter braid scatter17_next LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=17 -- $S
S="-b 128M -e 128M -c 1 -n 30 -w 3"
for r in 1 2 3; do
  B=$M; one sendrecv braid sr20_main_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=20 -- $S
  B=$X; one sendrecv braid sr20_next_$r LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=20 -- $S
done
gpu_pack
