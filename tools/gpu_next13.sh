#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min), the twelfth session's first: what the eleventh session left unrun or unmeasured.
#   1. every gpu test on main, including DeviceColl2Proc.GroupSimulateEndNearMeasured (new, never run);
#   2. p2p over SHM (NCCL_P2P_DISABLE=1) at 128 KB-16 MB with the new channel cut (p2pChannelsForBytes), which
#      was measured over NVLink only: send/recv and all-to-all, Braid twice, NCCL once;
#   3. the all-to-all sizes still spread across runs over NVLink (1 MB: 11.3-15.6 us against NCCL's 13.3,
#      docs/gpu/2026-11-23c, g): the three main-tree runs of 4., and per-launch times at 1 MB (three
#      processes, NCCL once);
#   4. A/B of the small p2p parameter tier at 32 blocks instead of 16 (dev_work.h kSmallP2pBlocks; a variant
#      tree built beside the tests): all-to-all 1 MB (18 blocks) and send/recv 2 MB (32 blocks) take the 0.7 KB
#      block today only up to 16 blocks, and the 8 KB one above (8 B send/recv measured 6.2-6.9 us against
#      6.4-9.1 between the two, docs/gpu/2026-11-22p); all-to-all 512 KB-4 MB and send/recv 1-4 MB, three
#      runs each, alternating.
# Raw outputs: $OUT/next13.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next13_out}; L=$OUT/next13; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun matmul_demo sendrecv_perf alltoall_perf \
  device_coll_test device_mp_test matmul_gpu_test numeric_device_test
VAR=/tmp/braid-tier32
gpu_build_variant $VAR src/device/dev_work.h "constexpr int kSmallP2pBlocks = 16;" \
  "constexpr int kSmallP2pBlocks = 32;" braid braidrun sendrecv_perf alltoall_perf
gpu_tests numeric_device_test device_coll_test device_mp_test matmul_gpu_test
wait
export PERF_TIMEOUT=60
S="-b 128K -e 16M -f 2 -c 1 -n 20 -w 3"
for c in sendrecv alltoall; do
  one $c nccl ${c}_shm_nccl NCCL_P2P_DISABLE=1 -- $S
  for r in 1 2; do one $c braid ${c}_shm_$r NCCL_P2P_DISABLE=1 -- $S; done
done
T="-b 512K -e 4M -f 2 -c 1 -n 30 -w 5"
one alltoall nccl a2a_nccl -- $T; one sendrecv nccl sr_nccl -- $T
for r in 1 2 3; do
  one alltoall braid a2a_t16_$r -- $T; B=$VAR/build-var one alltoall braid a2a_t32_$r -- $T
  one sendrecv braid sr_t16_$r -- $T; B=$VAR/build-var one sendrecv braid sr_t32_$r -- $T
done
probe_build
for r in 1 2 3; do probe braid alltoall 1048576 1000; done; probe nccl alltoall 1048576 1000
gpu_pack
