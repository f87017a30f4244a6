#!/usr/bin/env bash
# Device call (2 GPUs, ~2 min): the 8 MB split one-shot's timeline across launches. tools/var_timeline.patch
# (second form) stamps %globaltimer at each CTA's entry (before griddepcontrol.wait), after the wait, after
# setup, at each step's wait/work/post and at the end, and prints launches 16k+5 and 16k+6 (both from the
# latter's end, so printing perturbs neither) for every fourth channel. BRAID_PDL 1 (default), 3 and 0.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next50_out}; L=$OUT/next50; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build_patch tl tools/var_timeline.patch all_reduce_perf
wait
export PERF_TIMEOUT=60
B=/tmp/braid-tl/build-var
for p in 1 3 0; do
  one all_reduce braid ar8_tl_pdl$p BRAID_PDL=$p -- -b 8M -e 8M -c 0 -n 100 -w 10
  grep -c "^TL" "$L/ar8_tl_pdl$p.txt"
done
gpu_pack
