#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min), the eleventh session's first: every gpu test on main, then the open items of
# the tenth session's table (docs/PERFORMANCE.md):
#   1. all-to-all at 4-64 MB, three runs, NCCL once, and with BRAID_P2P_PIECES=1 /
#      BRAID_P2P_CHANNEL_BYTES=131072 (8 MB stays 0.80-0.88x NCCL in every call; the copy CTA count is not it:
#      BRAID_P2P_COPY_CTAS 4/8/16/32 gave 33-44 us against NCCL's 32.1, docs/gpu/2026-11-22zg);
#   2. gather and scatter at 1-16 MB, three runs each (bistable between runs in call ze: gather 8 MB 19.3 / 26.1
#      us against NCCL's 21.3);
#   3. per-launch times (tools/iter_probe.cu, new modes) of all-to-all and gather at 8 MB and send/recv at 4 MB,
#      both libraries.
# Raw outputs: $OUT/next12.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next12_out}; L=$OUT/next12; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun matmul_demo alltoall_perf gather_perf scatter_perf \
  device_coll_test device_mp_test matmul_gpu_test numeric_device_test
gpu_tests numeric_device_test device_coll_test device_mp_test matmul_gpu_test
export PERF_TIMEOUT=40
A="-b 4M -e 64M -f 2 -c 1 -n 30 -w 5"
one alltoall nccl a2a_nccl -- $A
for r in 1 2 3; do one alltoall braid a2a_$r -- $A; done
one alltoall braid a2a_pieces1 BRAID_P2P_PIECES=1 -- $A
one alltoall braid a2a_cb128k BRAID_P2P_CHANNEL_BYTES=131072 -- $A
G="-b 1M -e 16M -f 2 -c 1 -n 30 -w 5 -a 3"
for c in gather scatter; do
  one $c nccl ${c}_nccl -- $G
  for r in 1 2 3; do one $c braid ${c}_$r -- $G; done
done
probe_build
for m in alltoall gather; do
  probe braid $m 8388608 1000; probe braid $m 8388608 1000; probe nccl $m 8388608 1000
done
# Send/recv at 4 MB (64 channels x 64 KiB, one step each) flipped between ~23 and ~40 us across the tenth
# session's calls (zb, zc, ze), the all-to-all at 8 MB moves 4 MB each way.
probe braid sendrecv 4194304 1000; probe braid sendrecv 4194304 1000; probe nccl sendrecv 4194304 1000
gpu_pack
