#!/usr/bin/env bash
# Device call (2 GPUs, ~1.5 min), twenty-ninth session, call f: on 2xH100 the full tables of four calls had the
# all-reduce with NCCL_PROTO=LL128 forced 0.5-1 us faster than the tuner's pick (one-shot LL up to ~256 KB) at
# 8 B-256 KB, one process each. Interleaved A/B: five rounds of the tuner / LL128 forced / LL forced, all-reduce
# 4 KB-1 MB, three cycles per process. build-cc of calls c-e, its variable unset (main's library).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next136_out}; L=$OUT/next136; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
B=$PWD/build-cc
gpu_carried $B tools/var_copycta.patch
export LD_LIBRARY_PATH=$B/lib PERF_TIMEOUT=60
S="-b 4K -e 1M -f 2 -c 1 -n 20 -w 5 -N 3"
for r in 1 2 3 4 5; do
  one all_reduce braid ar_tuner_$r -- $S
  one all_reduce braid ar_LL128_$r NCCL_PROTO=LL128 -- $S
  one all_reduce braid ar_LL_$r NCCL_PROTO=LL -- $S
done
one all_reduce braid ar_tuning_log NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING -- -b 4K -e 1M -f 2 -c 1 -n 2 -w 1
gpu_pack
