#!/usr/bin/env bash
# Device call (2 GPUs, ~2.5 min), twentieth session, on build-main (as gpu_next72.sh). Call c: under a CTA bound
# of 24 the ring all-reduce (launched in clusters from 16 MiB) beat the tuner's one-shot (launched plainly) at
# 16 MB (70.4 us against 80.3; NCCL 81.6). Before the tuner learns that: ring against the tuner's pick at
# 8-512 MB on the default 64 channels and under bounds of 32 and 24 (NCCL_MAX_CTAS), NCCL beside each, two
# interleaved rounds, -c 1.
# Then the p2p cut (tools/var_p2pcut.patch, carried as build-pc: tools/build_carry.sh build-pc
# tools/var_p2pcut.patch -DBRAID_KERNELS=minimal -DBRAID_BUILD_TESTS=OFF -- sendrecv_perf alltoall_perf
# gather_perf scatter_perf): a transfer of 16u-32u (1-2 MiB) on one channel per 64 KiB (17-32) instead of 9-16
# channels of 128 KiB. Call c: send/recv 2 MB 15.4 us on 32 x 64 KiB against 16.5 on 16 x 128 KiB, all-to-all 4 MB
# 15.0-15.4 against 16.4. NCCL, main and the cut, three rounds, at 1-2 MiB per peer.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next75_out}; L=$OUT/next75; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-main
[[ -x $B/bin/all_reduce_perf ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
nvidia-smi -L
export PERF_TIMEOUT=60
E=LD_LIBRARY_PATH=$B/lib
S="-b 8M -e 512M -f 2 -c 1 -n 10 -w 3"
for r in 1 2; do
  for b in 64 32 24; do
    one all_reduce nccl ar${b}_nccl_$r $E NCCL_MAX_CTAS=$b -- $S
    one all_reduce braid ar${b}_main_$r $E NCCL_MAX_CTAS=$b -- $S
    one all_reduce braid ar${b}_ring_$r $E NCCL_MAX_CTAS=$b NCCL_ALGO=Ring -- $S
  done
done
gpu_carried build-pc tools/var_p2pcut.patch
declare -A F=([sendrecv]="-b 1M -e 2M -i 256K" [alltoall]="-b 2M -e 4M -i 512K" [gather]="-b 2M -e 4M -i 512K"
  [scatter]="-b 2M -e 4M -i 512K")
for r in 1 2 3; do
  for c in sendrecv alltoall gather scatter; do
    S="${F[$c]} -c 1 -n 20 -w 5"
    B=$PWD/build-main; E=LD_LIBRARY_PATH=$B/lib
    one $c nccl ${c}_nccl_$r $E -- $S
    one $c braid ${c}_main_$r $E -- $S
    B=$PWD/build-pc; E=LD_LIBRARY_PATH=$B/lib
    one $c braid ${c}_cut_$r $E -- $S
  done
done
gpu_pack
