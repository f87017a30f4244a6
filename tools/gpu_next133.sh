#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min), twenty-ninth session, call c: the bytes a local-copy CTA takes at least
# (kP2pCopyCtaBytes, 256 KiB: a root's or all-to-all's own share of up to 256 KiB runs on one CTA at ~46 GB/s, 5.7 us
# at 256 KiB, which may set the time of a 512 KB gather). build-cc is main b2ee239 with tools/var_copycta.patch
# (BRAID_VAR_COPY_CTA_BYTES overrides that constant; unset, it is main). Gather, scatter and all-to-all 64 KB-16 MB,
# three rounds of NCCL / 256 / 128 / 64 / 32 KiB; all-to-all under NCCL_MAX_P2P_NCHANNELS=8 at 256 and 64 KiB;
# the p2p group and balance tests with 32 KiB copy shares.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next133_out}; L=$OUT/next133; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
B=$PWD/build-cc
gpu_carried $B tools/var_copycta.patch
echo "build-cc of $(cat $B/HEAD) + var_copycta.patch"
export LD_LIBRARY_PATH=$B/lib PERF_TIMEOUT=60
S="-b 64K -e 16M -f 2 -c 1 -n 20 -w 5"
for r in 1 2 3; do
  for c in gather scatter alltoall; do
    one $c nccl ${c}_nccl_$r -- $S
    for v in 262144 131072 65536 32768; do one $c braid ${c}_${v}_$r BRAID_VAR_COPY_CTA_BYTES=$v -- $S; done
  done
done
for v in 262144 65536; do one alltoall braid a2a8_${v} NCCL_MAX_P2P_NCHANNELS=8 BRAID_VAR_COPY_CTA_BYTES=$v -- $S; done
one alltoall nccl a2a8_nccl NCCL_MAX_P2P_NCHANNELS=8 -- $S
(export BRAID_VAR_COPY_CTA_BYTES=32768; gpu_tests device_p2p_group_test device_p2p_balance_test)
gpu_pack
