#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min), prepared in the sixteenth session for the next one's first call: verify what
# the sixteenth session could not run on a GPU (d2b5988: the programmatic-launch decision by the kernels' PTX
# version, the init INFO line, the fallback; the stronger StreamOrdering), then sweep the 8 MB all-reduce
# (1.475x NCCL, 0.6 us short of 1.5x) over channels, threads and FIFO steps in interleaved rounds.
# Raw outputs: $OUT/next48.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next48_out}; L=$OUT/next48; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build_patch nowait tools/var_nowait.patch device_coll_test
gpu_build braid braidrun all_reduce_perf matmul_demo device_coll_test device_mp_test numeric_device_test \
  matmul_gpu_test device_one_rank_test device_errors_test device_p2p_group_test
wait
# The decision must read "on ... kernels from compute_90" on both ranks.
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT timeout 60 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0 -x NCCL_DEBUG \
  -x NCCL_DEBUG_SUBSYS $B/bin/all_reduce_perf -b 8 -e 8 -c 1 -n 5 -w 1 > "$L/pdl_info.txt" 2>&1
grep -i "programmatic" "$L/pdl_info.txt"
gpu_tests device_coll_test device_p2p_group_test device_mp_test numeric_device_test matmul_gpu_test \
  device_one_rank_test device_errors_test
F=--gtest_filter=DeviceColl2Gpu.StreamOrdering
# The mutant (no wait in the kernels) must fail now under the default too: the writer releases its successor.
s=$(date +%s); BRAID_DEVICE_TIMEOUT=5 timeout 120 /tmp/braid-nowait/build-var/bin/device_coll_test $F > "$L/mutant.txt" 2>&1
echo "== mutant (no wait) rc=$? $(( $(date +%s) - s )) s: $(grep -c expected "$L/mutant.txt") wrong-element lines; $(grep -oE 'BRAID_PDL=[0-9]' "$L/mutant.txt" | sort | uniq -c | tr '\n' ' ')"
export PERF_TIMEOUT=60
S="-b 8M -e 8M -c 1 -n 40 -w 10"
for r in 1 2 3; do
  one all_reduce nccl ar8_nccl_$r -- $S
  one all_reduce braid ar8_main_$r -- $S
  one all_reduce braid ar8_nt256_$r NCCL_NTHREADS=256 -- $S
  one all_reduce braid ar8_ch48_$r NCCL_MAX_NCHANNELS=48 -- $S
  one all_reduce braid ar8_ch56_$r NCCL_MAX_NCHANNELS=56 -- $S
  one all_reduce braid ar8_buf2m_$r NCCL_BUFFSIZE=2097152 -- $S
  one all_reduce braid ar8_buf8m_$r NCCL_BUFFSIZE=8388608 -- $S
done
gpu_pack
