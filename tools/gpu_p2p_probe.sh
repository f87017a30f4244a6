#!/usr/bin/env bash
# Device call (2 GPUs, ~3 min), ninth session: why send/recv at 16 MB ran at 0.48x NCCL (172 vs 83 us) with
# the default BRAID_P2P_CHANNEL_BYTES but 63 us with 16384, and why 2-rank all-to-all at 128 MB runs at
# 0.86x. The slow sizes were the first of each sweep to use channels 32-63; these runs tell a "fresh
# channel" effect from a size effect, and all-to-all's CTA count (32 copy CTAs + 128) past the 132 SMs from
# its channel count. Raw outputs: $OUT/probe.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_probe_out}; L=$OUT/probe; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid sendrecv_perf alltoall_perf
export PERF_TIMEOUT=40
one sendrecv braid sr16_alone -- -b 16M -e 16M -c 1 -n 50 -w 10
one sendrecv braid sr16_long -- -b 16M -e 16M -c 1 -n 1000 -w 10
one sendrecv braid sr8to32 -- -b 8M -e 32M -f 2 -c 1 -n 50 -w 10
one sendrecv braid sr4_alone -- -b 4M -e 4M -c 1 -n 50 -w 10
one sendrecv braid sr16_32ch NCCL_MAX_NCHANNELS=32 -- -b 16M -e 16M -c 1 -n 50 -w 10
one sendrecv braid sr2_16k BRAID_P2P_CHANNEL_BYTES=16384 -- -b 2M -e 2M -c 1 -n 50 -w 10
one sendrecv braid sr_sweep2 -- -b 1M -e 64M -f 2 -c 1 -n 50 -w 10
one sendrecv nccl sr_sweep2_nccl -- -b 1M -e 64M -f 2 -c 1 -n 50 -w 10
one sendrecv braid sr16_dbg NCCL_DEBUG=INFO -- -b 16M -e 16M -c 1 -n 20 -w 5
one alltoall braid a2a128 -- -b 128M -e 128M -c 1 -n 20 -w 5
one alltoall braid a2a128_48ch NCCL_MAX_NCHANNELS=48 -- -b 128M -e 128M -c 1 -n 20 -w 5
one alltoall braid a2a128_32ch NCCL_MAX_NCHANNELS=32 -- -b 128M -e 128M -c 1 -n 20 -w 5
one alltoall nccl a2a128_nccl -- -b 128M -e 128M -c 1 -n 20 -w 5
one alltoall braid a2a_small -- -b 32K -e 1M -f 2 -c 1 -n 50 -w 10
one alltoall nccl a2a_small_nccl -- -b 32K -e 1M -f 2 -c 1 -n 50 -w 10
gpu_pack
