#!/usr/bin/env bash
# One device call (2 GPUs, ~6 min): the gpu tests, then the mid-size knobs nobody has measured yet, each
# against the same NCCL run: BRAID_PIPELINE_STEPS 2/4/8 (Simple steps cut so a channel's share pipelines),
# the tuner's choice pinned to Ring or Simple, for all-reduce / all-gather / reduce-scatter at 256 KB-64 MB;
# and the SHM/socket paths with 4 and 16 channels (NCCL runs few channels on sockets; Braid 64). Streams its
# summary (do not pipe into tail); raw outputs in $OUT/logs.tgz.
set -uo pipefail
TESTS=${TESTS-device_coll_test device_mp_test} TEST_TIMEOUT=120 PERF_TIMEOUT=40 ITERS=20 \
  PERF=${PERF:-all_reduce all_gather reduce_scatter} SIZES=${SIZES:--b 256K -e 64M -f 2} \
  VARIANTS=";BRAID_PIPELINE_STEPS=2;BRAID_PIPELINE_STEPS=4;BRAID_PIPELINE_STEPS=8;NCCL_ALGO=Ring;NCCL_PROTO=Simple" \
  PATH_VARIANTS=";NCCL_MAX_NCHANNELS=4;NCCL_MAX_NCHANNELS=16" bash tools/gpu_bench.sh
