#!/usr/bin/env bash
# Device call (2 GPUs, ~3 min), twenty-ninth session, call d: how often and how a 512 KB gather runs slow (calls a-c:
# 4 of 32 columns at 11-14 us against ~7.4, no other size of 256 KB-2 MB). build-cc is main b2ee239 plus
# tools/var_copycta.patch, its variable unset (so main's library). Many rows in one process (-N): gather 512 KB,
# gather 256 KB / 1 MB, send/recv 256 KB (the same cut as the 512 KB gather's transfer: 8 channels of 32 KiB Simple
# shares) and 512 KB, NCCL's gather 512 KB; then all-gather 512 KB for another Simple collective of that size.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next134_out}; L=$OUT/next134; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
B=$PWD/build-cc
gpu_carried $B tools/var_copycta.patch
export LD_LIBRARY_PATH=$B/lib PERF_TIMEOUT=90
R="-c 1 -n 20 -w 5 -N 60"
one gather braid g512 -- -b 512K -e 512K $R
one gather nccl g512_nccl -- -b 512K -e 512K $R
one gather braid g256_1m -- -b 256K -e 1M -f 4 $R
one sendrecv braid sr256_512 -- -b 256K -e 512K -f 2 $R
one gather braid g512_n100 -- -b 512K -e 512K -c 1 -n 100 -w 5 -N 20
one scatter braid s512 -- -b 512K -e 512K $R
gpu_pack
