#!/usr/bin/env bash
# Device call (2 GPUs, ~7 min), twenty-second session. Part 1 verifies main (c96a28e: cluster_gpu_test's new case
# for TuningFacts::clusterThree; 0c119c0 + ab09835, never run on a
# GPU: big FIFOs only between NVLink neighbours, the merged channel/FIFO offers, buffSize offered from the
# agreement) with build-main: fifo_gpu_test, cluster_gpu_test, device_mp_test, device_p2p_group_test, and under
# NCCL_MAX_CTAS=8 (16 MiB FIFOs) device_coll_test + device_p2p_group_test (~100 s the first). Part 2 is gpu_next86.sh's tools/var_p2phalf.patch
# (p2p ring transfers cut over half a CTA bound instead of 7/16) with build-main as the base:
#   tools/build_carry.sh build-ph tools/var_p2phalf.patch -DBRAID_KERNELS=minimal -- braidrun sendrecv_perf \
#     alltoall_perf gather_perf scatter_perf device_p2p_group_test device_mp_test (minimal: the carry limit)
# its p2p tests under NCCL_MAX_CTAS=8 (device_coll_test before it lands), then NCCL, main and the variant under 8, 16 and 24, the four p2p collectives.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next87_out}; L=$OUT/next87; mkdir -p "$L"
source tools/gpu_common.sh
[[ -x build-main/bin/fifo_gpu_test ]] || { echo "build-main was not carried"; exit 1; }
gpu_carried build-ph tools/var_p2phalf.patch
echo "build-main of $(cat build-main/HEAD)"
nvidia-smi -L
B=$PWD/build-main; export LD_LIBRARY_PATH=$B/lib
(L=$L/main; mkdir -p $L; gpu_tests fifo_gpu_test cluster_gpu_test device_mp_test device_p2p_group_test)
(export NCCL_MAX_CTAS=8; L=$L/main_ctas8; mkdir -p $L; gpu_tests device_coll_test device_p2p_group_test)
B=$PWD/build-ph; export LD_LIBRARY_PATH=$B/lib
(export NCCL_MAX_CTAS=8; L=$L/ph_ctas8; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test)
export PERF_TIMEOUT=90
S="-b 1M -e 256M -f 4 -c 1 -n 10 -w 3"
for b in 8 16 24; do
  for c in sendrecv gather scatter alltoall; do
    B=$PWD/build-main; E=LD_LIBRARY_PATH=$B/lib
    one $c nccl ${c}${b}_nccl_1 $E NCCL_MAX_CTAS=$b -- $S
    one $c braid ${c}${b}_main_1 $E NCCL_MAX_CTAS=$b -- $S
    B=$PWD/build-ph; E=LD_LIBRARY_PATH=$B/lib
    one $c braid ${c}${b}_half_1 $E NCCL_MAX_CTAS=$b -- $S
  done
done
# c96a28e: on 24 channels in clusters of 4 the one-shot keeps 128 MiB and up; the ring forced beside it.
B=$PWD/build-main; E=LD_LIBRARY_PATH=$B/lib
for r in 1 2; do
  one all_reduce nccl ar24c4_nccl_$r $E NCCL_MAX_CTAS=24 -- -b 64M -e 512M -f 2 -c 1 -n 10 -w 3
  one all_reduce braid ar24c4_new_$r $E NCCL_MAX_CTAS=24 NCCL_CGA_CLUSTER_SIZE=4 -- -b 64M -e 512M -f 2 -c 1 -n 10 -w 3
  one all_reduce braid ar24c4_ring_$r $E NCCL_MAX_CTAS=24 NCCL_CGA_CLUSTER_SIZE=4 NCCL_ALGO=Ring -- -b 64M -e 512M -f 2 -c 1 -n 10 -w 3
done
gpu_pack
