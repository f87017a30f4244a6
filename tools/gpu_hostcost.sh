#!/usr/bin/env bash
# Device call (2 GPUs, ~2 min), eleventh session: what one p2p call costs the host. iter_probe with 30
# iterations (the launch queue never fills: "host enqueue of all" / 30 is one call's host cost, with its
# cudaEventRecord) at 8 B and 128 KB, send/recv and all-to-all, both libraries; then, where perf exists, a
# profile of Braid's all-to-all 128 KB over 20,000 calls. Raw outputs: $OUT/hostcost.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_hostcost_out}; L=$OUT/hostcost; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid
probe_build
for m in sendrecv alltoall; do for s in 8 131072; do
  probe braid $m $s 30; probe braid $m $s 30; probe nccl $m $s 30; probe nccl $m $s 30
done; done
echo "perf: $(which perf || echo none)"
if command -v perf >/dev/null; then
  timeout 60 $B/iter_probe 1 131072 20000 alltoall > $L/p1.txt 2>&1 &
  timeout 90 perf record -F 5000 -g -o $L/perf.data $B/iter_probe 0 131072 20000 alltoall > $L/p0.txt 2>&1
  wait
  perf report -i $L/perf.data --no-children --percent-limit 0.7 --stdio 2>/dev/null | grep -v "^$" | head -150 > $L/perf_report.txt
  perf report -i $L/perf.data --no-children --sort dso --stdio 2>/dev/null | grep "%" | head -20
  grep -E "^ +[0-9.]+%" $L/perf_report.txt | head -40
  rm -f $L/perf.data
fi
gpu_pack
