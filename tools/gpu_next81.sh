#!/usr/bin/env bash
# Device call (2 GPUs, ~7 min), twenty-first session. build-main: a default build of main with the launch log
# line (TUNING: "launched in thread-block clusters of N") and cluster_gpu_test's case for it. Every gpu test; then
# the CTA bounds no call has measured beside NCCL: 16 (NCCL, main, and main with NCCL_CGA_CLUSTER_SIZE=2 / 3 / 0
# for all-gather, all-reduce, broadcast; 16-256 MB, two rounds), 8 (1-256 MB, one round) and 48 (16-256 MB, one
# round), -c 1. Carry build-main (cp of build/bin's tools and tests, build/lib's libraries, HEAD).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next81_out}; L=$OUT/next81; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-main
[[ -x $B/bin/all_reduce_perf && -x $B/bin/cluster_gpu_test ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
nvidia-smi -L
export LD_LIBRARY_PATH=$B/lib
gpu_tests cluster_gpu_test device_coll_test device_errors_test device_p2p_group_test numeric_device_test \
  device_one_rank_test device_mp_test matmul_gpu_test
export PERF_TIMEOUT=90
E=LD_LIBRARY_PATH=$B/lib
S="-b 16M -e 256M -f 4 -c 1 -n 10 -w 3"
for r in 1 2; do
  for c in all_gather reduce_scatter all_reduce broadcast reduce; do
    one $c nccl ${c}16_nccl_$r $E NCCL_MAX_CTAS=16 -- $S
    one $c braid ${c}16_main_$r $E NCCL_MAX_CTAS=16 -- $S
    [[ $c == reduce_scatter || $c == reduce ]] && continue
    for k in 2 3 0; do one $c braid ${c}16_k${k}_$r $E NCCL_MAX_CTAS=16 NCCL_CGA_CLUSTER_SIZE=$k -- $S; done
  done
done
for c in all_gather reduce_scatter all_reduce broadcast reduce; do
  one $c nccl ${c}8_nccl_1 $E NCCL_MAX_CTAS=8 -- -b 1M -e 256M -f 4 -c 1 -n 10 -w 3
  one $c braid ${c}8_main_1 $E NCCL_MAX_CTAS=8 -- -b 1M -e 256M -f 4 -c 1 -n 10 -w 3
done
for c in all_gather reduce_scatter all_reduce broadcast; do
  one $c nccl ${c}48_nccl_1 $E NCCL_MAX_CTAS=48 -- $S
  one $c braid ${c}48_main_1 $E NCCL_MAX_CTAS=48 -- $S
done
gpu_pack
