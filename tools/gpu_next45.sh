#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min), the sixteenth session's fourth: programmatic dependent launches as the default
# (BRAID_PDL=1, collective and p2p kernels; devAwaitPreviousKernel first in each). Every gpu test on the change
# (StreamOrdering now has a slow writer, two chained all-reduces and a send/recv at LL, LL128 and Simple sizes);
# StreamOrdering with BRAID_PDL=3 (early trigger); the mutation (tools/var_nowait.patch: no wait) with
# BRAID_PDL=3, which must fail; all-reduce, send/recv, all-to-all 8 B-4 MB in two interleaved rounds: NCCL,
# BRAID_PDL=0, the default.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next45_out}; L=$OUT/next45; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build_patch nowait tools/var_nowait.patch device_coll_test
gpu_build braid braidrun all_reduce_perf sendrecv_perf alltoall_perf matmul_demo device_coll_test device_mp_test \
  numeric_device_test matmul_gpu_test device_one_rank_test device_errors_test device_p2p_group_test
wait
gpu_tests device_coll_test device_p2p_group_test device_mp_test numeric_device_test matmul_gpu_test \
  device_one_rank_test device_errors_test
F=--gtest_filter=DeviceColl2Gpu.StreamOrdering
for v in 3 0; do
  s=$(date +%s); BRAID_PDL=$v timeout 100 $B/bin/device_coll_test $F > "$L/ordering_pdl$v.txt" 2>&1
  echo "== ordering BRAID_PDL=$v rc=$? $(( $(date +%s) - s )) s: $(grep -E '^\[  (PASSED|FAILED) ' "$L/ordering_pdl$v.txt" | tr '\n' ' ')"
done
for v in 3 1; do
  s=$(date +%s); BRAID_DEVICE_TIMEOUT=5 BRAID_PDL=$v timeout 60 /tmp/braid-nowait/build-var/bin/device_coll_test $F > "$L/mutant_pdl$v.txt" 2>&1
  echo "== mutant (no wait) BRAID_PDL=$v rc=$? $(( $(date +%s) - s )) s: $(grep -cE 'expected' "$L/mutant_pdl$v.txt") wrong-element lines; $(grep -E '^\[  (PASSED|FAILED) ' "$L/mutant_pdl$v.txt" | tr '\n' ' ')"
done
export PERF_TIMEOUT=60
S="-b 8 -e 4M -f 4 -c 1 -n 50 -w 10"
for r in 1 2; do
  for c in all_reduce sendrecv alltoall; do
    one $c nccl ${c}_nccl_$r -- $S
    one $c braid ${c}_pdl0_$r BRAID_PDL=0 -- $S
    one $c braid ${c}_new_$r -- $S
  done
done
gpu_pack
