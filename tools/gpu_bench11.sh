#!/usr/bin/env bash
# Device call (2 GPUs, ~7 min), the eleventh session's table: tools/gpu_bench.sh with the gpu tests that cover
# p2p and SIMPLE (device_coll_test, device_mp_test), every collective 8 B-512 MB against NCCL, the SHM and
# socket paths, and as EXTRA: all-reduce in CUDA graphs (both libraries) and the p2p collectives at 1-16 MB in
# steps of 2 (the sizes the channel knee, p2pChannelsForBytes, changed), both libraries. Raw outputs:
# $OUT/logs.tgz.
M="mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0"
N="-x LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libnccl.so.2"
G="-b 8 -e 256K -f 8 -c 1 -n 20 -w 5 -G 20"
Q="-b 1M -e 16M -f 2 -c 1 -n 30 -w 5"
export TESTS="device_coll_test device_mp_test" SIZES="-b 8 -e 512M -f 4" ITERS=20
export EXTRA="echo graph AR nccl; $M $N build-gpu/bin/all_reduce_perf $G | grep -E '^ +[0-9]';
echo graph AR braid; $M build-gpu/bin/all_reduce_perf $G | grep -E '^ +[0-9]';
for c in sendrecv alltoall; do for lib in nccl braid; do echo \"\$c \$lib 1-16M\"; if [ \$lib = nccl ]; then P=\"$N\"; else P=; fi;
  $M \$P build-gpu/bin/\${c}_perf $Q | grep -E '^ +[0-9]'; done; done;
for c in gather scatter; do for lib in nccl braid; do echo \"\$c \$lib 1-16M -a 3\"; if [ \$lib = nccl ]; then P=\"$N\"; else P=; fi;
  $M \$P build-gpu/bin/\${c}_perf $Q -a 3 | grep -E '^ +[0-9]'; done; done"
exec bash tools/gpu_bench.sh
