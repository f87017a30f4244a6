#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min), twenty-eighth session, call a: more threads for paired p2p CTAs. Under CTA bounds of
# 2-20 a ring channel's send and receive share one CTA of 512 threads, 256 a direction, which moved ~19.4 GB/s a
# channel against 32.5 for a whole CTA (send/recv 512 MB under 17 at 0.90x NCCL). Variants launch paired CTAs with
# BRAID_P2P_PAIR_THREADS threads, the p2p kernels built with that launch bound (registers: 640 -> 96 a thread, 60 B
# spilled; 768 -> 80, 492 B; 1024 -> 64, 872 B):
#   build-pt640 / build-pt768 / build-pt1024   tools/var_pt640.patch / var_pt768.patch / var_pt1024.patch
# The p2p tests under 17 for each variant at its thread count, then two rounds of send/recv 8-512 MB under 17 and 20
# (NCCL, main c041c76, the variants), all-to-all under 17, and send/recv unbounded (no CTA pairs there: the bound's
# register cost alone).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next124_out}; L=$OUT/next124; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main
echo "build-main of $(cat $M/HEAD)"
for t in 640 768 1024; do gpu_carried build-pt$t tools/var_pt$t.patch; done
for t in 640 768 1024; do
  (B=$PWD/build-pt$t; export LD_LIBRARY_PATH=$B/lib NCCL_MAX_CTAS=17 BRAID_P2P_PAIR_THREADS=$t; L=$L/pt$t; mkdir -p $L
   gpu_tests device_p2p_balance_test device_p2p_group_test)
done
export PERF_TIMEOUT=60
S="-b 8M -e 512M -f 4 -c 1 -n 10 -w 3"
run_all() {  # coll bound round
  local c=$1 b=$2 r=$3 E t
  if [[ $b == 0 ]]; then E=(BRAID_UNBOUNDED_RUN=1); else E=(NCCL_MAX_CTAS=$b); fi
  B=$M; one $c nccl ${c}${b}_nccl_$r LD_LIBRARY_PATH=$M/lib "${E[@]}" -- $S
  B=$M; one $c braid ${c}${b}_main_$r LD_LIBRARY_PATH=$M/lib "${E[@]}" -- $S
  for t in 640 768 1024; do
    B=$PWD/build-pt$t; one $c braid ${c}${b}_pt${t}_$r LD_LIBRARY_PATH=$B/lib BRAID_P2P_PAIR_THREADS=$t "${E[@]}" -- $S
  done
}
for r in 1 2; do for b in 17 20; do run_all sendrecv $b $r; done; done
run_all alltoall 17 1
run_all sendrecv 0 1
gpu_pack
