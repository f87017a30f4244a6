#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min): BRAID_P2P_PIECES (SIMPLE p2p shares cut into at least N FIFO steps, so the
# receiver copies one piece out while the next crosses NVLink). Send/recv and all-to-all lose to NCCL at
# 32 KB-256 KB (one SIMPLE step per share: write, fence, flag, then the whole copy out). Checks the p2p gpu
# tests with pieces 4, then sweeps pieces 1/2/4/8 against NCCL, 4 KB-128 MB. Raw outputs: $OUT/pieces.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_pieces_out}; L=$OUT/pieces; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid sendrecv_perf alltoall_perf device_coll_test
BRAID_P2P_PIECES=4 timeout 200 $B/bin/device_coll_test --gtest_filter='*P2p*' > "$L/p2p_tests_pieces4.txt" 2>&1
echo "p2p tests, pieces 4: rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/p2p_tests_pieces4.txt" | tr '\n' ' ')"
grep -E 'Failure' -A3 "$L/p2p_tests_pieces4.txt" | head -12
export PERF_TIMEOUT=60
P="-b 4K -e 128M -f 2 -c 1 -n 40 -w 10"
for r in 1 2; do
  one sendrecv nccl sr_nccl_$r -- $P
  for k in 1 2 4 8; do one sendrecv braid sr_p${k}_$r BRAID_P2P_PIECES=$k -- $P; done
done
one alltoall nccl a2a_nccl -- $P
for k in 1 2 4 8; do one alltoall braid a2a_p$k BRAID_P2P_PIECES=$k -- $P; done
gpu_pack
