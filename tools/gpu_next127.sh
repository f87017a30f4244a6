#!/usr/bin/env bash
# Device call (2 GPUs, ~4 min), twenty-eighth session, call d: the landing build (build-new: a ring over PCIe P2P
# plans on the P2pPcie rows, where NVML says the GPUs share no NVLink; this NV18 pair must still plan as NVLink).
# Its init and TUNING lines for an all-reduce and a send/recv, then device_coll_test, device_errors_test,
# device_mp_test and device_p2p_group_test unbounded; then gather and scatter 8-512 MB with NCCL and Braid both under
# NCCL_MAX_P2P_NCHANNELS=16 and =8 (call c did send/recv and all-to-all), one round.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next127_out}; L=$OUT/next127; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
X=$PWD/build-new
echo "build-new of $(cat $X/HEAD)"
B=$X
export PERF_TIMEOUT=60
one all_reduce braid info_ar LD_LIBRARY_PATH=$X/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING -- -b 8M -e 8M -c 1 -n 5 -w 2
one sendrecv braid info_sr LD_LIBRARY_PATH=$X/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING -- -b 64M -e 64M -c 1 -n 5 -w 2
grep -h "tuner plans\|joined by NVLink\|no NVLink\|NVML" $L/info_ar.txt $L/info_sr.txt | sed 's/^.*INFO //' | sort | uniq -c | head
grep -h "TUNING" $L/info_ar.txt | head -3
(export LD_LIBRARY_PATH=$X/lib
 gpu_tests device_p2p_group_test device_mp_test device_errors_test device_coll_test; grep -h "estimated" $L/device_mp_test.txt)
S="-b 8M -e 512M -f 4 -c 1 -n 10 -w 3"
for c in gather scatter; do
  for b in 16 8; do
    one $c nccl ${c}_p2p${b}_nccl LD_LIBRARY_PATH=$X/lib NCCL_MAX_P2P_NCHANNELS=$b -- $S
    one $c braid ${c}_p2p${b}_braid LD_LIBRARY_PATH=$X/lib NCCL_MAX_P2P_NCHANNELS=$b -- $S
  done
done
gpu_pack
