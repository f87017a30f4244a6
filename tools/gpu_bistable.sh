#!/usr/bin/env bash
# Device call (2 GPUs, ~3 min), eleventh session: the per-process slow state of mid-size p2p (2026-11-23c: one
# all-to-all process ran 1-4 MB at 11.3/13.2/16.5 us, two others at 14.6/17.9/22.9; NCCL 13.5/16.1/21.5).
# 1. Host cost per call: iter_probe with 30 iterations (the launch queue never fills, so "host enqueue of all"
#    / 30 is what one call costs the host), send/recv 1-4 MB and all-to-all 2-4 MB, both libraries.
# 2. CPU binding: all-to-all and send/recv 1-8 MB, three processes under mpirun's default binding and three
#    with --bind-to none; the first run reports the bindings.
# Raw outputs: $OUT/bistable.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_bistable_out}; L=$OUT/bistable; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun sendrecv_perf alltoall_perf
probe_build
for s in 1048576 2097152 4194304; do probe braid sendrecv $s 30; probe braid sendrecv $s 30; probe nccl sendrecv $s 30; done
for s in 2097152 4194304; do probe braid alltoall $s 30; probe braid alltoall $s 30; probe nccl alltoall $s 30; done
export PERF_TIMEOUT=40
A="-b 1M -e 8M -f 2 -c 1 -n 30 -w 5"
MPIRUN_OPTS="--report-bindings" one alltoall braid a2a_bind0 -- $A
grep -i "bound\|binding" $L/a2a_bind0.txt | head -4
for r in 1 2; do one alltoall braid a2a_bind$r -- $A; done
for r in 1 2 3; do MPIRUN_OPTS="--bind-to none" one alltoall braid a2a_nobind$r -- $A; done
for r in 1 2 3; do one sendrecv braid sr_bind$r -- $A; done
for r in 1 2 3; do MPIRUN_OPTS="--bind-to none" one sendrecv braid sr_nobind$r -- $A; done
gpu_pack
