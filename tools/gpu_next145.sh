#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min): why LL128 receives without an own input run slower. Broadcast on LL128 ran ~1.5 us
# slower than reduce on LL128 at 2-6 MB in place (2026-12-12g: 2 MB 12.01 against 10.51; same channels, chunk and
# traffic; on Simple the two are level), and all-gather ~1.2 us slower than reduce-scatter at 1 MB (2026-12-12e). The
# only difference in the kernel: a receiver with its own input (reduce, reduce-scatter) loads it before polling the
# slot; one without (broadcast, all-gather) polls at once and spins on lines still in flight. Hypothesis: that
# spinning slows the lines' arrival. Variants: build-bo40 / build-bo200 (BRAID_LL128_BACKOFF_NS: a __nanosleep before
# each reload in DevPrimsLL128::waitGroup; tools/build_carry.sh with /tmp/var_backoff.patch and
# -DCMAKE_CUDA_FLAGS=-DBRAID_LL128_BACKOFF_NS=N). Also broadcast with root 1 on main (is the direction the cause?).
# Then device_coll_test's LL128 cases on both variants, and tools/mixing_probe.cu: eager 8 B all-reduce before and after
# a communicator's first capture (graph mixing makes each uncaptured batch wait on its serial event from then on), on
# main with NCCL_GRAPH_MIXING_SUPPORT 1 and 0, and NCCL; and the graph-mixing tests again on main after the review's mends (capture_record.cc's status and
# empty-end checks, CUDA 12 forms, the eviction warning). Carry [build-pack] (build-new = main, build-bo40, build-bo200).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next145_out}; L=$OUT/next145; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-new A=$PWD/build-bo40 C=$PWD/build-bo200
echo "build-new of $(cat $M/HEAD); variants of $(cat $A/HEAD) and $(cat $C/HEAD)"
F="-b 256K -e 4M -f 2 -c 1 -n 20 -w 5 -N 3"
for r in 1 2 3; do
  if (( r % 2 )); then order="$M $A $C"; else order="$C $A $M"; fi
  for c in broadcast all_gather reduce reduce_scatter; do
    [[ $(( $(date +%s) - GPU_T0 )) -gt ${GUARD:-240} ]] && { echo "round $r $c skipped (time)"; continue; }
    for lib in $order; do
      B=$lib; export LD_LIBRARY_PATH=$lib/lib
      one $c braid r${r}_${c}_$(basename $lib) NCCL_PROTO=LL128 -- $F -J $L/r${r}_${c}_$(basename $lib).json > /dev/null
    done
  done
  B=$M; export LD_LIBRARY_PATH=$M/lib
  one broadcast braid r${r}_broadcast_root1 NCCL_PROTO=LL128 -- $F -r 1 -J $L/r${r}_broadcast_root1.json > /dev/null
  echo "round $r done at $(( $(date +%s) - GPU_T0 )) s"
done
B=$M; nvcc -O2 -std=c++17 -Iinclude tools/mixing_probe.cu -o $B/mixing_probe -L$B/lib -lbraid -Xlinker -rpath=$B/lib || exit 1
for v in "braid" "braid NCCL_GRAPH_MIXING_SUPPORT=0" "nccl LD_PRELOAD=$NCCL_LIB"; do
  for k in 1 2; do
    set -- $v; shift; env "$@" timeout 60 $B/mixing_probe 0 > $L/mp0.txt 2>&1 & env "$@" timeout 60 $B/mixing_probe 1 > $L/mp1.txt 2>&1 & wait
    echo "-- mixing_probe $v ($k)"; cat $L/mp0.txt $L/mp1.txt | tee -a $L/mixing_probe.txt
  done
done
B=$M; export LD_LIBRARY_PATH=$M/lib; gpu_tests device_p2p_group_test
gpu_test_on_libs $A/bin/device_coll_test '*SimpleAndLl128Forced:*OneShotForced:*DeviceColl2Gpu.P2p' ll128 $A $C
gpu_pack
