#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min), the twelfth session's fifth: a 16-block p2p parameter tier (0.7 KB) below the
# 32-block one (1.4 KB). Call 2026-11-24e had send/recv and all-to-all at 8 B-32 KB 8.5-10.3 us against NCCL's
# 6.3-8.0 with the 32-block tier alone; before it, 0.7 KB served the smallest launches. A/B against a variant
# with kTinyP2pBlocks = 32 (the 32-block tier alone), three alternating runs each, send/recv and all-to-all
# 8 B-128 KB, NCCL once; launch_cost (host per call, stream per op) for both; device_coll_test on main.
# Raw outputs: $OUT/next18.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next18_out}; L=$OUT/next18; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun sendrecv_perf alltoall_perf device_coll_test
VAR=/tmp/braid-tier32only
gpu_build_variant $VAR src/device/dev_work.h "constexpr int kTinyP2pBlocks = 16;" "constexpr int kTinyP2pBlocks = 32;" \
  braid braidrun sendrecv_perf alltoall_perf
gpu_tests device_coll_test
wait
export PERF_TIMEOUT=40
S="-b 8 -e 128K -f 4 -c 1 -n 50 -w 10"
one sendrecv nccl sr_nccl -- $S; one alltoall nccl a2a_nccl -- $S
for r in 1 2 3; do
  one sendrecv braid sr_t16_$r -- $S; B=$VAR/build-var one sendrecv braid sr_t32_$r -- $S
  one alltoall braid a2a_t16_$r -- $S; B=$VAR/build-var one alltoall braid a2a_t32_$r -- $S
done
for v in main var; do
  BB=$B; [[ $v == var ]] && BB=$VAR/build-var
  LD=$(cd $BB/lib && pwd)
  nvcc -O2 -std=c++17 -Iinclude tools/launch_cost.cu -o $BB/launch_cost -L$LD -lbraid -Xlinker -rpath=$LD || exit 1
  timeout 60 $BB/launch_cost 0 > $L/lc0.txt 2>&1 & timeout 60 $BB/launch_cost 1 > $L/lc1.txt 2>&1 & wait
  echo "-- launch_cost $v"; grep sendrecv $L/lc0.txt $L/lc1.txt | tee -a $L/launch_cost.txt
done
gpu_pack
