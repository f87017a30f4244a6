#!/usr/bin/env bash
# Device call (2 GPUs, ~3 min), twenty-first session, build-main of 73ed74e (as gpu_next81.sh). Call b found
# all-reduce under NCCL_MAX_CTAS=8 at 0.84x NCCL at 64-256 MB (533 / 2106 us against 447 / 1744) and all-gather,
# reduce-scatter at 0.91-0.95x. What does NCCL run there (its TUNING and INIT lines), and does the ring, another
# cluster size or fewer threads do better within the bound? One round each, 16-256 MB, -c 1.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next82_out}; L=$OUT/next82; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-main
[[ -x $B/bin/all_reduce_perf ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
nvidia-smi -L
export PERF_TIMEOUT=90
E=LD_LIBRARY_PATH=$B/lib
S="-b 16M -e 256M -f 4 -c 1 -n 10 -w 3"
one all_reduce nccl ar8_nccl_log $E NCCL_MAX_CTAS=8 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV -- -b 256M -e 256M -c 1 -n 3 -w 1
grep -E "AllReduce|nchannels|Channel|NTHREADS|threads|CTA|Ring|P2P" $L/ar8_nccl_log.txt | grep -v "^#" | sort | uniq -c | sort -rn | head -30
one all_gather nccl ag8_nccl_log $E NCCL_MAX_CTAS=8 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING -- -b 256M -e 256M -c 1 -n 3 -w 1
grep -E "AllGather" $L/ag8_nccl_log.txt | sort | uniq -c | head -5
one all_reduce braid ar8_main_log $E NCCL_MAX_CTAS=8 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING -- -b 16M -e 256M -f 4 -c 1 -n 3 -w 1
grep -E "rank 0\]" $L/ar8_main_log.txt | sed 's/.*BRAID INFO //' | sort | uniq -c | head -12
one all_reduce nccl ar8_nccl_1 $E NCCL_MAX_CTAS=8 -- $S
one all_reduce braid ar8_main_1 $E NCCL_MAX_CTAS=8 -- $S
for k in 0 2 4 8; do one all_reduce braid ar8_ringk${k}_1 $E NCCL_MAX_CTAS=8 NCCL_ALGO=Ring NCCL_CGA_CLUSTER_SIZE=$k -- $S; done
one all_reduce braid ar8_t256_1 $E NCCL_MAX_CTAS=8 NCCL_NTHREADS=256 -- $S
one all_reduce braid ar8_ll128_1 $E NCCL_MAX_CTAS=8 NCCL_PROTO=LL128 -- $S
one all_reduce braid ar8_ringll128_1 $E NCCL_MAX_CTAS=8 NCCL_ALGO=Ring NCCL_PROTO=LL128 -- $S
one all_gather nccl ag8_nccl_1 $E NCCL_MAX_CTAS=8 -- $S
one all_gather braid ag8_main_1 $E NCCL_MAX_CTAS=8 -- $S
for k in 0 2 8; do one all_gather braid ag8_k${k}_1 $E NCCL_MAX_CTAS=8 NCCL_CGA_CLUSTER_SIZE=$k -- $S; done
one all_gather braid ag8_ll128_1 $E NCCL_MAX_CTAS=8 NCCL_PROTO=LL128 -- $S
one reduce_scatter nccl rs8_nccl_1 $E NCCL_MAX_CTAS=8 -- $S
one reduce_scatter braid rs8_main_1 $E NCCL_MAX_CTAS=8 -- $S
one reduce_scatter braid rs8_ll128_1 $E NCCL_MAX_CTAS=8 NCCL_PROTO=LL128 -- $S
for k in 0 2; do one reduce_scatter braid rs8_k${k}_1 $E NCCL_MAX_CTAS=8 NCCL_CGA_CLUSTER_SIZE=$k -- $S; done
gpu_pack
