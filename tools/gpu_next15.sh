#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min), the twelfth session's third: the 2-rank one-shot all-reduce on LL128 lines
# (new: the LL128 kernels carry the one-shot schedule; NCCL_ALGO=allreduce:OneShot NCCL_PROTO=LL128 forces it).
#   1. device_coll_test (OneShotForced now runs LL128 too);
#   2. all-reduce 8 KB-8 MB: one-shot LL128 at the model's channels and at 16/32/64, one-shot LL at 64, ring
#      LL128 at 64 (its 14 us floor at 128-512 KB in docs/gpu/2026-11-22i), one-shot LL128 at 64 with 512
#      threads, the tuner's default, NCCL;
#   3. broadcast 512 MB (0.987x NCCL in docs/gpu/2026-11-24b): 32 channels, 8 MB buffers, 1024 threads.
# Raw outputs: $OUT/next15.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next15_out}; L=$OUT/next15; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun all_reduce_perf broadcast_perf device_coll_test
export PERF_TIMEOUT=60
A="-b 8K -e 8M -f 4 -c 1 -n 30 -w 5"
OS="NCCL_ALGO=allreduce:OneShot"
ch() { echo NCCL_MIN_NCHANNELS=$1 NCCL_MAX_NCHANNELS=$1; }
one all_reduce nccl ar_nccl -- $A
one all_reduce braid ar_default -- $A
one all_reduce braid os_ll128_model $OS NCCL_PROTO=LL128 -- $A
for c in 16 32 64; do one all_reduce braid os_ll128_$c $OS NCCL_PROTO=LL128 $(ch $c) -- $A; done
one all_reduce braid os_ll128_64_nt512 $OS NCCL_PROTO=LL128 NCCL_NTHREADS=512 $(ch 64) -- $A
one all_reduce braid os_ll_64 $OS NCCL_PROTO=LL $(ch 64) -- $A
one all_reduce braid ring_ll128_64 NCCL_ALGO=Ring NCCL_PROTO=LL128 $(ch 64) -- $A
one all_reduce braid os_ll128_64_again $OS NCCL_PROTO=LL128 $(ch 64) -- $A
one all_reduce braid ar_default_again -- $A
W="-b 512M -e 512M -c 1 -n 10 -w 3"
one broadcast nccl bc_nccl -- $W; one broadcast braid bc_default -- $W
one broadcast braid bc_ch32 $(ch 32) -- $W
one broadcast braid bc_buff8m NCCL_BUFFSIZE=8388608 -- $W
one broadcast braid bc_nt1024 NCCL_NTHREADS=1024 -- $W
one broadcast nccl bc_nccl_again -- $W
gpu_tests device_coll_test
gpu_pack
