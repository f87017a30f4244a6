#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min), the twelfth session's second: the small p2p parameter tier at 32 blocks on main
# (device_coll_test), where an 8-byte collective's host time goes (tools/launch_cost.cu, both libraries), and
# today's all-reduce 8 B-32 MB (Braid twice, NCCL once) and broadcast/reduce 128-512 MB (two runs each,
# alternating), which were 0.98/0.99x NCCL at 512 MB in one run. Raw outputs: $OUT/next14.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next14_out}; L=$OUT/next14; mkdir -p "$L"
source tools/gpu_common.sh
gpu_build braid braidrun all_reduce_perf broadcast_perf reduce_perf device_coll_test
launch_cost_build
launch_cost braid; launch_cost nccl; launch_cost braid
gpu_tests device_coll_test
export PERF_TIMEOUT=90
A="-b 8 -e 32M -f 4 -c 1 -n 30 -w 5"
one all_reduce nccl ar_nccl -- $A; one all_reduce braid ar_1 -- $A; one all_reduce braid ar_2 -- $A
W="-b 128M -e 512M -f 2 -c 1 -n 10 -w 3"
for r in 1 2; do for c in broadcast reduce; do
  one $c nccl ${c}_nccl_$r -- $W; one $c braid ${c}_$r -- $W
done; done
gpu_pack
