#!/usr/bin/env bash
# First device call of the next session, on branch wip/next (wip/ll + wip/p2p-copy + main), 2xH200: the LL
# check (LL gpu tests incl. the flag wrap, the 2-process sweep under NCCL_PROTO=LL, 8 B-4 MB perf vs Simple
# and NCCL), then every gpu test (unaligned cases, dead-peer test, p2p local-copy CTAs), scatter/gather/
# all-to-all vs NCCL at 8-512 MB, and the SHM/socket paths with 1/2/4 NET proxy threads. About 7 minutes
# when nothing hangs; every step is bounded. Two tarballs come back: ll_logs.tgz and logs.tgz.
set -uo pipefail
t0=$(date +%s)
bash tools/gpu_ll_check.sh
echo "== after the LL check: $(( $(date +%s) - t0 )) s"
TESTS="device_coll_test device_mp_test matmul_gpu_test" TEST_TIMEOUT=90 PERF_TIMEOUT=40 ITERS=8 \
  PERF="scatter gather alltoall" SIZES="-b 8M -e 512M -f 4" \
  PATH_VARIANTS=";BRAID_NET_PROXY_THREADS=2;BRAID_NET_PROXY_THREADS=4" bash tools/gpu_bench.sh
echo "== total: $(( $(date +%s) - t0 )) s"
