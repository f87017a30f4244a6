# Shared by the one-call device scripts (gpu_calibrate.sh, gpu_paths*.sh, gpu_sock3.sh, gpu_ll128.sh); source it
# after setting L (the log folder). Sets the environment every run needs (never NVLS), B and NCCL_LIB.
#   gpu_build TARGET...   configure + build the targets into $B (logs in $L), prints the seconds taken
#   one NAME LIB FILE [ENV=V...] -- FLAGS...   one mpirun -np 2 of NAME_perf (LIB braid, or nccl preloaded),
#       output to $L/FILE.txt, prints "FILE rc=.. Ns: size:us(busbw,#wrong) ..." (out-of-place column);
#       PERF_TIMEOUT (default 40) bounds it; MPIRUN_OPTS adds mpirun options (e.g. "--bind-to none").
#   gpu_build_variant DIR FILE OLD NEW TARGET...   in the background: a copy of the tree in DIR with the line
#       OLD of FILE replaced by NEW (fails if OLD is not there), built into DIR/build-var (logs in $L/DIR's
#       name); `wait` for it, then run with B=DIR/build-var
#   gpu_build_patch NAME PATCH TARGET...   in the background: a copy of the tree in /tmp/braid-NAME with PATCH
#       (a `git diff` of the working tree) applied, built into /tmp/braid-NAME/build-var (GPU_PATCH_JOBS
#       parallel jobs, default 8); `wait` for it, then run with B=/tmp/braid-NAME/build-var
#   gpu_build_inlined TARGET...   gpu_build_variant with kRcOutline forced off (every reducing kernel inlined),
#       into $INL/build-var
#   gpu_tests TEST...   runs each test binary of $B (200 s each), output to $L/TEST.txt, prints its verdict lines
#       and the first failures; a test whose helper programs (gpu_test_needs) are not in $B/bin is named, not run.
#   probe_build         compiles tools/iter_probe.cu against $B's libbraid into $B/iter_probe
#   probe LIB MODE SIZE ITERS [ENV=V...]   one iter_probe process per GPU (LIB braid, or nccl preloaded), both
#       ranks' output appended to $L/iter_probe.txt, prints "-- LIB MODE SIZE xITERS ENV: <each rank's mean line>"
#   launch_cost_build   compiles tools/launch_cost.cu against $B's libbraid into $B/launch_cost
#   launch_cost LIB     one launch_cost process per GPU (LIB braid, or nccl preloaded), both ranks' output
#       appended to $L/launch_cost.txt and printed
#   gpu_build_base TARGET...   in the background: the tree in base.tgz (a git archive of the build to compare
#       against, left untracked in the checkout) built into $BASE/build-var (logs in $L); `wait` for it
#   abc NAME FILE ROUND -- FLAGS...   one round of an interleaved A/B: NAME_perf with NCCL, the base build and
#       this build, into FILE_nccl_ROUND, FILE_base_ROUND, FILE_new_ROUND (medians: tools/perf_medians.py)
#   overlap_run LIB SIZE NAR [ENV=V...]   tools/overlap_probe.cu (built into $B/overlap_probe) on both GPUs: NAR
#       all-reduces of SIZE bytes beside a stream of compute kernels; output appended to $L/overlap.txt and printed
#   gpu_full_tables GUARD   the full tables: every collective 8 B-512 MB with NCCL and Braid's tuner, then the
#       five ring collectives with each protocol forced while the call has run at most GUARD seconds (-c 1, -J JSON
#       for tools/perf_full_table.py and tools/perf/plot); the perf tools must be built
#   gpu_carried DIR PATCH   exits unless DIR (a carried build: tools/build_carry.sh) holds device_coll_test or
#       a *_perf tool and was built from PATCH as it is now (DIR/PATCH_SHA256)
#   gpu_test_on_libs BIN FILTER NAME LIBDIR...   one gtest case (FILTER) of test binary BIN run against each build's
#       library (LIBDIR/lib), 10 s per case, output to $L/NAME_<LIBDIR's name>.txt, prints the verdict and failures
#   gpu_picks NAME FLAGS...   the tuner's picks of $B's library for NAME_perf over FLAGS' sizes (one iteration,
#       NCCL_DEBUG_SUBSYS=TUNING): rank 0's lines, once each, into $L/tuning_NAME.picks, and printed
#   GPU_ALL_TESTS       every gpu test binary (for gpu_tests $GPU_ALL_TESTS)
#   gpu_ab_rounds PREFIX ROUNDS "FLAGS" COLL... -- BUILD...   ROUNDS interleaved rounds (the builds' order reversed
#       every other round) of each COLL_perf on each carried BUILD (a folder with bin/ and lib/), output to
#       $L/PREFIX<round>_<coll>_<build's name>.txt; no round starts once the call has run GUARD seconds (default 400)
#   gpu_unpack          restores the builds tools/pack_carry.sh packed into build-pack/ (carried as [build-pack])
#   gpu_pack            tars $L into $OUT/<name of $L>.tgz (the device tool brings back few files), removes $L and
#       prints the call's total time.
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
B=build-gpu
NCCL_LIB=/usr/lib/x86_64-linux-gnu/libnccl.so.2
GPU_T0=$(date +%s)

gpu_test_on_libs() {
  local bin=$1 filter=$2 name=$3 lib s f; shift 3
  for lib in "$@"; do
    s=$(date +%s); f=$L/${name}_$(basename "$lib").txt
    BRAID_CASE_TIMEOUT=10 LD_LIBRARY_PATH=$lib/lib timeout 120 "$bin" --gtest_filter="$filter" > "$f" 2>&1
    echo "== $name on $(basename "$lib") rc=$? $(( $(date +%s) - s )) s: $(grep -E '^\[  (PASSED|FAILED) ' "$f" | tr '\n' ' ')"
    grep -E 'Failure|still running|byte|waits|records' "$f" | head -8
  done
}

gpu_picks() {
  local c=$1; shift
  one $c braid tuning_$c NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING -- "$@" -c 0 -n 1 -w 0 -N 1 > /dev/null
  grep -h "\[rank 0\] BRAID INFO .*predicted" "$L/tuning_$c.txt" | sed -E 's/^.*BRAID INFO //' | awk '!seen[$0]++' |
    grep -v "^AllGather \(16\|32\|512\) bytes" > "$L/tuning_$c.picks"
  echo "== $c picks:"; cut -c1-130 "$L/tuning_$c.picks"
}

GPU_ALL_TESTS="device_errors_test device_p2p_group_test device_coll_test device_mp_test device_one_rank_test
  fifo_gpu_test cluster_gpu_test device_p2p_balance_test matmul_gpu_test numeric_device_test"

gpu_ab_rounds() {
  local prefix=$1 rounds=$2 flags=$3 colls=() builds=() order r c b i; shift 3
  while [[ $# -gt 0 && $1 != -- ]]; do colls+=("$1"); shift; done; shift
  builds=("$@")
  for (( r = 1; r <= rounds; r++ )); do
    [[ $(( $(date +%s) - GPU_T0 )) -gt ${GUARD:-400} ]] && { echo "round $r skipped (time)"; continue; }
    order=()
    for (( i = 0; i < ${#builds[@]}; i++ )); do
      if (( r % 2 )); then order+=("${builds[i]}"); else order+=("${builds[${#builds[@]} - 1 - i]}"); fi
    done
    for c in "${colls[@]}"; do
      for b in "${order[@]}"; do
        # shellcheck disable=SC2086
        B=$b LD_LIBRARY_PATH=$b/lib one $c braid ${prefix}${r}_${c}_$(basename "$b") -- $flags > /dev/null
      done
    done
    echo "round $r done at $(( $(date +%s) - GPU_T0 )) s"
  done
}

gpu_unpack() {
  local f
  for f in build-pack/*.tgz; do [[ -e $f ]] && tar -xzf "$f" && echo "unpacked $f"; done
}

gpu_build() {
  cmake -S . -B $B -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > "$L/cmake.log" 2>&1 || { tail -20 "$L/cmake.log"; exit 1; }
  ninja -C $B -j32 "$@" > "$L/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$L/build.log" | head -40; exit 1; }
  echo "build: $(( $(date +%s) - GPU_T0 )) s"
}

one() {
  local name=$1 lib=$2 file=$3; shift 3
  local envs=(-x NCCL_NVLS_ENABLE=0)
  while [[ $# -gt 0 && $1 != -- ]]; do envs+=(-x "$1"); shift; done; shift
  [[ $lib == nccl ]] && envs+=(-x LD_PRELOAD=$NCCL_LIB)
  local s=$(date +%s)
  timeout ${PERF_TIMEOUT:-40} mpirun --allow-run-as-root -np 2 ${MPIRUN_OPTS:-} "${envs[@]}" $B/bin/${name}_perf "$@" > "$L/$file.txt" 2>&1
  local rc=$?
  echo "$file rc=$rc $(( $(date +%s) - s ))s: $(grep -v '^#' "$L/$file.txt" | awk 'NF>8 && $1 ~ /^[0-9]+$/ {printf "%s:%s(%s,%s) ", $1, $6, $8, $9}')"
}

gpu_build_variant() {
  local dir=$1 file=$2 old=$3 new=$4 name; shift 4
  name=$(basename "$dir")
  mkdir -p "$dir" && tar --exclude=./build-gpu -cf - . | tar -C "$dir" -xf -
  grep -qxF "$old" "$dir/$file" || { echo "$file has no line: $old"; exit 1; }
  OLD="$old" NEW="$new" perl -0pi -e 's/^\Q$ENV{OLD}\E$/$ENV{NEW}/m' "$dir/$file"
  grep -qxF "$new" "$dir/$file" || { echo "could not set in $file: $new"; exit 1; }
  (cd "$dir" && cmake -S . -B build-var -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > "$L/cmake_$name.log" 2>&1 &&
   ninja -C build-var -j12 "$@" > "$L/build_$name.log" 2>&1; echo "variant $name build rc=$?") &
}

gpu_build_patch() {
  local name=$1 patch=$2 dir=/tmp/braid-$1; shift 2
  mkdir -p "$dir" && tar --exclude=./build-gpu --exclude=./build -cf - . | tar -C "$dir" -xf -
  patch -d "$dir" -p1 < "$patch" > "$L/patch_$name.log" 2>&1 || { echo "patch $patch failed"; cat "$L/patch_$name.log"; exit 1; }
  (cd "$dir" && cmake -S . -B build-var -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > "$L/cmake_$name.log" 2>&1 &&
   ninja -C build-var -j${GPU_PATCH_JOBS:-8} "$@" > "$L/build_$name.log" 2>&1; echo "variant $name build rc=$?") &
}

INL=/tmp/braid-inline
gpu_build_inlined() {
  gpu_build_variant $INL src/device/reduce_copy.h "$(grep -m1 '^constexpr bool kRcOutline = ' src/device/reduce_copy.h)" \
    "constexpr bool kRcOutline = false;" "$@"
}

# The programs a GPU test starts from its own bin folder (braidrun and perf tools); a carried folder must hold them.
gpu_test_needs() {
  case $1 in
    fifo_gpu_test) echo "braidrun all_reduce_perf all_gather_perf" ;;
    cluster_gpu_test) echo "braidrun all_reduce_perf all_gather_perf broadcast_perf" ;;
  esac
}

gpu_tests() {
  local t s rc n missing
  for t in "$@"; do
    missing=""
    for n in $(gpu_test_needs "$t"); do [[ -x $B/bin/$n ]] || missing+=" $n"; done
    if [[ -n $missing ]]; then echo "== $t not run: $B/bin lacks$missing, which it starts"; continue; fi
    s=$(date +%s); timeout 200 $B/bin/$t > "$L/$t.txt" 2>&1; rc=$?
    echo "== $t rc=$rc $(( $(date +%s) - s )) s: $(grep -E '^\[  (PASSED|FAILED) |^\[  FAILED' "$L/$t.txt" | tr '\n' ' ')"
    grep -E 'Failure|error' -A3 "$L/$t.txt" | head -12
  done
}

probe_build() {
  nvcc -O2 -std=c++17 -Iinclude tools/iter_probe.cu -o $B/iter_probe -L$B/lib -lbraid -Xlinker -rpath=$PWD/$B/lib || exit 1
}

probe() {
  local lib=$1 mode=$2 size=$3 it=$4; shift 4
  local pre=""; [[ $lib == nccl ]] && pre="LD_PRELOAD=$NCCL_LIB"
  env $pre "$@" timeout 60 $B/iter_probe 0 $size $it $mode > $L/r0.txt 2>&1 &
  env $pre "$@" timeout 60 $B/iter_probe 1 $size $it $mode > $L/r1.txt 2>&1 &
  wait
  cat $L/r0.txt $L/r1.txt >> $L/iter_probe.txt
  echo "-- $lib $mode $size x$it $*: $(grep -h "mean" $L/r0.txt $L/r1.txt | sed 's/.*: mean/mean/' | tr '\n' '|')"
}

launch_cost_build() {
  nvcc -O2 -std=c++17 -Iinclude tools/launch_cost.cu -o $B/launch_cost -L$B/lib -lbraid -Xlinker -rpath=$PWD/$B/lib || exit 1
}

launch_cost() {
  local pre=""; [[ $1 == nccl ]] && pre="LD_PRELOAD=$NCCL_LIB"
  env $pre timeout 90 $B/launch_cost 0 > $L/lc0.txt 2>&1 & env $pre timeout 90 $B/launch_cost 1 > $L/lc1.txt 2>&1 & wait
  echo "-- launch_cost $1"; cat $L/lc0.txt $L/lc1.txt | tee -a $L/launch_cost.txt
}

NEWB=$B
BASE=/tmp/braid-base
gpu_build_base() {
  mkdir -p $BASE && tar -xzf base.tgz -C $BASE && { [[ -d .gtest ]] && cp -r .gtest $BASE/; true; }
  (cd $BASE && cmake -S . -B build-var -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > "$L/cmake_base.log" 2>&1 &&
   ninja -C build-var -j12 "$@" > "$L/build_base.log" 2>&1; echo "base build rc=$?") &
}

abc() {
  local name=$1 file=$2 round=$3; shift 3
  B=$NEWB; one $name nccl ${file}_nccl_$round "$@"
  B=$BASE/build-var; one $name braid ${file}_base_$round "$@"
  B=$NEWB; one $name braid ${file}_new_$round "$@"
}

overlap_run() {
  local lib=$1 size=$2 nar=$3; shift 3
  local pre=""; [[ $lib == nccl ]] && pre="LD_PRELOAD=$NCCL_LIB"
  env $pre "$@" timeout 60 $B/overlap_probe 0 $size $nar > $L/o0.txt 2>&1 &
  env $pre "$@" timeout 60 $B/overlap_probe 1 $size $nar > $L/o1.txt 2>&1 &
  wait
  echo "-- overlap $lib $size x$nar $*" | tee -a $L/overlap.txt; cat $L/o0.txt $L/o1.txt | tee -a $L/overlap.txt
}

gpu_full_tables() {
  local guard=$1 c p
  local F="-b 8 -e 512M -f 2 -c 1 -n 20 -w 5"
  for c in all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv gather scatter; do
    one $c nccl full_${c}_nccl -- $F -J $L/full_${c}_nccl.json
    one $c braid full_${c}_braid -- $F -J $L/full_${c}_braid.json
  done
  for c in all_reduce all_gather reduce_scatter broadcast reduce; do
    for p in LL128 Simple LL; do
      [[ $(( $(date +%s) - GPU_T0 )) -gt $guard ]] && { echo "skipping $c $p (time)"; continue; }
      one $c braid full_${c}_$p NCCL_PROTO=$p -- $F -J $L/full_${c}_$p.json
    done
  done
}

gpu_carried() {
  local dir=$1 patch=$2
  compgen -G "$dir/bin/*_perf" > /dev/null || [[ -x $dir/bin/device_coll_test ]] || { echo "$dir was not carried"; exit 1; }
  [[ "$(cat "$dir/PATCH_SHA256" 2>/dev/null)" == "$(sha256sum "$patch" | cut -d' ' -f1)" ]] ||
    { echo "$dir was not built from $patch as it is now (tools/build_carry.sh)"; exit 1; }
}

gpu_pack() {
  local name
  name=$(basename "$L")
  tar -C "$OUT" -czf "$OUT/$name.tgz" "$name" && rm -rf "$L"
  echo "total: $(( $(date +%s) - GPU_T0 )) s"
}
