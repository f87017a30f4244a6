#!/usr/bin/env bash
# Device call (2 GPUs, ~9 min): main 5c3a89e (log lines in one write; the SIMPLE poster decides from its own call's
# stop) - every gpu test, then an A/B against build-main (97cd247) of the Simple kernels the poster runs (all-reduce,
# reduce-scatter 4-32 MB, two interleaved rounds), CUDA-graph latency against NCCL, and the full tables (every
# collective 8 B-512 MB, NCCL beside Braid, then each protocol forced while the guard allows). -c 1 throughout.
# Carry [build-pack] (tools/pack_carry.sh build-main build-new).
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next151_out}; L=$OUT/next151; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main N=$PWD/build-new
echo "build-main of $(cat $M/HEAD); build-new of $(cat $N/HEAD)"
B=$N; export LD_LIBRARY_PATH=$N/lib
gpu_tests $GPU_ALL_TESTS
echo "tests done at $(( $(date +%s) - GPU_T0 )) s"
GUARD=9999 gpu_ab_rounds ab 2 "-b 4M -e 32M -f 2 -c 1 -n 20 -w 5 -N 2" all_reduce reduce_scatter -- $M $N
echo "a/b done at $(( $(date +%s) - GPU_T0 )) s"
B=$N; export LD_LIBRARY_PATH=$N/lib
for lib in nccl braid; do one all_reduce $lib graph_$lib -- -b 8 -e 256K -f 8 -c 1 -n 50 -w 10 -G 20; done
gpu_full_tables ${GUARD:-540}
gpu_pack
