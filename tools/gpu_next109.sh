#!/usr/bin/env bash
# Twenty-fifth session, call d: balanced p2p transfers with the poster off the claim barrier (sendChunk; call c's
# form waited for the poster's fence at every step and lost 5% on 10-12 CTAs). build-new: the working tree on
# e01892e; build-var: the same with kP2pOneWayWideCtas 17 (gathers and scatters on the whole bound from 17 CTAs);
# build-base: e01892e (fixed shares). Every gpu test on build-new; device_p2p_group_test and device_mp_test under
# 24 and 20 on build-new and build-var. Then one round, 128-512 MB: send/recv and all-to-all unbounded and under
# 20, gather and scatter unbounded and under 24 and 20: NCCL, base, new (and var under 24 and 20).
# tools/pack_carry.sh build-base build-new build-var.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next109_out}; L=$OUT/next109; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
A=$PWD/build-base N=$PWD/build-new V=$PWD/build-var
B=$N; export LD_LIBRARY_PATH=$N/lib
echo "build-base of $(cat $A/HEAD); build-new of $(cat $N/HEAD); build-var of $(cat $V/HEAD)"
gpu_tests device_p2p_balance_test device_errors_test device_p2p_group_test device_mp_test cluster_gpu_test \
  fifo_gpu_test device_coll_test numeric_device_test device_one_rank_test matmul_gpu_test
for b in 24 20; do (export NCCL_MAX_CTAS=$b; L=$L/ctas$b; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test); done
for b in 24 20; do (export NCCL_MAX_CTAS=$b LD_LIBRARY_PATH=$V/lib; B=$V; L=$L/var$b; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test); done
export PERF_TIMEOUT=60
S="-b 128M -e 512M -f 2 -c 1 -n 8 -w 2"
for c in gather scatter sendrecv alltoall; do
  for b in 0 24 20; do
    [[ $b == 24 && ( $c == sendrecv || $c == alltoall ) ]] && continue
    E=(); [[ $b != 0 ]] && E+=(NCCL_MAX_CTAS=$b)
    B=$N; one $c nccl ${c}${b}_nccl LD_LIBRARY_PATH=$N/lib "${E[@]}" -- $S
    B=$A; one $c braid ${c}${b}_base LD_LIBRARY_PATH=$A/lib "${E[@]}" -- $S
    B=$N; one $c braid ${c}${b}_new LD_LIBRARY_PATH=$N/lib "${E[@]}" -- $S
    if [[ $b != 0 && ( $c == gather || $c == scatter ) ]]; then
      B=$N; one $c braid ${c}${b}_var LD_LIBRARY_PATH=$V/lib "${E[@]}" -- $S
    fi
  done
done
gpu_pack
