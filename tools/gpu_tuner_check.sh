#!/usr/bin/env bash
# One device call (2 GPUs) for the tuner-driven GPU path: the gpu tests, then every ring collective against
# NCCL at 8 B-2 GB with defaults (the tuner picks algorithm / protocol / channels), the SHM and socket paths,
# then all-reduce with the choice pinned (NCCL_ALGO=Ring; OneShot with Simple; BRAID_DEVICE_TUNER=0) and
# 8 B latency inside a CUDA graph for Braid and NCCL. Tarballs: logs.tgz (gpu_bench.sh), extra.tgz.
# About 8 minutes on 2xH200 (build ~100 s, tests ~45 s, each 8 B-1 GB perf run 20-45 s). Do not pipe it into
# `tail`: when the device tool's limit stops it, only streamed output comes back (2 GB runs with -c 1 take
# over 45 s each for rooted collectives timed by the slower rank, hence 1 GB by default).
set -uo pipefail
t0=$(date +%s)
TESTS=${TESTS-device_coll_test device_mp_test matmul_gpu_test} TEST_TIMEOUT=150 PERF_TIMEOUT=60 ITERS=20 \
  PERF=${PERF:-all_reduce all_gather reduce_scatter broadcast reduce} SIZES=${SIZES:--b 8 -e 1G -f 4} bash tools/gpu_bench.sh
OUT=${OUT:-$PWD/gpu_bench_out}; X=$OUT/extra; mkdir -p "$X"
B=build-gpu; NCCL_LIB=/usr/lib/x86_64-linux-gnu/libnccl.so.2
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
one() {
  local file=$1 lib=$2; shift 2
  local envs=(-x NCCL_NVLS_ENABLE=0)
  while [[ $# -gt 0 && $1 != -- ]]; do envs+=(-x "$1"); shift; done; shift
  [[ $lib == nccl ]] && envs+=(-x LD_PRELOAD=$NCCL_LIB)
  timeout 60 mpirun --allow-run-as-root -np 2 "${envs[@]}" $B/bin/all_reduce_perf "$@" > "$X/$file.txt" 2>&1
  echo "$file rc=$?: $(grep -v '^#' "$X/$file.txt" | awk 'NF>8 && $1 ~ /^[0-9]+$/ {printf "%s:%s(%s,%s) ", $1, $6, $8, $9}')"
}
echo "== all-reduce pinned choices (time us (busbw, #wrong))"
one ar_ring braid NCCL_ALGO=Ring -- -b 8 -e 1G -f 4 -c 1 -n 20 -w 3
one ar_oneshot_simple braid NCCL_ALGO=allreduce:OneShot NCCL_PROTO=Simple -- -b 8 -e 1G -f 4 -c 1 -n 20 -w 3
one ar_tuner_off braid BRAID_DEVICE_TUNER=0 -- -b 8 -e 1G -f 4 -c 1 -n 20 -w 3
echo "== 8 B-32 KB all-reduce inside a CUDA graph (-G 10 launches of 100 ops)"
one graph_braid braid X=1 -- -b 8 -e 32K -f 64 -c 1 -n 100 -w 20 -G 10
one graph_nccl nccl X=1 -- -b 8 -e 32K -f 64 -c 1 -n 100 -w 20 -G 10
echo "== tuner decisions (NCCL_DEBUG_SUBSYS=TUNING, rank 0)"
one tuning braid NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING -- -b 8 -e 1G -f 16 -c 0 -n 1 -w 0
grep -h "predicted" "$X/tuning.txt" | sed 's/^.* BRAID INFO //' | sort -u | head -40
tar -C "$OUT" -czf "$OUT/extra.tgz" extra && rm -rf "$X"
echo "== total: $(( $(date +%s) - t0 )) s"
