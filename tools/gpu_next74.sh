#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min), twentieth session, on build-main (as gpu_next72.sh).
# 1. The p2p cut at 256 KB-8 MB: call a's full table had all-to-all 2 MB at 16.6 us between 10.8 (1 MB) and
#    17.3 (4 MB), send/recv 2 MB (16 channels of 128 KiB) at 18.9 between 12.2 and 23.6. Three interleaved
#    rounds of NCCL, main, main with BRAID_P2P_CHANNEL_BYTES 32 KiB and 128 KiB, and all-to-all with
#    BRAID_P2P_COPY_CTAS=16 (its local copy).
# 2. All-reduce 16-64 MB under a CTA bound of 24 (NCCL_MAX_CTAS, as config.CTAPolicy = EFFICIENCY): the
#    tuner's pick (one-shot, launched plainly) against NCCL_ALGO=Ring (clustered from 16 MiB), two rounds.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next74_out}; L=$OUT/next74; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-main
[[ -x $B/bin/alltoall_perf ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
nvidia-smi -L
export PERF_TIMEOUT=60
E=LD_LIBRARY_PATH=$B/lib
S="-b 256K -e 8M -f 2 -c 1 -n 20 -w 5"
for r in 1 2 3; do
  for c in sendrecv alltoall; do
    one $c nccl ${c}_nccl_$r $E -- $S
    one $c braid ${c}_main_$r $E -- $S
    one $c braid ${c}_u32_$r $E BRAID_P2P_CHANNEL_BYTES=32768 -- $S
    one $c braid ${c}_u128_$r $E BRAID_P2P_CHANNEL_BYTES=131072 -- $S
  done
  one alltoall braid alltoall_cp16_$r $E BRAID_P2P_COPY_CTAS=16 -- $S
done
S="-b 16M -e 64M -f 2 -c 1 -n 10 -w 3"
for r in 1 2; do
  one all_reduce nccl ar24_nccl_$r $E NCCL_MAX_CTAS=24 -- $S
  one all_reduce braid ar24_main_$r $E NCCL_MAX_CTAS=24 -- $S
  one all_reduce braid ar24_ring_$r $E NCCL_MAX_CTAS=24 NCCL_ALGO=Ring -- $S
done
gpu_pack
