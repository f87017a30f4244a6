#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min), ninth session: LL over sockets (NET staging FIFOs with LL slots, proxies
# shipping LL lines). Runs device_coll_test's LL and socket cases (LlForcedShm runs every quick case with
# NCCL_PROTO=LL over SHM and over sockets), the P2P LL cases as a control, then small all-reduce and
# send/recv over sockets: Braid's default, Braid with NCCL_PROTO=Simple, NCCL.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_llnet_out}; L=$OUT/llnet; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid all_reduce_perf sendrecv_perf device_coll_test
s=$(date +%s)
timeout 200 $B/bin/device_coll_test --gtest_filter='*LlForcedShm*:*Socket*:*LlForced:*P2pLlAndSimpleAlternate*' > $L/device_coll_test.txt 2>&1
echo "== device_coll_test (LL/socket subset) rc=$? $(( $(date +%s) - s )) s: $(grep -E '^\[  (PASSED|FAILED) |^\[  FAILED|cases, ' $L/device_coll_test.txt | tr '\n' ' ')"
export PERF_TIMEOUT=40
S="-b 8 -e 1M -f 8 -c 1 -n 20 -w 5"
SOCK="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1"
one all_reduce nccl ar_sock_nccl $SOCK -- $S
one all_reduce braid ar_sock_braid $SOCK -- $S
one all_reduce braid ar_sock_simple $SOCK NCCL_PROTO=Simple -- $S
one sendrecv nccl sr_sock_nccl $SOCK -- $S
one sendrecv braid sr_sock_braid $SOCK -- $S
one sendrecv braid sr_sock_simple $SOCK NCCL_PROTO=Simple -- $S
tar -C "$OUT" -czf "$OUT/llnet.tgz" llnet && rm -rf "$L"
echo "total: $(( $(date +%s) - GPU_T0 )) s"
