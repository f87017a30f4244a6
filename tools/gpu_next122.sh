#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min), twenty-seventh session, call d: build-cap (the working tree after d14e9c9, balanced
# chunks capped at 256 KiB only on paired budgets or over kP2pBalancedCapMinParts (32) channels or more, with
# tools/var_capparts.patch: BRAID_VAR_CAP_PARTS overrides that 32). The p2p gpu tests and device_errors_test
# unbounded (64 channels: capped) and the p2p tests under 17 (paired: capped) and 24 (12 / 24 channels: not); then
# where unpaired launches stop losing to the cap (calls b, c: 7% under 22, 2% under 24, 1-2% gain at 64 channels):
# send/recv and gather 128 / 512 MB under 24, 32, 48, 64 and unbounded (12 / 16 / 24 / 32 / 64 channels a
# direction), BRAID_VAR_CAP_PARTS=100000 (never) against 2 (always), two rounds, NCCL in the first. Before
# those, small all-reduce (8 B-64 KB): the tuner's log and default / LL128 / LL forced / NCCL, two rounds.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next122_out}; L=$OUT/next122; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
X=$PWD/build-cap
gpu_carried $X tools/var_capparts.patch
echo "build-cap of $(cat $X/HEAD)"
B=$X; export LD_LIBRARY_PATH=$X/lib
gpu_tests device_p2p_balance_test device_p2p_group_test device_mp_test device_errors_test
for b in 17 24; do (export NCCL_MAX_CTAS=$b; L=$L/ctas$b; mkdir -p $L; gpu_tests device_p2p_balance_test device_p2p_group_test device_mp_test); done
unset LD_LIBRARY_PATH
export PERF_TIMEOUT=60
# Call c's full table had the tuner's all-reduce at 6.6-8.6 us over 8 B-64 KB where LL128 forced ran 5.2-5.6:
# the tuner's choices (TUNING log) and two rounds of default / LL128 / LL forced / NCCL.
A="-b 8 -e 64K -f 8 -c 1 -n 50 -w 10"
one all_reduce braid ar_small_log LD_LIBRARY_PATH=$X/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING -- -b 8 -e 64K -f 8 -c 1 -n 2 -w 1
for r in 1 2; do
  one all_reduce nccl ar_small_nccl_$r LD_LIBRARY_PATH=$X/lib -- $A
  one all_reduce braid ar_small_default_$r LD_LIBRARY_PATH=$X/lib -- $A
  one all_reduce braid ar_small_ll128_$r LD_LIBRARY_PATH=$X/lib NCCL_PROTO=LL128 -- $A
  one all_reduce braid ar_small_ll_$r LD_LIBRARY_PATH=$X/lib NCCL_PROTO=LL -- $A
done
S="-b 128M -e 512M -f 4 -c 1 -n 10 -w 3"
for r in 1 2; do
  for b in 24 32 48 64 0; do
    if [[ $b == 0 ]]; then E=(BRAID_UNBOUNDED_RUN=1); else E=(NCCL_MAX_CTAS=$b); fi
    for c in sendrecv gather; do
      [[ $r == 1 ]] && one $c nccl ${c}${b}_nccl LD_LIBRARY_PATH=$X/lib "${E[@]}" -- $S
      one $c braid ${c}${b}_never_$r LD_LIBRARY_PATH=$X/lib "${E[@]}" BRAID_VAR_CAP_PARTS=100000 -- $S
      one $c braid ${c}${b}_always_$r LD_LIBRARY_PATH=$X/lib "${E[@]}" BRAID_VAR_CAP_PARTS=2 -- $S
    done
  done
done
gpu_pack
