#!/usr/bin/env bash
# Device call (2 GPUs, ~2.5 min): A/B of BRAID_P2P_PIECES (default 4, pieces >= 128 KiB) against 1 on the
# p2p collectives, after gather/scatter at 2-8 MB measured slower in call zd than in the ninth session
# (gather 8 MB 26.8 against 18.5 us). Alternating runs, NCCL once. Raw outputs: $OUT/piecesab.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_piecesab_out}; L=$OUT/piecesab; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid gather_perf scatter_perf alltoall_perf sendrecv_perf
export PERF_TIMEOUT=40
P="-b 1M -e 32M -f 2 -c 1 -n 20 -w 5"
for c in gather scatter alltoall sendrecv; do
  a=1; case $c in gather|scatter) a=3 ;; esac
  one $c nccl ${c}_nccl -- $P -a $a
  for r in 1 2; do
    one $c braid ${c}_p4_$r -- $P -a $a
    one $c braid ${c}_p1_$r BRAID_P2P_PIECES=1 -- $P -a $a
  done
done
gpu_pack
