#!/usr/bin/env bash
# Shared functions of the scripts in tools/gpu/. Source it from the repository root; running it prints this.
#
#   gpu_usage FILE             prints FILE's header (its comment lines after the first line), for -h
#   gpu_init NAME              the environment every run needs (NCCL_NVLS_ENABLE=0, mpirun as root), the log
#                              folder L=$OUT/NAME (OUT: the job's output folder, default ./build-gpu-out)
#                              and the start time for gpu_elapsed
#   gpu_count                  visible GPUs: CUDA_VISIBLE_DEVICES's entries, else `nvidia-smi -L` lines; 0 if none
#   gpu_machine NP             a machine name for results: NPx<model>, e.g. 2xh100
#   gpu_build DIR TARGET...    DIR configured (Ninja) and TARGETs built; GoogleTest from $BRAID_GTEST_SOURCE, ./.gtest
#                              or /usr/src/googletest where the system has none. Logs in $L; exits on failure
#   gpu_use_build DIR [BIN...] B=DIR for the runs (a carried build-pack/DIR.tgz is unpacked first) and its lib/ on
#                              LD_LIBRARY_PATH; status 1 if DIR/bin lacks one of BIN (then build it)
#   gpu_launcher               mpirun where it exists and the perf tools link MPI, else braidrun (GPU_LAUNCHER
#                              overrides)
#   gpu_perf LIB NP TOOL FILE [VAR=V...] -- FLAGS...
#                              one run of $B/bin/TOOL on NP ranks for LIB: braid (as built), nccl (NVIDIA's
#                              $NCCL_LIB preloaded into the same binary) or openmpi (mpi_allreduce_bench instead of
#                              TOOL); GPU_HOST=1 runs on host buffers (BRAID_HOST_COMM=1). Output in $L/FILE.txt,
#                              -J JSON in $L/FILE.json; prints one line; returns the run's status. PERF_TIMEOUT
#                              (default 150 s) bounds it, MPIRUN_OPTS adds mpirun options (e.g. "--bind-to none"),
#                              GPU_PRELOAD libraries every run preloads (colon-separated). A run that loaded a library
#                              from another folder than LIB's ($B/lib, or $NCCL_LIB's) fails, saying which it loaded
#   gpu_tests TEST...          runs each test binary of $B/bin (TEST_TIMEOUT s each, default 200), output in
#                              $L/TEST.txt, one verdict line each (PASS, FAIL, SKIPPED: every case skipped itself,
#                              MISSING: not built, SKIP: over GUARD) and the first failures; returns how many did
#                              not pass
#   gpu_gpu_tests              the gpu test binaries: tests/gpu/*_test.{cc,cu} by name
#   gpu_over_guard             status 0 once the script has run GUARD seconds (default 540; 0: never)
#   gpu_limit SEC              SEC, or less where the script would run past CALL_LIMIT (default 585 s: a 10-minute
#                              job less the packing; 0: no limit): each run's and each test's timeout
#   gpu_elapsed                seconds since gpu_init
#   gpu_pack                   tars $L into $OUT/NAME.tgz (a job's output folder may bring back only a few files) and removes $L
gpu_usage() { sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$1"; }

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  gpu_usage "$0"
  exit 0
fi

# Settings the scripts' options change (and the environment may preset).
NCCL_LIB=${NCCL_LIB:-/usr/lib/x86_64-linux-gnu/libnccl.so.2}
PERF_TIMEOUT=${PERF_TIMEOUT:-150}
TEST_TIMEOUT=${TEST_TIMEOUT:-200}
GUARD=${GUARD:-540}
CALL_LIMIT=${CALL_LIMIT:-585}
GPU_HOST=${GPU_HOST:-0}
B=${B:-build-gpu}

gpu_init() {
  # NVLS (NVLink SHARP) stays off in every run, Braid's and NVIDIA's alike.
  export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  [[ -d /usr/local/cuda/bin && ":$PATH:" != *:/usr/local/cuda/bin:* ]] && export PATH=$PATH:/usr/local/cuda/bin
  GPU_NAME=$1
  OUT=${OUT:-$PWD/build-gpu-out}
  L=$OUT/$GPU_NAME
  rm -rf "$L"
  mkdir -p "$L" || { echo "cannot create $L"; exit 1; }
  GPU_T0=$SECONDS
}

gpu_elapsed() { echo $(( SECONDS - GPU_T0 )); }

gpu_over_guard() { [[ $GUARD -gt 0 && $(gpu_elapsed) -ge $GUARD ]]; }

gpu_limit() {
  local left=$(( CALL_LIMIT - $(gpu_elapsed) ))
  if [[ $CALL_LIMIT -gt 0 && $left -lt $1 ]]; then echo $(( left > 1 ? left : 1 )); else echo "$1"; fi
}

gpu_count() {
  if [[ -n ${CUDA_VISIBLE_DEVICES:-} ]]; then
    tr ',' '\n' <<< "$CUDA_VISIBLE_DEVICES" | grep -c .
  elif command -v nvidia-smi > /dev/null; then
    nvidia-smi -L 2> /dev/null | grep -c '^GPU '
  else
    echo 0
  fi
}

gpu_machine() {
  local model
  model=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1 |
    awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[A-Z]+[0-9]+/) { print tolower($i); exit } }')
  echo "${1}x${model:-gpu}"
}

gpu_gtest_source() {
  local d
  for d in "${BRAID_GTEST_SOURCE:-}" "$PWD/.gtest" /usr/src/googletest; do
    [[ -n $d && -f $d/CMakeLists.txt ]] && { echo "$d"; return; }
  done
}

gpu_build() {
  local dir=$1 gt s=$SECONDS; shift
  local opts=(-G Ninja)
  gt=$(gpu_gtest_source)
  [[ -n $gt ]] && opts+=("-DBRAID_GTEST_SOURCE=$gt")
  if [[ ! -f $dir/build.ninja ]]; then
    # shellcheck disable=SC2086  # CMAKE_ARGS is a list of options
    cmake -S . -B "$dir" "${opts[@]}" ${CMAKE_ARGS:-} > "$L/cmake.log" 2>&1 || { tail -20 "$L/cmake.log"; exit 1; }
  fi
  ninja -C "$dir" "$@" > "$L/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$L/build.log" | head -40; exit 1; }
  echo "build of $dir: $(( SECONDS - s )) s"
}

gpu_use_build() {
  local dir=$1 n; shift
  if [[ ! -d $dir && -f build-pack/$(basename "$dir").tgz ]]; then
    tar -xzf "build-pack/$(basename "$dir").tgz" && echo "unpacked build-pack/$(basename "$dir").tgz"
  fi
  B=$dir
  if [[ -d $B/lib ]]; then
    LD_LIBRARY_PATH=$(cd "$B/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH
  fi
  for n in "$@"; do [[ -x $B/bin/$n ]] || return 1; done
  return 0
}

gpu_launcher() {
  if [[ -n ${GPU_LAUNCHER:-} ]]; then
    echo "$GPU_LAUNCHER"
  elif command -v mpirun > /dev/null && ldd "$B/bin/all_reduce_perf" 2> /dev/null | grep -q libmpi; then
    echo mpirun
  else
    echo braidrun
  fi
}

gpu_perf() {
  local lib=$1 np=$2 tool=$3 file=$4 launcher bin rc limit s=$SECONDS
  shift 4
  local envs=(NCCL_NVLS_ENABLE=0)
  while [[ $# -gt 0 && $1 != -- ]]; do envs+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  [[ $GPU_HOST == 1 ]] && envs+=(BRAID_HOST_COMM=1)
  bin=$B/bin/$tool
  launcher=$(gpu_launcher)
  case $lib in
    braid) [[ -n ${GPU_PRELOAD:-} ]] && envs+=("LD_PRELOAD=$GPU_PRELOAD") ;;
    nccl)
      [[ -f $NCCL_LIB ]] || { echo "$file: no NVIDIA NCCL at $NCCL_LIB (set NCCL_LIB)"; return 1; }
      envs+=("LD_PRELOAD=$NCCL_LIB${GPU_PRELOAD:+:$GPU_PRELOAD}") ;;
    openmpi) bin=$B/bin/mpi_allreduce_bench; launcher=mpirun ;;
    *) echo "gpu_perf: unknown library $lib"; return 1 ;;
  esac
  [[ -x $bin ]] || { echo "$file: $bin is not built"; return 1; }
  # GPU_NODES=K: the ranks as K simulated nodes (consecutive ranks share one), each its own NCCL_HOSTID, which both
  # libraries honour: inside a node P2P/SHM, between nodes the network.
  local node_wrap=()
  if [[ ${GPU_NODES:-1} -gt 1 ]]; then
    node_wrap=(bash -c 'r=${OMPI_COMM_WORLD_RANK:-${BRAID_RANK:-0}}; export NCCL_HOSTID=simnode$(( r * $1 / $2 )); shift 2; exec "$@"' nodes "$GPU_NODES" "$np")
  fi
  local cmd=()
  limit=$(gpu_limit "$PERF_TIMEOUT")
  if [[ $launcher == mpirun ]]; then
    cmd=(mpirun --allow-run-as-root -np "$np")
    [[ $np -gt $(nproc) ]] && cmd+=(--oversubscribe)
    # shellcheck disable=SC2206  # MPIRUN_OPTS is a list of options
    cmd+=(${MPIRUN_OPTS:-})
    [[ -n ${LD_LIBRARY_PATH:-} ]] && cmd+=(-x LD_LIBRARY_PATH)
    local e
    for e in "${envs[@]}"; do cmd+=(-x "$e"); done
    cmd+=("${node_wrap[@]}" "$bin")
  else
    cmd=("$B/bin/braidrun" -n "$np" --timeout "$limit" -- env "${envs[@]}" "${node_wrap[@]}" "$bin")
  fi
  echo "${cmd[*]} $* -J $L/$file.json" > "$L/$file.txt"
  timeout "$limit" "${cmd[@]}" "$@" -J "$L/$file.json" >> "$L/$file.txt" 2>&1
  rc=$?
  [[ $rc -eq 124 ]] && echo "timed out after $limit s" >> "$L/$file.txt"
  # The library the run loaded, as the perf tool prints it: one from another folder (a library path left first by
  # another build's setup) would make a comparison of two libraries or builds measure one of them twice.
  local loaded want=""
  loaded=$(sed -n 's/^# Library: .*(\(\/.*\))$/\1/p' "$L/$file.txt" | head -1)
  case $lib in
    braid) [[ -d $B/lib ]] && want=$(readlink -f "$B/lib") ;;
    nccl) want=$(dirname "$(readlink -f "$NCCL_LIB")") ;;
  esac
  if [[ -n $loaded && -n $want && $(dirname "$(readlink -f "$loaded")") != "$want" ]]; then
    echo "the run loaded $loaded, not the library in $want" >> "$L/$file.txt"
    [[ $rc -eq 0 ]] && rc=1
  fi
  printf '%-34s rc=%-3d %4d s\n' "$file" "$rc" $(( SECONDS - s ))
  [[ $rc -ne 0 ]] && grep -v '^#' "$L/$file.txt" | tail -5 | sed 's/^/    | /'
  return $rc
}

gpu_gpu_tests() {
  local f n
  for f in tests/gpu/*_test.cc tests/gpu/*_test.cu; do
    [[ -e $f ]] || continue
    n=$(basename "$f"); echo "${n%.*}"
  done | sort -u
}

# The programs a gpu test starts from its own bin folder (braidrun, the perf tools, the demo): named in its source.
gpu_test_needs() {
  grep -ohE '"/?(braidrun|matmul_demo|[a-z_]+_perf)\b' "tests/gpu/$1".* 2> /dev/null | tr -d '"/' | sort -u
}

gpu_tests() {
  local t s rc n missing summary verdict limit failed=0
  for t in "$@"; do
    if gpu_over_guard; then
      echo "SKIP $t: the script has run ${GUARD} s (GUARD)"; failed=$(( failed + 1 )); continue
    fi
    missing=""
    [[ -x $B/bin/$t ]] || missing=" $t"
    for n in $(gpu_test_needs "$t"); do [[ -x $B/bin/$n ]] || missing+=" $n"; done
    if [[ -n $missing ]]; then
      echo "MISSING $t: $B/bin lacks$missing"; failed=$(( failed + 1 )); continue
    fi
    s=$SECONDS
    limit=$(gpu_limit "$TEST_TIMEOUT")
    timeout "$limit" "$B/bin/$t" > "$L/$t.txt" 2>&1
    rc=$?
    summary=$(grep -E '^\[ +(PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?' "$L/$t.txt" | tr -s ' ' |
      sed 's/, listed below://' | tr '\n' ' ')
    if [[ $rc -ne 0 ]]; then
      verdict=FAIL
    elif grep -qE '^\[ +PASSED +\] 0 tests' "$L/$t.txt" && grep -qE '^\[ +SKIPPED +\] [0-9]+ tests?' "$L/$t.txt"; then
      verdict=SKIPPED  # every case skipped itself (no GPU, too few GPUs): nothing was checked
    else
      verdict=PASS
    fi
    [[ $verdict == PASS ]] || failed=$(( failed + 1 ))
    echo "$verdict $t rc=$rc $(( SECONDS - s )) s: $summary"
    if [[ $rc -ne 0 ]]; then
      [[ $rc -eq 124 ]] && echo "    | timed out after $limit s"
      grep -E '^\[  FAILED|Failure|error' -A3 "$L/$t.txt" | head -12 | sed 's/^/    | /'
    elif [[ $verdict == SKIPPED ]]; then
      grep -m1 -A1 ': Skipped$' "$L/$t.txt" | tail -1 | sed 's/^/    | /'
    fi
  done
  return $failed
}

gpu_pack() {
  tar -C "$OUT" -czf "$OUT/$GPU_NAME.tgz" "$GPU_NAME" && rm -rf "$L"
  echo "logs: $OUT/$GPU_NAME.tgz; total $(gpu_elapsed) s"
}
