#!/usr/bin/env bash
# Checks the perf tools themselves on a machine with >= 2 GPUs, against NVIDIA NCCL (preloaded): every tool
# with -c 1 on device buffers, all types and ops, CUDA graphs, blocking, aggregation, threads, registration,
# mpirun and braidrun launches, the corruption hook, and `compare` in GPU mode. Braid's own GPU path is
# exercised by `compare` (run A).
#
#   tools/perf/gpu_selftest.sh [BIN_DIR] [LOG_DIR]
#
# BIN_DIR holds the built tools (default build/bin); NCCL_LIB overrides the NVIDIA library
# (default /usr/lib/x86_64-linux-gnu/libnccl.so.2). Prints one PASS/FAIL line per step; exit 1 if any failed.
set -u
BIN=${1:-build/bin}
LOG=${2:-/tmp/braid-gpu-selftest}
NCCL=${NCCL_LIB:-/usr/lib/x86_64-linux-gnu/libnccl.so.2}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$LOG"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN="mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE -x LD_PRELOAD"
failed=0
step() {  # step NAME EXPECTED_STATUS command...
  local name=$1 want=$2
  shift 2
  local start=$SECONDS
  timeout 300 "$@" >"$LOG/$name.txt" 2>&1
  local rc=$?
  local verdict=PASS
  if [ "$want" = any ]; then
    verdict=INFO
  elif [ "$want" = nonzero ]; then
    [ $rc -ne 0 ] || verdict=FAIL
  else
    [ $rc -eq "$want" ] || verdict=FAIL
  fi
  [ $verdict = FAIL ] && failed=1
  printf '%s %-28s rc=%-3d %3ds  %s\n' $verdict "$name" $rc $((SECONDS - start)) \
    "$(grep -E '^# (Out of bounds|Avg bus)' "$LOG/$name.txt" | tr '\n' ' ')"
}
nccl() { echo env LD_PRELOAD=$NCCL; }  # prefix: timeout cannot run shell functions

echo "# NVIDIA NCCL: $NCCL"
nvidia-smi -L
for t in all_reduce all_gather reduce_scatter broadcast reduce alltoall gather scatter sendrecv; do
  step "g2_$t" 0 $(nccl) "$BIN/${t}_perf" -g 2 -b 8 -e 64M -f 8 -c 1 -n 5 -w 2
done
step g2_allreduce_all_types_ops 0 $(nccl) "$BIN/all_reduce_perf" -g 2 -b 8 -e 256K -f 64 -c 1 -n 2 -w 1 -d all -o all
step g2_reducescatter_all 0 $(nccl) "$BIN/reduce_scatter_perf" -g 2 -b 1K -e 256K -f 256 -c 1 -n 2 -w 1 -d all -o all
step g2_reduce_all_roots 0 $(nccl) "$BIN/reduce_perf" -g 2 -b 1K -e 1M -f 32 -c 1 -n 2 -w 1 -d all -o all -r all
step g2_graph 0 $(nccl) "$BIN/all_reduce_perf" -g 2 -b 8 -e 1M -f 4 -G 10 -c 1
step g2_blocking_agg 0 $(nccl) "$BIN/all_gather_perf" -g 2 -b 8 -e 1M -f 16 -z 1 -m 4 -c 2
step t2_threads 0 $(nccl) "$BIN/all_reduce_perf" -t 2 -b 8 -e 1M -f 16 -c 1 -p 1
step g2_streamnull_cputime 0 $(nccl) "$BIN/broadcast_perf" -g 2 -b 8 -e 1M -f 16 -y 1 -C 1 -a 3
step g2_register_local 0 $(nccl) "$BIN/all_reduce_perf" -g 2 -b 8 -e 16M -f 16 -R 1
step g2_register_window 0 $(nccl) "$BIN/all_reduce_perf" -g 2 -b 8 -e 16M -f 16 -R 2
step g2_corrupt nonzero env BRAID_PERF_CORRUPT=1 LD_PRELOAD=$NCCL "$BIN/alltoall_perf" -g 2 -b 1K -e 64K -f 8
step braidrun_allgather 0 env LD_PRELOAD=$NCCL "$BIN/braidrun" -n 2 "$BIN/all_gather_perf" -b 8 -e 64M -f 8 -c 1
step mpirun_allreduce_1G 0 env LD_PRELOAD=$NCCL $MPIRUN "$BIN/all_reduce_perf" -b 8 -e 1G -f 2 -c 1 -n 30 -w 5
step mpirun_json 0 env LD_PRELOAD=$NCCL $MPIRUN "$BIN/sendrecv_perf" -b 8 -e 64M -f 8 -J "$LOG/sendrecv.json"
step braid_host_on_gpu_machine 0 env BRAID_HOST_COMM=1 "$BIN/braidrun" -n 2 "$BIN/all_reduce_perf" -b 8 -e 1M -f 8
step compare_gpu_np2 any env NCCL_LIB=$NCCL BRAID_BIN_DIR="$BIN" "$HERE/compare" --np 2 all_reduce_perf -b 8 -e 64M -f 4
exit $failed
