#!/usr/bin/env bash
# Device call (2 GPUs, ~7 min), the tenth session's table: tools/gpu_bench.sh with the gpu tests that cover
# p2p and SIMPLE (device_coll_test, device_mp_test), every collective 8 B-512 MB against NCCL, the SHM and
# socket paths, and as EXTRA: all-reduce in CUDA graphs (both libraries) and send/recv / all-to-all with
# BRAID_P2P_PIECES=1 (one step per share, the behaviour before 7d05c6e) for the A/B. Raw outputs:
# $OUT/logs.tgz.
M="mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0"
N="-x LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libnccl.so.2"
G="-b 8 -e 256K -f 8 -c 1 -n 20 -w 5 -G 20"
Q="-b 1M -e 512M -f 4 -c 1 -n 20 -w 3"
export TESTS="device_coll_test device_mp_test" SIZES="-b 8 -e 512M -f 4" ITERS=20
export EXTRA="echo graph AR nccl; $M $N build-gpu/bin/all_reduce_perf $G | grep -E '^ +[0-9]';
echo graph AR braid; $M build-gpu/bin/all_reduce_perf $G | grep -E '^ +[0-9]';
echo sendrecv braid pieces 1; $M -x BRAID_P2P_PIECES=1 build-gpu/bin/sendrecv_perf $Q | grep -E '^ +[0-9]';
echo alltoall braid pieces 1; $M -x BRAID_P2P_PIECES=1 build-gpu/bin/alltoall_perf $Q | grep -E '^ +[0-9]'"
exec bash tools/gpu_bench.sh
