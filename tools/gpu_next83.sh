#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min), twenty-first session, build-main of the commit that runs the clustered ring over
# the unsplit one-shot from 8 channels. cluster_gpu_test and device_mp_test; all-reduce under NCCL_MAX_CTAS=8,
# 16, 20: NCCL and main, 16-256 MB, two rounds; then, for all-gather, reduce-scatter and the ring all-reduce under
# the bound of 8 (0.89-0.95x NCCL in calls b, c), FIFO steps of other sizes: NCCL_BUFFSIZE 1 / 2 / 8 MiB (steps
# of 128 / 256 KiB / 1 MiB), BRAID_PIPELINE_STEPS=16; one round, -c 1.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next83_out}; L=$OUT/next83; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-main
[[ -x $B/bin/all_reduce_perf ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
nvidia-smi -L
export LD_LIBRARY_PATH=$B/lib
gpu_tests cluster_gpu_test device_mp_test
export PERF_TIMEOUT=90
E=LD_LIBRARY_PATH=$B/lib
S="-b 16M -e 256M -f 4 -c 1 -n 10 -w 3"
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING NCCL_MAX_CTAS=8 timeout 60 mpirun --allow-run-as-root -np 2 \
  -x NCCL_NVLS_ENABLE=0 -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS -x NCCL_MAX_CTAS -x LD_LIBRARY_PATH \
  $B/bin/all_reduce_perf -b 16M -e 16M -n 2 -w 1 2>&1 | grep 'rank 0\]' | grep -E 'clustered|launched' | sort | uniq -c
for r in 1 2; do
  for b in 8 16 20; do
    one all_reduce nccl ar${b}_nccl_$r $E NCCL_MAX_CTAS=$b -- $S
    one all_reduce braid ar${b}_main_$r $E NCCL_MAX_CTAS=$b -- $S
  done
done
for c in all_gather reduce_scatter all_reduce; do
  for v in "b1 NCCL_BUFFSIZE=1048576" "b2 NCCL_BUFFSIZE=2097152" "b8 NCCL_BUFFSIZE=8388608" "p16 BRAID_PIPELINE_STEPS=16"; do
    set -- $v
    one $c braid ${c}8_$1_1 $E NCCL_MAX_CTAS=8 $2 -- $S
  done
done
gpu_pack
