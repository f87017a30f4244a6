#!/usr/bin/env bash
# Ran in the nineteenth session as call f (docs/gpu/2026-12-01f).
# Device call (2 GPUs, ~1.5 min), nineteenth session: the cluster variant of gpu_next67.sh (carry build-cl) on what
# that call left open: the ring all-reduce at 64-512 MB, all-gather and reduce-scatter at 8-32 MB (where to start
# clustering), and launches captured in CUDA graphs (-G) with clusters.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next68_out}; L=$OUT/next68; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-cl
gpu_carried "$B" tools/var_cluster.patch
nvidia-smi -L
export PERF_TIMEOUT=60
E=LD_LIBRARY_PATH=$B/lib
for r in 1 2; do
  for c in all_reduce all_gather reduce_scatter; do
    S="-b 64M -e 512M -f 2 -c 1 -n 10 -w 3"
    [[ $c != all_reduce ]] && S="-b 8M -e 32M -f 2 -c 1 -n 20 -w 5"
    one $c nccl ${c}_nccl_$r $E -- $S
    one $c braid ${c}_c0_$r $E -- $S
    one $c braid ${c}_c4_$r $E BRAID_CLUSTER=4 -- $S
  done
done
for c in broadcast all_reduce; do
  one $c braid ${c}_c4_graph $E BRAID_CLUSTER=4 -- -b 64M -e 128M -f 2 -c 1 -n 10 -w 3 -G 5
done
gpu_pack
