#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min), twentieth session. Carry build-probe (pcie_assist_probe, nvcc -O3 -arch=sm_90
# -std=c++17 tools/pcie_assist_probe.cu -o build-probe/pcie_assist_probe), build-sp (tools/build_carry.sh build-sp
# tools/var_spread.patch -DBRAID_KERNELS=minimal -DBRAID_BUILD_TESTS=OFF -- the five ring perf tools) and
# build-main (as gpu_next72.sh).
# 1. pcie_assist_probe: does a path through pinned host memory add to NVLink's ~365 GB/s per direction?
# 2. NCCL's spread scheduling policy beside the cluster attribute (BRAID_CLUSTER_SPREAD=1 in build-sp) against
#    clusters as main launches them (=0), two interleaved rounds, 16-512 MB, -c 1.
# 3. The full table's single slow points (call a: alltoall 16 KB, gather 32 KB, scatter 512 B, send/recv 512 B,
#    reduce 8 KB out of place): two interleaved rounds of NCCL and main around them, -n 100.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next73_out}; L=$OUT/next73; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
for a in "32 16" "48 16" "32 32" "64 32"; do
  echo "== pcie_assist_probe $a"; timeout 60 build-probe/pcie_assist_probe $a 2>&1 | tee -a $L/pcie_assist.txt
done
gpu_carried build-sp tools/var_spread.patch
export PERF_TIMEOUT=60
B=$PWD/build-sp; E=LD_LIBRARY_PATH=$B/lib
for r in 1 2; do
  for c in broadcast all_gather reduce_scatter all_reduce; do
    S="-b 16M -e 512M -f 4 -c 1 -n 10 -w 3"
    one $c braid ${c}_plain_$r $E BRAID_CLUSTER_SPREAD=0 -- $S
    one $c braid ${c}_spread_$r $E BRAID_CLUSTER_SPREAD=1 -- $S
  done
done
B=$PWD/build-main; E=LD_LIBRARY_PATH=$B/lib
declare -A F=([alltoall]="-b 8K -e 32K" [gather]="-b 16K -e 64K" [scatter]="-b 256 -e 1K" [sendrecv]="-b 256 -e 1K"
  [reduce]="-b 4K -e 16K")
for r in 1 2; do
  for c in alltoall gather scatter sendrecv reduce; do
    S="${F[$c]} -f 2 -c 1 -n 100 -w 10"
    one $c nccl ${c}_nccl_$r $E -- $S
    one $c braid ${c}_main_$r $E -- $S
  done
done
gpu_pack
