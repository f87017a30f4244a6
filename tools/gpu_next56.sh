#!/usr/bin/env bash
# Device call (2 GPUs, ~30 s, nothing built there): the LL128-tail variant (build-lt, carried; float kernels only)
# with and without BRAID_LL128_TAIL=1, 8-32 MB, two rounds, NCCL beside.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next56_out}; L=$OUT/next56; mkdir -p "$L"
source tools/gpu_common.sh
B=build-lt; export LD_LIBRARY_PATH=$PWD/build-lt/lib PERF_TIMEOUT=40
S="-b 8M -e 32M -f 2 -c 1 -n 40 -w 10"
one all_reduce nccl ar_nccl_1 -- $S
for r in 1 2; do
  one all_reduce braid ar_plain_$r LD_LIBRARY_PATH -- $S
  one all_reduce braid ar_lt_$r LD_LIBRARY_PATH BRAID_LL128_TAIL=1 -- $S
done
grep -m3 -i "illegal\|error" "$L"/ar_lt_1.txt
gpu_pack
