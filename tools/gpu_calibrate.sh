#!/usr/bin/env bash
# One device call (2 GPUs) that measures what the tuner's model rows are fitted to: all-reduce / all-gather /
# reduce-scatter / broadcast / reduce with LL and Simple forced at fixed channel counts (BRAID_DEVICE_TUNER=1
# with NCCL_MIN/MAX_NCHANNELS), 8 B-32 MB, plus 8 B latency on a stream and inside a CUDA graph for Braid and
# NCCL, and scatter/gather/all-to-all against NCCL at 64 KB-512 MB (the local-copy CTAs). Prints one line per
# run (size:us ...); raw outputs in $OUT/calib.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_calib_out}; L=$OUT/calib; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid ${TESTS:-device_coll_test} all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf gather_perf scatter_perf alltoall_perf
for t in ${TESTS:-device_coll_test}; do
  BRAID_CASE_TIMEOUT=10 timeout 120 $B/bin/$t > "$L/$t.txt" 2>&1
  echo "== $t rc=$?: $(grep -E '^\[  (PASSED|FAILED) |cases,' "$L/$t.txt" | tr '\n' ' ')"
done
echo "== local-copy CTAs: scatter/gather/alltoall vs NCCL (-a 3 for rooted)"
for p in scatter gather alltoall; do
  a=3; [[ $p == alltoall ]] && a=1
  one $p braid ${p}_braid -- -b 64K -e 512M -f 8 -c 1 -n 20 -w 3 -a $a
  one $p nccl ${p}_nccl -- -b 64K -e 512M -f 8 -c 1 -n 20 -w 3 -a $a
done
echo "== latency 8 B-32 KB on a stream and in a graph (-G 10 launches of 100 captured ops)"
for p in all_reduce all_gather broadcast; do
  for v in "braid LL NCCL_PROTO=LL" "braid S NCCL_PROTO=Simple" "braid D X=1" "nccl D X=1"; do
    set -- $v
    one $p $1 ${p}_stream_$1_$2 $3 -- -b 8 -e 32K -f 64 -c 1 -n 200 -w 20
    one $p $1 ${p}_graph_$1_$2 $3 -- -b 8 -e 32K -f 64 -c 1 -n 100 -w 20 -G 10
  done
done
echo "== calibration grid: forced protocol x channels, 8 B-32 MB"
for p in all_reduce all_gather reduce_scatter broadcast reduce; do
  chs="1 2 4 8 16 32 64"; case $p in reduce_scatter|broadcast|reduce) chs="1 8 64" ;; esac
  for proto in LL Simple; do
    for c in $chs; do
      a=1; case $p in broadcast|reduce) a=3 ;; esac
      one $p braid ${p}_${proto}_$c NCCL_PROTO=$proto BRAID_DEVICE_TUNER=1 NCCL_MIN_NCHANNELS=$c NCCL_MAX_NCHANNELS=$c \
        -- -b 8 -e 32M -f 4 -c 1 -n 40 -w 5 -a $a
    done
  done
done
gpu_pack
