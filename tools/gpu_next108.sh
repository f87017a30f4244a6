#!/usr/bin/env bash
# Twenty-fifth session, call c: balanced p2p transfers (p2p_plan.h: p2pBalanced; build-new, the working tree on
# e01892e). The p2p gpu tests on build-new: the new device_p2p_balance_test, device_errors_test (its balanced
# mismatch), device_p2p_group_test and device_mp_test, the last two also under 24 and 20. Then send/recv, gather,
# scatter and all-to-all 128-512 MB, unbounded and under 24 and 20: NCCL, build-base (e01892e, fixed shares) and
# build-new; gathers and scatters under 24 and 20 also with build-var (build-new's tree with kP2pOneWayWideCtas 17:
# the whole bound from 17 CTAs), and again in a second round.
# tools/pack_carry.sh build-base build-new build-var.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next108_out}; L=$OUT/next108; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
A=$PWD/build-base N=$PWD/build-new V=$PWD/build-var
B=$N; export LD_LIBRARY_PATH=$N/lib
echo "build-base of $(cat $A/HEAD); build-new of $(cat $N/HEAD); build-var of $(cat $V/HEAD)"
gpu_tests device_p2p_balance_test device_errors_test device_p2p_group_test device_mp_test
for b in 24 20; do (export NCCL_MAX_CTAS=$b; L=$L/ctas$b; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test); done
export PERF_TIMEOUT=60
S="-b 128M -e 512M -f 2 -c 1 -n 8 -w 2"
for r in 1 2; do
  for c in sendrecv gather scatter alltoall; do
    for b in 0 24 20; do
      [[ $r == 2 && ( $b == 0 || $c == sendrecv || $c == alltoall ) ]] && continue
      E=(); [[ $b != 0 ]] && E+=(NCCL_MAX_CTAS=$b)
      B=$N; one $c nccl ${c}${b}_nccl_$r LD_LIBRARY_PATH=$N/lib "${E[@]}" -- $S
      B=$A; one $c braid ${c}${b}_base_$r LD_LIBRARY_PATH=$A/lib "${E[@]}" -- $S
      B=$N; one $c braid ${c}${b}_new_$r LD_LIBRARY_PATH=$N/lib "${E[@]}" -- $S
      if [[ $b != 0 && ( $c == gather || $c == scatter ) ]]; then
        B=$N; one $c braid ${c}${b}_var_$r LD_LIBRARY_PATH=$V/lib "${E[@]}" -- $S
      fi
    done
  done
done
gpu_pack
