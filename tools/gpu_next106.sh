#!/usr/bin/env bash
# Twenty-fifth session, call a: main e01892e (712671e's isOneWayColl, and PrimsShared's folded setup) carried as
# build-new: every gpu test, the p2p tests under 24 and 28. Then whether the root's local copy sets gathers' and
# scatters' time under a CTA bound: 256 / 512 MB unbounded with BRAID_P2P_COPY_CTAS 10 and 16 beside the default
# (32), and under 20 and 24 main against build-var (tools/var_copywhole.patch: copies up to the whole bound, not
# half), NCCL beside, two rounds. tools/pack_carry.sh build-new build-var.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next106_out}; L=$OUT/next106; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
N=$PWD/build-new V=$PWD/build-var
B=$N; export LD_LIBRARY_PATH=$N/lib
echo "build-new of $(cat $N/HEAD); build-var of $(cat $V/HEAD)"
gpu_tests cluster_gpu_test fifo_gpu_test device_coll_test device_errors_test device_p2p_group_test \
  numeric_device_test device_one_rank_test device_mp_test matmul_gpu_test
for b in 24 28; do (export NCCL_MAX_CTAS=$b; L=$L/ctas$b; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test); done
export PERF_TIMEOUT=60
S="-b 256M -e 512M -f 2 -c 1 -n 10 -w 3"
for r in 1 2; do
  for c in gather scatter; do
    B=$N; one $c nccl ${c}0_nccl_$r LD_LIBRARY_PATH=$N/lib -- $S
    B=$N; one $c braid ${c}0_main_$r LD_LIBRARY_PATH=$N/lib -- $S
    for k in 10 16; do B=$N; one $c braid ${c}0_copy${k}_$r LD_LIBRARY_PATH=$N/lib BRAID_P2P_COPY_CTAS=$k -- $S; done
    for b in 20 24; do
      B=$N; one $c nccl ${c}${b}_nccl_$r LD_LIBRARY_PATH=$N/lib NCCL_MAX_CTAS=$b -- $S
      B=$N; one $c braid ${c}${b}_main_$r LD_LIBRARY_PATH=$N/lib NCCL_MAX_CTAS=$b -- $S
      B=$V; one $c braid ${c}${b}_var_$r LD_LIBRARY_PATH=$V/lib NCCL_MAX_CTAS=$b -- $S
    done
  done
done
gpu_pack
