#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min), twenty-second session: paired p2p CTAs under a CTA bound (a ring channel's send
# and receive on two warp groups of one CTA, the ring cut over the whole bound; LL-sized transfers over half,
# a CTA per direction; p2p_plan.h), never run on a GPU before. build-new: a default build of the working tree
# with the change (bin/ the p2p perf tools, braidrun, device_coll_test, device_p2p_group_test, device_mp_test);
# build-b0: the committed tree before it (p2p cut over half a bound, a CTA per direction; minimal kernels, the
# four p2p perf tools). Tests under NCCL_MAX_CTAS=8 (paired), 16, and unbounded (unpaired, the same kernel);
# then NCCL, before and after under 8, 16 and 24: send/recv, gather, scatter, all-to-all 1-256 MB, one round.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next90_out}; L=$OUT/next90; mkdir -p "$L"
source tools/gpu_common.sh
[[ -x build-new/bin/device_coll_test && -x build-b0/bin/sendrecv_perf ]] || { echo "build-new / build-b0 not carried"; exit 1; }
nvidia-smi -L
B=$PWD/build-new; export LD_LIBRARY_PATH=$B/lib
(export NCCL_MAX_CTAS=8; L=$L/ctas8; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test device_coll_test)
(export NCCL_MAX_CTAS=16; L=$L/ctas16; mkdir -p $L; gpu_tests device_p2p_group_test)
(L=$L/unbounded; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test)
export PERF_TIMEOUT=60
S="-b 1M -e 256M -f 4 -c 1 -n 10 -w 3"
for b in 8 16 24; do
  for c in sendrecv gather scatter alltoall; do
    B=$PWD/build-b0; E=LD_LIBRARY_PATH=$B/lib
    one $c nccl ${c}${b}_nccl_1 $E NCCL_MAX_CTAS=$b -- $S
    one $c braid ${c}${b}_b0_1 $E NCCL_MAX_CTAS=$b -- $S
    B=$PWD/build-new; E=LD_LIBRARY_PATH=$B/lib
    one $c braid ${c}${b}_pair_1 $E NCCL_MAX_CTAS=$b -- $S
  done
done
B=$PWD/build-new; E=LD_LIBRARY_PATH=$B/lib
one sendrecv braid sendrecv_unb_pair_1 $E -- $S
one sendrecv braid sendrecv8_small_pair_1 $E NCCL_MAX_CTAS=8 -- -b 8 -e 1M -f 8 -c 1 -n 20 -w 5
B=$PWD/build-b0; E=LD_LIBRARY_PATH=$B/lib
one sendrecv braid sendrecv8_small_b0_1 $E NCCL_MAX_CTAS=8 -- -b 8 -e 1M -f 8 -c 1 -n 20 -w 5
gpu_pack
