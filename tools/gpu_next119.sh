#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min), twenty-seventh session, call a: the FIFO step of paired p2p rings under 17 and 20
# (call 2026-12-08h: NCCL_BUFFSIZE=2 MiB ran paired send/recv 1-7% faster than 4 MiB). Two rounds of send/recv and
# all-to-all 8-512 MB under 17, 20 and unbounded, with NCCL, main (fa51a57) and three variants:
#   build-bc    tools/var_balchunk.patch     balanced p2p chunks of at most 256 KiB (8 in flight: 2 MiB)
#   build-bc128 tools/var_balchunk128.patch  at most 128 KiB (1 MiB in flight)
#   build-s16   tools/var_steps16.patch      P2P FIFOs of 16 steps of 256 KiB (4 MiB in flight; collectives too)
# then all-reduce and all-gather 1-512 MB unbounded with NCCL, main and build-s16.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next119_out}; L=$OUT/next119; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main
echo "build-main of $(cat $M/HEAD)"
gpu_carried build-bc tools/var_balchunk.patch
gpu_carried build-bc128 tools/var_balchunk128.patch
gpu_carried build-s16 tools/var_steps16.patch
export PERF_TIMEOUT=60
S="-b 8M -e 512M -f 4 -c 1 -n 10 -w 3"
for r in 1 2; do
  for b in 17 20 0; do
    if [[ $b == 0 ]]; then E=(BRAID_UNBOUNDED_RUN=1); else E=(NCCL_MAX_CTAS=$b); fi
    for c in sendrecv alltoall; do
      B=$M; one $c nccl ${c}${b}_nccl_$r LD_LIBRARY_PATH=$M/lib "${E[@]}" -- $S
      for v in main bc bc128 s16; do
        B=$PWD/build-$v; one $c braid ${c}${b}_${v}_$r LD_LIBRARY_PATH=$B/lib "${E[@]}" -- $S
      done
    done
  done
done
S="-b 1M -e 512M -f 4 -c 1 -n 20 -w 5"
for c in all_reduce all_gather; do
  B=$M; one $c nccl ${c}_nccl LD_LIBRARY_PATH=$M/lib -- $S
  for v in main s16; do B=$PWD/build-$v; one $c braid ${c}_$v LD_LIBRARY_PATH=$B/lib -- $S; done
done
gpu_pack
