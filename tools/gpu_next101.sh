#!/usr/bin/env bash
# Twenty-fourth session, call a: main's last code commit 19455d7 (P2pCutFacts::cut, host code) on the GPUs
# (device_p2p_group_test and device_mp_test unbounded and under 8 and 24), then a diagnostic of the FIFO step for
# large gathers and scatters (call 2026-12-05g found gathers faster on 2 MiB FIFOs under 24, scatters on 8 MiB):
# unbounded and under 32 and 24, 16-512 MB, NCCL_BUFFSIZE 2, 4 (the default on >16 channels) and 8 MiB.
# tools/pack_carry.sh build-final (a default build of HEAD).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next101_out}; L=$OUT/next101; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
B=$PWD/build-final; export LD_LIBRARY_PATH=$B/lib
echo "build-final of $(cat $B/HEAD)"
gpu_tests device_p2p_group_test device_mp_test
for b in 8 24; do (export NCCL_MAX_CTAS=$b; L=$L/ctas$b; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test); done
export PERF_TIMEOUT=60
S="-b 16M -e 512M -f 2 -c 1 -n 10 -w 3"
for r in 1 2; do
  for c in gather scatter; do
    for b in 0 32 24; do
      E=(LD_LIBRARY_PATH=$B/lib); [[ $b != 0 ]] && E+=(NCCL_MAX_CTAS=$b)
      one $c nccl ${c}${b}_nccl_$r "${E[@]}" -- $S
      for f in 2 4 8; do one $c braid ${c}${b}_f${f}m_$r "${E[@]}" NCCL_BUFFSIZE=$((f << 20)) -- $S; done
    done
  done
done
gpu_pack
