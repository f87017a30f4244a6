#!/usr/bin/env bash
# One device call for the LL protocol (branch wip/ll, on top of wip/poster-warp): build, the LL gpu tests
# (NCCL_PROTO=LL sweep, 100,000 small all-reduces), then small-size all-reduce / all-gather / broadcast perf
# with NCCL_PROTO=LL against Simple and NVIDIA NCCL (its default tuning and NCCL_PROTO=LL), -c 1.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
B=build-gpu; NCCL_LIB=/usr/lib/x86_64-linux-gnu/libnccl.so.2
cmake -S . -B $B -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > /tmp/cmake.log 2>&1 || { tail -20 /tmp/cmake.log; exit 1; }
ninja -C $B -j32 braid device_coll_test all_reduce_perf all_gather_perf broadcast_perf > /tmp/build.log 2>&1 ||
  { grep -E "error|FAILED" -A3 /tmp/build.log | head -40; exit 1; }
export BRAID_CASE_TIMEOUT=10
timeout 240 stdbuf -oL $B/bin/device_coll_test --gtest_filter='*Ll*' > /tmp/ll.txt 2>&1; echo "LL tests rc=$?"
grep -E "^\[  (PASSED|FAILED) |still running|Failure|cases," /tmp/ll.txt | head -12
for p in all_reduce all_gather broadcast; do
  for v in "braid NCCL_PROTO=LL" "braid NCCL_PROTO=Simple" "nccl X=1" "nccl NCCL_PROTO=LL"; do
    set -- $v; pre=(); [[ $1 == nccl ]] && pre=(-x LD_PRELOAD=$NCCL_LIB)
    echo "== $p $v"
    timeout 60 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0 -x $2 "${pre[@]}" $B/bin/${p}_perf \
      -b 8 -e 4M -f 4 -c 1 -n 200 -w 20 2>&1 | grep -v "^#" | awk 'NF>8 {print $1, $6, $8, $9}' | tr '\n' ';'
    echo
  done
done
