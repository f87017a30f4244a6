#!/usr/bin/env bash
# Where does the one-process P2P sweep (device_coll_test *.P2p) stall? Runs it under several settings with
# timestamps per case; a run still alive after its window gets every host thread's stack (gdb) before it is
# killed. One device call on a 2-GPU machine; read "init:", the case rate and the stacks.
set -uo pipefail
export NCCL_NVLS_ENABLE=0
B=build-gpu
cmake -S . -B $B -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > /tmp/cmake.log 2>&1 || { tail -20 /tmp/cmake.log; exit 1; }
ninja -C $B -j32 braid device_coll_test ${EXTRA_TARGETS:-} > /tmp/build.log 2>&1 ||
  { grep -E "error|FAILED" -A3 /tmp/build.log | head -40; exit 1; }
export BRAID_TEST_VERBOSE=1 BRAID_CASE_TIMEOUT=${CASE_TIMEOUT:-5}
probe() {  # label window env...
  local label=$1 window=$2; shift 2
  env "$@" stdbuf -oL -eL $B/bin/device_coll_test --gtest_filter="${FILTER:-*.P2p}" > /tmp/$label.txt 2>&1 &
  local pid=$! i
  for ((i = 0; i < window; ++i)); do sleep 1; kill -0 $pid 2>/dev/null || break; done
  echo "== $label ($*)"
  if kill -0 $pid 2>/dev/null; then
    echo "still running after ${window}s; host stacks:"
    gdb -p $pid -batch -ex "thread apply all bt 14" 2>&1 | grep -E "^Thread|^#" | grep -v "libc.so\|pthread_cond" | head -${STACK_LINES:-60}
    kill -9 $pid
  fi
  wait $pid 2>/dev/null; echo "rc=$?"
  grep -E "^init:|INFO.*(init|Init|load)" /tmp/$label.txt | head -8
  echo "cases: $(grep -c '^case:' /tmp/$label.txt); first/last:"
  grep '^case:' /tmp/$label.txt | sed -n '1p;$p'
  grep -v "^case:" /tmp/$label.txt | grep -E "still running|FAILED|PASSED|Failure|cases,|rror" | head -6
}
probe lazy 25 X=1
probe lazy_nopreload 25 BRAID_PRELOAD_KERNELS=0
probe eager 90 CUDA_MODULE_LOADING=EAGER
