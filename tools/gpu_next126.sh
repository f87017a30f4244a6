#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min), twenty-eighth session, call c. NCCL's p2p kernels do not heed NCCL_MAX_CTAS
# (NVIDIA/nccl#2421: 32 CTAs under maxCTAs of 1 or 8; #1598: NCCL_MAX_P2P_NCHANNELS bounds them), so the send/recv and
# all-to-all runs "under 17" compared Braid on 17 SMs with NCCL on its full p2p channel count. This call: NCCL's init
# log under NCCL_MAX_CTAS=17 and under NCCL_MAX_P2P_NCHANNELS=16 (its p2p channel count), then the like-for-like
# comparison, NCCL and Braid (build-new: this session's main, which reads NCCL_MAX_P2P_NCHANNELS) both under
# NCCL_MAX_P2P_NCHANNELS=16 and =8, send/recv and all-to-all 8-512 MB, two rounds; Braid under NCCL_MAX_CTAS=16 beside
# them (the same cut). First the landing build's p2p tests: device_p2p_group_test (with the new
# P2pChannelBoundBoundsPointToPointOnly) and device_p2p_balance_test under NCCL_MAX_P2P_NCHANNELS=17 (paired CTAs).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next126_out}; L=$OUT/next126; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
X=$PWD/build-new
echo "build-new of $(cat $X/HEAD)"
(B=$X; export LD_LIBRARY_PATH=$X/lib
 gpu_tests device_p2p_group_test; grep -h "estimated" $L/device_p2p_group_test.txt
 export NCCL_MAX_P2P_NCHANNELS=17; L=$L/p2p17; mkdir -p $L; gpu_tests device_p2p_balance_test)
export PERF_TIMEOUT=60
B=$X
one sendrecv nccl info_ctas17 LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=17 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV -- -b 64M -e 64M -c 1 -n 5 -w 2
one sendrecv nccl info_p2p16 LD_LIBRARY_PATH=$X/lib NCCL_MAX_P2P_NCHANNELS=16 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV -- -b 64M -e 64M -c 1 -n 5 -w 2
grep -h "p2p channels\|MAX_CTAS\|P2P_NCHANNELS" $L/info_ctas17.txt $L/info_p2p16.txt | sort | uniq -c | head -12
S="-b 8M -e 512M -f 4 -c 1 -n 10 -w 3"
for r in 1 2; do
  for c in sendrecv alltoall; do
    for b in 16 8; do
      one $c nccl ${c}_p2p${b}_nccl_$r LD_LIBRARY_PATH=$X/lib NCCL_MAX_P2P_NCHANNELS=$b -- $S
      one $c braid ${c}_p2p${b}_braid_$r LD_LIBRARY_PATH=$X/lib NCCL_MAX_P2P_NCHANNELS=$b -- $S
    done
    [[ $r == 1 ]] && one $c braid ${c}_ctas16_braid_$r LD_LIBRARY_PATH=$X/lib NCCL_MAX_CTAS=16 -- $S
  done
done
gpu_pack
