#!/usr/bin/env bash
# Device call (2 GPUs, ~3 min): the split one-shot all-reduce with its channels' step boundaries staggered
# (tools/var_phases.patch, build-ph: BRAID_VAR_PHASES=P starts channel c with a step of (P - c % P) / P chunks, so
# the channels' posts, whose system fences drain the CTA's NVLink stores while its workers wait, no longer fall
# at the same moments; P=1 is main's schedule). Five interleaved rounds at 4-32 MB, -c 1, against NCCL and main
# (build-main, 97cd247). Then core_test's new log case on this machine's glibc, with the old and the new logger.
# Carry [build-pack] (tools/pack_carry.sh build-main build-ph).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next150_out}; L=$OUT/next150; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main X=$PWD/build-ph
echo "build-main of $(cat $M/HEAD); build-ph of $(cat $X/HEAD)"
for t in oldlog newlog; do
  $X/bin/core_test_$t --gtest_filter='Log.*' > $L/core_test_$t.txt 2>&1
  echo "== core_test_$t rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' $L/core_test_$t.txt | tr '\n' ' ')"
  grep -E 'broken|not whole|Failure' $L/core_test_$t.txt | head -4 | cut -c1-200
done
ldd --version | head -1
F="-b 4M -e 32M -f 2 -c 1 -n 20 -w 5 -N 2"
for r in 1 2 3 4 5; do
  [[ $(( $(date +%s) - GPU_T0 )) -gt ${GUARD:-200} ]] && { echo "round $r skipped (time)"; continue; }
  for v in nccl main p1 p2 p4 p8; do
    case $v in
      nccl) B=$M; export LD_LIBRARY_PATH=$M/lib; one all_reduce nccl r${r}_ar_$v -- $F > /dev/null ;;
      main) B=$M; export LD_LIBRARY_PATH=$M/lib; one all_reduce braid r${r}_ar_$v -- $F > /dev/null ;;
      p*) B=$X; export LD_LIBRARY_PATH=$X/lib; one all_reduce braid r${r}_ar_$v BRAID_VAR_PHASES=${v#p} -- $F > /dev/null ;;
    esac
  done
  echo "round $r done at $(( $(date +%s) - GPU_T0 )) s"
done
gpu_pack
