#!/usr/bin/env bash
# Device call (2 GPUs, ~7 min), the sixteenth session's third: launch attributes for back-to-back collectives on
# a stream (BRAID_PDL: bit 0 programmatic dependent launch with griddepcontrol.wait first in the kernel, bit 1
# each CTA triggers the next launch at its start, bit 2 the remote memory-sync domain). Every gpu test with
# BRAID_PDL=3 and the plain build; all-reduce 8 B-4 MB in three interleaved rounds (NCCL, 0, 1, 3, 4) and
# 8-64 MB once with 0 and 3; the other ring collectives once with 0 and 3.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next44_out}; L=$OUT/next44; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf matmul_demo \
  device_coll_test device_mp_test numeric_device_test matmul_gpu_test device_one_rank_test device_errors_test \
  device_p2p_group_test
gpu_tests matmul_gpu_test device_one_rank_test
export BRAID_PDL=3
gpu_tests device_coll_test device_mp_test numeric_device_test device_errors_test device_p2p_group_test
for t in device_coll_test device_mp_test; do mv "$L/$t.txt" "$L/${t}_pdl3.txt"; done
unset BRAID_PDL
export PERF_TIMEOUT=60
S="-b 8 -e 4M -f 4 -c 1 -n 50 -w 10"
for r in 1 2 3; do
  one all_reduce nccl ar_nccl_$r -- $S
  for p in 0 1 3 4; do one all_reduce braid ar_pdl${p}_$r BRAID_PDL=$p -- $S; done
done
S2="-b 8M -e 64M -f 2 -c 1 -n 20 -w 5"
one all_reduce nccl arl_nccl -- $S2
for p in 0 3; do one all_reduce braid arl_pdl$p BRAID_PDL=$p -- $S2; done
for c in all_gather reduce_scatter broadcast reduce; do
  one $c nccl ${c}_nccl -- $S
  for p in 0 3; do one $c braid ${c}_pdl$p BRAID_PDL=$p -- $S; done
done
gpu_pack
