#!/usr/bin/env bash
# Finds where the one-process GPU sweep (device_coll_test P2p/Shm/Socket) stops, on a 2-GPU machine, in one
# device call: per-case names (line-buffered), a 5 s per-case deadline, then the same with 64 channels and
# with eager module loading, then the two-process tests and a short perf check. Read the last "case:" line:
#   no "still running" after it  -> the host is blocked (a launch or module load waiting on the device);
#   "still running" then exit     -> a FIFO wait that never completes (step counters out of step);
#   "still running" then no exit  -> a kernel stuck in a barrier.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
B=build-gpu
cmake -S . -B $B -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > /tmp/cmake.log 2>&1 || { tail -20 /tmp/cmake.log; exit 1; }
ninja -C $B -j32 braid device_coll_test device_mp_test all_reduce_perf > /tmp/build.log 2>&1 ||
  { grep -E "error|FAILED" -A3 /tmp/build.log | head -40; exit 1; }
cuobjdump --dump-resource-usage $B/lib/libbraid.so 2>/dev/null | grep -o 'REG:[0-9]* STACK:[0-9]*' | sort | uniq -c
export BRAID_TEST_VERBOSE=1 BRAID_CASE_TIMEOUT=5
for v in X=1 NCCL_MIN_NCHANNELS=64 CUDA_MODULE_LOADING=EAGER; do
  for t in P2p Shm; do
    echo "== $v $t"
    env $v timeout 40 stdbuf -oL -eL $B/bin/device_coll_test --gtest_filter="*.$t" > /tmp/sweep.txt 2>&1
    echo "rc=$? cases started: $(grep -c '^case:' /tmp/sweep.txt); last: $(grep '^case:' /tmp/sweep.txt | tail -1)"
    grep -v "^case:" /tmp/sweep.txt | grep -E "still running|FAILED|PASSED|Failure|cases," | head -6
  done
done
timeout 120 stdbuf -oL $B/bin/device_mp_test > /tmp/mp.txt 2>&1; echo "device_mp_test rc=$?"
grep -E "PASSED|FAILED|timed out" /tmp/mp.txt | head -8
echo "slowest cases (run ms):"; grep "^case" /tmp/mp.txt | sort -t, -k2 -g -r -s | awk -F'run ' '{print $2, $0}' | sort -gr | head -5
unset BRAID_TEST_VERBOSE
timeout 60 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0 $B/bin/all_reduce_perf -b 8 -e 2G -f 8 -c 1 -n 5 -w 2 | tail -14
