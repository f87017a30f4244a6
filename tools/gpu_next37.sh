#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min), the fifteenth session's third: the split one-shot's in-place guard counted
# before devPostSend's fence (the working tree): device_coll_test, all-reduce 4-64 MB in and out of place
# against NCCL, two rounds. Two timing variants on top (docs/gpu/2026-11-27c/*.patch, against fda3979): remote-FIFO
# stores issued before the local output's in the two-destination steps (copySend, recvCopySend,
# recvReduceCopySend) for broadcast
# (-a 3), all-gather and ring all-reduce at 128-512 MB; and fence.acq_rel.gpu instead of .sys before tail
# (diagnostic only: what the system fence costs a SIMPLE hop), all-reduce on SIMPLE 8 B-64 KB and 8 MB.
# Raw outputs: $OUT/next37.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next37_out}; L=$OUT/next37; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build_patch remotefirst docs/gpu/2026-11-27c/remotefirst.patch braid all_reduce_perf broadcast_perf all_gather_perf
gpu_build_patch fencegpu docs/gpu/2026-11-27c/fencegpu.patch braid all_reduce_perf
gpu_build braid all_reduce_perf broadcast_perf all_gather_perf device_coll_test
wait
echo "builds: $(( $(date +%s) - GPU_T0 )) s"
gpu_tests device_coll_test
export PERF_TIMEOUT=60
S="-b 4M -e 64M -f 2 -c 1 -n 30 -w 5"
for round in 1 2; do
  one all_reduce nccl ar_nccl_$round -- $S
  one all_reduce braid ar_main_$round -- $S
done
for f in "$L"/ar_*_[12].txt; do
  echo "$(basename $f .txt) in-place: $(grep -v '^#' "$f" | awk 'NF>12 && $1 ~ /^[0-9]+$/ {printf "%s:%s(%s) ", $1, $10, $13}')"
done
RF=/tmp/braid-remotefirst/build-var
BC="-b 128M -e 512M -f 2 -c 1 -n 20 -w 3 -a 3"
AG="-b 128M -e 512M -f 2 -c 1 -n 20 -w 3"
for round in 1 2; do
  [[ $(( $(date +%s) - GPU_T0 )) -gt 420 ]] && { echo "skipping round $round (time)"; break; }
  B=$NEWB; one broadcast nccl bc_nccl_$round -- $BC
  B=$NEWB; one broadcast braid bc_main_$round -- $BC
  B=$RF; one broadcast braid bc_rf_$round -- $BC
  B=$NEWB; one all_gather nccl ag_nccl_$round -- $AG
  B=$NEWB; one all_gather braid ag_main_$round -- $AG
  B=$RF; one all_gather braid ag_rf_$round -- $AG
  B=$NEWB; one all_reduce braid arl_main_$round -- $AG
  B=$RF; one all_reduce braid arl_rf_$round -- $AG
  B=$NEWB
done
for f in "$L"/bc_*_[12].txt; do
  echo "$(basename $f .txt) in-place: $(grep -v '^#' "$f" | awk 'NF>12 && $1 ~ /^[0-9]+$/ {printf "%s:%s ", $1, $10}')"
done
FG=/tmp/braid-fencegpu/build-var
SM="-b 8 -e 64K -f 8 -c 0 -n 50 -w 5"
for round in 1 2; do
  B=$NEWB; one all_reduce braid simple_main_$round NCCL_PROTO=Simple -- $SM
  B=$FG; one all_reduce braid simple_fg_$round NCCL_PROTO=Simple -- $SM
  B=$NEWB; one all_reduce braid big_main_$round -- -b 8M -e 8M -c 0 -n 40 -w 5
  B=$FG; one all_reduce braid big_fg_$round -- -b 8M -e 8M -c 0 -n 40 -w 5
  B=$NEWB
done
gpu_pack
