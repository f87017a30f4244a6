#!/usr/bin/env bash
# Device call (2 GPUs, ~2.5 min), twentieth session, build-main of 25540be. Call f: under a CTA bound of 24 the
# ring all-reduce in clusters of 2 (or 8) beat clusters of 4 (512 MB 1671 / 1695 us against 1797; NCCL 1697).
# Does that hold for the other ring collectives, and for clusters of 3 (24 = 8 GPCs x 3)? Broadcast, all-gather,
# reduce-scatter and the ring all-reduce (NCCL_ALGO=Ring) at 16 / 64 / 256 MB under NCCL_MAX_CTAS=24, in clusters
# of 2, 3, 4 and 8, two rounds; NCCL under the same bound once per round. -c 1.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next78_out}; L=$OUT/next78; mkdir -p "$L"
source tools/gpu_common.sh
B=$PWD/build-main
[[ -x $B/bin/all_reduce_perf ]] || { echo "build-main was not carried"; exit 1; }
echo "build-main of $(cat $B/HEAD)"
nvidia-smi -L
export PERF_TIMEOUT=60
E=LD_LIBRARY_PATH=$B/lib
S="-b 16M -e 256M -f 4 -c 1 -n 10 -w 3"
for r in 1 2; do
  for c in broadcast all_gather reduce_scatter all_reduce; do
    A=BRAID_UNUSED=0; [[ $c == all_reduce ]] && A=NCCL_ALGO=Ring
    one $c nccl ${c}_nccl_$r $E NCCL_MAX_CTAS=24 -- $S
    for k in 2 3 4 8; do
      one $c braid ${c}_c${k}_$r $E NCCL_MAX_CTAS=24 NCCL_CGA_CLUSTER_SIZE=$k $A -- $S
    done
  done
done
gpu_pack
