#!/usr/bin/env bash
# One device call on a 2-GPU machine: build, the gpu-label tests, and every perf tool for Braid and for
# NVIDIA NCCL (LD_PRELOAD of the system libnccl.so.2) under mpirun -np 2, same flags, -c 1; then the SHM and
# socket paths (NCCL_P2P_DISABLE / NCCL_SHM_DISABLE) for both. Prints a compact summary; all raw outputs go
# into $OUT/logs.tgz (the device tool brings back at most 8 files).
#   TESTS="device_coll_test" picks the tests (0: none), PERF="all_reduce all_gather" picks tools,
#   SIZES="-b 1M -e 2G -f 4", VARIANTS="NCCL_P2P_READ_ENABLE=1;NCCL_MAX_NCHANNELS=64" runs Braid once per
#   ';'-separated env set (each against the same NCCL run), PATHS=0 skips the SHM/socket runs,
#   ROOTED_AVG=1 times broadcast/reduce/gather/scatter by the ranks' average instead of the slower rank (3),
#   PATH_VARIANTS likewise for the SHM/socket runs, EXTRA="cmd; cmd" runs more commands at the end (logged).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=${OUT:-$PWD/gpu_bench_out}; L=$OUT/logs; mkdir -p "$L"
B=build-gpu; NCCL_LIB=/usr/lib/x86_64-linux-gnu/libnccl.so.2
ALL="all_reduce all_gather reduce_scatter broadcast reduce gather scatter alltoall sendrecv"
PERF=${PERF:-$ALL}
SIZES=${SIZES:--b 1M -e 2G -f 4}
t0=$(date +%s)
cmake -S . -B $B -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > "$L/cmake.log" 2>&1 || { tail -20 "$L/cmake.log"; exit 1; }
TESTS=${TESTS-device_mp_test device_coll_test matmul_gpu_test}; [[ $TESTS == 0 ]] && TESTS=
targets="braid braidrun matmul_demo $TESTS"; for p in $ALL; do targets+=" ${p}_perf"; done
ninja -C $B -j32 $targets > "$L/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$L/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"

if [[ -n $TESTS ]]; then
  for t in $TESTS; do
    s=$(date +%s)
    timeout ${TEST_TIMEOUT:-200} $B/bin/$t > "$L/$t.txt" 2>&1; rc=$?
    echo "== $t rc=$rc $(( $(date +%s) - s )) s: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$L/$t.txt" | tr '\n' ' ')"
    grep -E '^\[  FAILED|Failure|error' "$L/$t.txt" | head -10
  done
fi

# run NAME LIB TAG [env...] -- flags...: one mpirun, output to $L/NAME_TAG_LIB.txt
run() {
  local name=$1 lib=$2 tag=$3; shift 3
  local envs=(-x NCCL_NVLS_ENABLE=0)
  while [[ $# -gt 0 && $1 != -- ]]; do envs+=(-x "$1"); shift; done; shift
  [[ $lib == nccl ]] && envs+=(-x LD_PRELOAD=$NCCL_LIB)
  timeout ${PERF_TIMEOUT:-120} mpirun --allow-run-as-root -np 2 "${envs[@]}" $B/bin/${name}_perf "$@" \
    > "$L/${name}_${tag}_${lib}.txt" 2>&1
  echo "$?"
}
# table NAME TAG [NCCLTAG]: size, braid time/busbw/#wrong, nccl time/busbw/#wrong, busbw ratio (out-of-place)
rows() { grep -v '^#' "$1" | awk 'NF>8 && $1 ~ /^[0-9]+$/ {print $1, $6, $8, $9}' | sort -k1,1; }
table() {
  local name=$1 tag=$2 ntag=${3:-$2}
  echo "== $name [$tag] size | braid us busbw #wrong | nccl us busbw #wrong | ratio"
  join <(rows "$L/${name}_${tag}_braid.txt") <(rows "$L/${name}_${ntag}_nccl.txt") \
    | sort -n | awk '{r = ($6 > 0) ? $3 / $6 : 0; printf "%12s | %9s %8s %4s | %9s %8s %4s | %.2f\n", $1, $2, $3, $4, $5, $6, $7, r}'
}
IFS=';' read -r -a variants <<< "${VARIANTS:-}"; [[ ${#variants[@]} == 0 ]] && variants=("")
for p in $PERF; do
  # Rooted collectives are timed by the slower rank (-a 3): with the default average, a sender whose whole
  # message fits in its FIFOs finishes early and halves the time (Braid read mode showed 505 GB/s on NV18).
  avg=1; case $p in broadcast|reduce|gather|scatter) avg=${ROOTED_AVG:-3} ;; esac
  rc=$(run $p nccl p2p -- $SIZES -c 1 -n ${ITERS:-10} -w 3 -a $avg); [[ $rc == 0 ]] || echo "$p nccl rc=$rc"
  for i in "${!variants[@]}"; do
    read -r -a envs <<< "${variants[$i]}"
    rc=$(run $p braid v$i "${envs[@]}" -- $SIZES -c 1 -n ${ITERS:-10} -w 3 -a $avg); [[ $rc == 0 ]] || echo "$p braid v$i rc=$rc"
    echo "-- variant v$i: ${variants[$i]:-defaults} (-a $avg)"; table $p v$i p2p
  done
done
if [[ ${PATHS:-1} == 1 ]]; then
  # SHM and socket paths: NCCL once, Braid once per PATH_VARIANTS entry (';'-separated env sets, e.g.
  # PATH_VARIANTS=";BRAID_NET_PROXY_THREADS=2;BRAID_NET_PROXY_THREADS=4").
  IFS=';' read -r -a pvariants <<< "${PATH_VARIANTS:-}"; [[ ${#pvariants[@]} == 0 ]] && pvariants=("")
  rc=$(run all_reduce nccl shm NCCL_P2P_DISABLE=1 -- -b 64M -e 1G -f 4 -c 1 -n 5 -w 2); [[ $rc == 0 ]] || echo "shm nccl rc=$rc"
  rc=$(run all_reduce nccl sock NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 -- -b 64M -e 1G -f 4 -c 1 -n 3 -w 1)
  [[ $rc == 0 ]] || echo "sock nccl rc=$rc"
  for i in "${!pvariants[@]}"; do
    read -r -a envs <<< "${pvariants[$i]}"
    rc=$(run all_reduce braid shm$i NCCL_P2P_DISABLE=1 "${envs[@]}" -- -b 64M -e 1G -f 4 -c 1 -n 5 -w 2)
    [[ $rc == 0 ]] || echo "shm braid v$i rc=$rc"
    rc=$(run all_reduce braid sock$i NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "${envs[@]}" -- -b 64M -e 1G -f 4 -c 1 -n 3 -w 1)
    [[ $rc == 0 ]] || echo "sock braid v$i rc=$rc"
    echo "-- path variant $i: ${pvariants[$i]:-defaults}"; table all_reduce shm$i shm; table all_reduce sock$i sock
  done
fi
if [[ -n ${EXTRA:-} ]]; then echo "== extra"; bash -c "$EXTRA" 2>&1 | tee "$L/extra.txt" | tail -60; fi
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$L"
echo "total: $(( $(date +%s) - t0 )) s"
