#!/usr/bin/env bash
# First device call of the next session, on branch wip/next2 (main + wip/dev-timeout + wip/ll-unroll +
# wip/ll-shm), 2xH200, ~7 min, streamed (do not pipe into tail). Runs every gpu test (new: LlForcedShm,
# MismatchedCountsFailWithinTimeout, RanksGetIdenticalBits, GraphReplay per protocol) and the 2-process
# tests under NCCL_PROTO=LL (LL through SHM across processes); then all-reduce / all-gather 8 B-64 MB
# against NCCL with defaults, BRAID_PIPELINE_STEPS=2/4/8 and forced LL (the batched LL prims); SHM/socket
# with 4 and 16 channels; LL vs Simple through SHM at 8 B-1 MB against NCCL's SHM. Logs: $OUT/logs.tgz.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
B=build-gpu; NCCL_LIB=/usr/lib/x86_64-linux-gnu/libnccl.so.2
shm_small() {  # LL vs Simple through SHM at small sizes, against NCCL's SHM path
  for v in "braid NCCL_PROTO=LL" "braid NCCL_PROTO=Simple" "nccl X=1"; do
    set -- $v; pre=(); [[ $1 == nccl ]] && pre=(-x LD_PRELOAD=$NCCL_LIB)
    timeout 40 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0 -x NCCL_P2P_DISABLE=1 -x $2 "${pre[@]}" \
      $B/bin/all_reduce_perf -b 8 -e 1M -f 8 -c 1 -n 100 -w 10 > /tmp/shm_small.txt 2>&1
    echo "shm all_reduce $v rc=$?: $(grep -v '^#' /tmp/shm_small.txt | awk 'NF>8 && $1 ~ /^[0-9]+$/ {printf "%s:%s(%s) ", $1, $6, $9}')"
  done
}
export -f shm_small; export B NCCL_LIB
TESTS="device_coll_test device_mp_test matmul_gpu_test" TEST_TIMEOUT=150 PERF_TIMEOUT=45 ITERS=20 \
  PERF="all_reduce all_gather" SIZES="-b 8 -e 64M -f 4" \
  VARIANTS=";BRAID_PIPELINE_STEPS=2;BRAID_PIPELINE_STEPS=4;BRAID_PIPELINE_STEPS=8;NCCL_PROTO=LL" \
  PATH_VARIANTS=";NCCL_MAX_NCHANNELS=4;NCCL_MAX_NCHANNELS=16;NCCL_MAX_NCHANNELS=8 BRAID_NET_PROXY_THREADS=4;BRAID_NSOCKS_PERPEER=4" \
  EXTRA="NCCL_PROTO=LL timeout 90 $B/bin/device_mp_test 2>&1 | grep -E '^\[  (PASSED|FAILED|  OK) |^\[       OK|Failure' | head; shm_small" \
  bash tools/gpu_bench.sh
