#!/usr/bin/env bash
# Device call (2 GPUs, ~2 min), twentieth session, build-main of 25540be (as gpu_next76.sh). Under a CTA bound of
# 24 (NCCL_MAX_CTAS, as config.CTAPolicy = EFFICIENCY) all-reduce at 256-512 MB runs at 0.93-0.97x NCCL, ring
# and one-shot alike (call e). Do fewer channels, or other cluster sizes, carry more within the bound?
# cumem_probe (nineteenth session) moved 369 GB/s on 16 CTAs in clusters of 4 and 349 on 24. Ring all-reduce
# 64-512 MB on 24 / 20 / 16 channels in clusters of 4, 24 in clusters of 8 and 2, the one-shot on 16; NCCL
# under the bound of 24; two rounds, -c 1.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next77_out}; L=$OUT/next77; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-main
[[ -x $B/bin/all_reduce_perf ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
nvidia-smi -L
export PERF_TIMEOUT=60
E=LD_LIBRARY_PATH=$B/lib
S="-b 64M -e 512M -f 2 -c 1 -n 10 -w 3"
for r in 1 2; do
  one all_reduce nccl ar_nccl24_$r $E NCCL_MAX_CTAS=24 -- $S
  for v in "r24c4 24 4" "r20c4 20 4" "r16c4 16 4" "r24c8 24 8" "r24c2 24 2"; do
    set -- $v
    one all_reduce braid ar_$1_$r $E NCCL_MAX_CTAS=$2 NCCL_CGA_CLUSTER_SIZE=$3 NCCL_ALGO=Ring -- $S
  done
  one all_reduce braid ar_o16_$r $E NCCL_MAX_CTAS=16 NCCL_ALGO=OneShot -- $S
done
gpu_pack
