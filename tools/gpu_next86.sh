#!/usr/bin/env bash
# Prepared in the twenty-first session for the next one (not run): tools/var_p2phalf.patch, p2p launches under a
# CTA bound cut their ring transfers over half the bound instead of 7/16 (4 channels under 8, 8 under 16, 12
# under 24). Under NCCL_MAX_CTAS=8 send/recv 256 MB ran 0.71x NCCL and gather/scatter 4-256 MB 0.64-0.88x
# (docs/gpu/2026-12-03f): 3 channels, each CTA near the ~40 GB/s one CTA copies over NVLink. Device call (2 GPUs,
# ~5 min). Carry two builds of this machine:
#   tools/build_carry.sh build-ph tools/var_p2phalf.patch -- braidrun sendrecv_perf alltoall_perf gather_perf \
#     scatter_perf device_coll_test device_p2p_group_test device_mp_test
#   tools/build_carry.sh build-m0 /dev/null -DBRAID_KERNELS=minimal -DBRAID_BUILD_TESTS=OFF -- sendrecv_perf \
#     alltoall_perf gather_perf scatter_perf
# device_p2p_group_test and device_coll_test under NCCL_MAX_CTAS=8 and 24 on the variant, device_mp_test; then
# under NCCL_MAX_CTAS=8, 16 and 24: NCCL, main and the variant, the four p2p collectives, 1-256 MB, -c 1.
# If it wins: land it (p2p_plan.h, p2p_plan_test.cc, README's NCCL_MAX_NCHANNELS row says 7/16).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next86_out}; L=$OUT/next86; mkdir -p "$L"
source tools/gpu_common.sh
gpu_carried build-ph tools/var_p2phalf.patch
[[ -x build-m0/bin/sendrecv_perf ]] || { echo "build-m0 was not carried"; exit 1; }
nvidia-smi -L
B=$PWD/build-ph
export LD_LIBRARY_PATH=$B/lib
gpu_tests device_mp_test
for b in 8 24; do (export NCCL_MAX_CTAS=$b; L=$L/ctas$b; mkdir -p $L; gpu_tests device_p2p_group_test device_coll_test); done
export PERF_TIMEOUT=90
S="-b 1M -e 256M -f 4 -c 1 -n 10 -w 3"
for b in 8 16 24; do
  for c in sendrecv alltoall gather scatter; do
    B=$PWD/build-m0; E=LD_LIBRARY_PATH=$B/lib
    one $c nccl ${c}${b}_nccl_1 $E NCCL_MAX_CTAS=$b -- $S
    one $c braid ${c}${b}_main_1 $E NCCL_MAX_CTAS=$b -- $S
    B=$PWD/build-ph; E=LD_LIBRARY_PATH=$B/lib
    one $c braid ${c}${b}_half_1 $E NCCL_MAX_CTAS=$b -- $S
  done
done
gpu_pack
