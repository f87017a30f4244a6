#!/usr/bin/env bash
# Ran in the nineteenth session as call e (docs/gpu/2026-12-01e).
# Device call (2 GPUs, ~5 min), nineteenth session: thread-block clusters (tools/var_cluster.patch: BRAID_CLUSTER=N
# launches every kernel whose grid divides by N in clusters of N CTAs, which the hardware places on one GPC).
# cumem_probe (docs/gpu/2026-12-01d) showed a plain copy into the peer's memory move 369.5 GB/s one way and
# 364.4 both ways on 32 CTAs in clusters of 4, against 357.9 / 347.1 without (64 CTAs: 370.0 / 365.4 against
# 369.6 / 359.7); NCCL launches in clusters of 4 on sm_90. Carry build-cl:
#   tools/build_carry.sh build-cl tools/var_cluster.patch -DBRAID_KERNELS=minimal -DBRAID_BUILD_TESTS=OFF \
#     -- all_reduce_perf broadcast_perf reduce_perf all_gather_perf reduce_scatter_perf sendrecv_perf alltoall_perf
# then run: carry ["build-cl"], `bash tools/gpu_next67.sh`. NCCL, then the build with BRAID_CLUSTER unset (main's
# launches), 4 and 8; -c 1.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next67_out}; L=$OUT/next67; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-cl
gpu_carried "$B" tools/var_cluster.patch
nvidia-smi -L
export PERF_TIMEOUT=60
E=LD_LIBRARY_PATH=$B/lib
declare -A F=([all_reduce]="-b 512K -e 32M -f 2" [broadcast]="-b 32M -e 512M -f 4" [reduce]="-b 32M -e 512M -f 4"
  [all_gather]="-b 4M -e 256M -f 4" [reduce_scatter]="-b 4M -e 256M -f 4" [sendrecv]="-b 4M -e 256M -f 4"
  [alltoall]="-b 4M -e 256M -f 4")
for r in 1 2; do
  for c in all_reduce broadcast reduce all_gather reduce_scatter sendrecv alltoall; do
    [[ $r == 2 && $c != all_reduce && $c != broadcast && $c != reduce ]] && continue
    S="${F[$c]} -c 1 -n 20 -w 5"
    one $c nccl ${c}_nccl_$r $E -- $S
    one $c braid ${c}_c0_$r $E -- $S
    one $c braid ${c}_c4_$r $E BRAID_CLUSTER=4 -- $S
    one $c braid ${c}_c8_$r $E BRAID_CLUSTER=8 -- $S
  done
done
# Fewer CTAs in clusters: does broadcast keep its speed on 32 channels?
for c in broadcast reduce; do
  S="${F[$c]} -c 1 -n 20 -w 5"
  one $c braid ${c}_c0_ch32 $E NCCL_MAX_NCHANNELS=32 -- $S
  one $c braid ${c}_c4_ch32 $E NCCL_MAX_NCHANNELS=32 BRAID_CLUSTER=4 -- $S
done
gpu_pack
