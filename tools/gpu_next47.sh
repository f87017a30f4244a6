#!/usr/bin/env bash
# Device call (2 GPUs, ~2 min), the sixteenth session's sixth: rounds behind the full table of call e.
# All-reduce 4-16 MB: NCCL, the default (BRAID_PDL=1) and BRAID_PDL=3 (early trigger), three interleaved
# rounds; all-to-all 16-256 KB (the full table's one-run 0.72 at 64 KB): NCCL and Braid, three rounds.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next47_out}; L=$OUT/next47; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid all_reduce_perf alltoall_perf
export PERF_TIMEOUT=40
S="-b 4M -e 16M -f 2 -c 1 -n 30 -w 5"
A="-b 16K -e 256K -f 2 -c 1 -n 50 -w 10"
for r in 1 2 3; do
  one all_reduce nccl ar_nccl_$r -- $S
  one all_reduce braid ar_pdl1_$r -- $S
  one all_reduce braid ar_pdl3_$r BRAID_PDL=3 -- $S
  one alltoall nccl a2a_nccl_$r -- $A
  one alltoall braid a2a_braid_$r -- $A
done
gpu_pack
