#!/usr/bin/env bash
# Braid against NVIDIA NCCL, side by side: each perf tool runs on NP ranks with the same binary and the same flags
# (always -c 1, so every size is checked), once as built (Braid) and once with NVIDIA's libnccl.so.2 preloaded,
# in interleaved rounds. Prints per collective: size | NCCL us | Braid us | NCCL/Braid | #wrong (out of place,
# per-size medians over the rounds) and writes the result as baseline JSON lines (tools/perf/baseline), which
# --baseline compares against a stored baseline (docs/perf/<machine>.jsonl) and which can become a new one.
#
#   tools/gpu/side_by_side.sh [-n NP] [-C COLLS] [-r ROUNDS] [-x VAR=V]... [--protos LIST] [-b BUILD_DIR]
#                             [--base DIR] [--baseline FILE.jsonl] [--machine NAME] [--nodes K] [--host] [-g GUARD]
#                             [-- PERF_FLAGS...]
#
#   -n NP            ranks, one per GPU, under mpirun -np NP (default: every visible GPU)
#   -C COLLS         collectives, comma- or space-separated (default: all_reduce all_gather reduce_scatter
#                    broadcast reduce alltoall gather scatter sendrecv)
#   -r ROUNDS        interleaved rounds (default 1); the libraries' order is reversed every other round and the
#                    tables give per-size medians, so that sizes under 1 MB (+-1 us of jitter) can be compared
#   -x VAR=V         extra environment for both libraries' runs, repeatable (e.g. -x NCCL_P2P_DISABLE=1 for the
#                    SHM path, -x NCCL_P2P_DISABLE=1 -x NCCL_SHM_DISABLE=1 for sockets)
#   --protos LIST    also run Braid with NCCL_PROTO forced to each of LIST (e.g. LL,LL128,Simple) for the ring
#                    collectives (all_reduce all_gather reduce_scatter broadcast reduce) among COLLS
#   -b DIR           build folder (default build-gpu): used as it is when its bin/ holds the perf tools and
#                    braidrun (e.g. carried: tools/gpu/carry.sh), else they are built there
#   --base DIR       another Braid build (e.g. main before a change, carried) run as a third library in every
#                    round, interleaved with the others; its result goes to side_by_side_base.jsonl and the
#                    new build is compared against it (tools/perf/baseline compare), so a change's cost or
#                    gain is measured on the same GPUs in the same call
#   --baseline FILE  compare the result against FILE (tools/perf/baseline compare; flags Braid rows 5% slower)
#   --machine NAME   machine name in the result (default NPx<GPU model>, e.g. 2xh100; with --host: host)
#   --nodes K        the NP ranks as K simulated nodes, consecutive ranks on one (NCCL_HOSTID per node, honoured by
#                    both libraries): connections between nodes go over the network (sockets)
#   --host           host buffers (BRAID_HOST_COMM=1) on a machine without GPUs: Braid, against Open MPI's
#                    MPI_Allreduce (mpi_allreduce_bench) for all_reduce where mpirun and that bench exist
#   -g SEC           start no run once the script has run SEC seconds, build included (default 540; 0: no limit)
#   PERF_FLAGS       the perf tools' own flags (sizes, iterations, type, op, root, -a ...), default
#                    -b 8 -e 512M -f 2 -n 20 -w 5 (the stored baselines' sizes); -c 1 is appended, -J is set here
#   -h               this text
#
# Environment: NCCL_LIB (default /usr/lib/x86_64-linux-gnu/libnccl.so.2), PERF_TIMEOUT (s per run, default 150;
# no run goes on past CALL_LIMIT, default 585 s after the start), MPIRUN_OPTS, GPU_LAUNCHER=braidrun (instead of
# mpirun). NCCL_NVLS_ENABLE=0 is passed to every rank.
# Output in $OUT (the job's output folder, default ./build-gpu-out): side_by_side.jsonl (the result),
# side_by_side.txt (the tables) and side_by_side.tgz (each run's text output and -J JSON, named
# <coll>_<lib>_<round>: tools/perf/medians reads them). Exit status 1 if a run failed or reported wrong values,
# or (with --baseline) a Braid row was flagged slower.
# Examples:
#   tools/gpu/side_by_side.sh --baseline docs/perf/2xh200.jsonl
#   tools/gpu/side_by_side.sh -n 8 -C all_reduce,all_gather -r 3 -- -b 1K -e 64M -f 4 -n 50 -w 10
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"
BASELINE_PY=$(cd "$(dirname "$0")/../perf" && pwd)/baseline

ALL="all_reduce all_gather reduce_scatter broadcast reduce alltoall gather scatter sendrecv"
RING="all_reduce all_gather reduce_scatter broadcast reduce"
np="" colls=$ALL rounds=1 extra=() protos="" baseline="" base="" machine="" flags=()
die() { echo "side_by_side.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
    -n) np=${2:?}; shift 2 ;;
    -C) colls=${2//,/ }; shift 2 ;;
    -r) rounds=${2:?}; shift 2 ;;
    -x) [[ ${2:-} == *=* ]] || die "-x wants VAR=V"; extra+=("$2"); shift 2 ;;
    --protos) protos=${2//,/ }; shift 2 ;;
    -b) B=${2:?}; shift 2 ;;
    --base) base=${2:?}; shift 2 ;;
    --baseline) baseline=${2:?}; [[ -f $baseline ]] || die "no baseline $baseline"; shift 2 ;;
    --machine) machine=${2:?}; shift 2 ;;
    --host) GPU_HOST=1; shift ;;
    --nodes) GPU_NODES=${2:?}; [[ $GPU_NODES =~ ^[1-9][0-9]*$ ]] || die "--nodes wants a count"; export GPU_NODES; shift 2 ;;
    -g) GUARD=${2:?}; shift 2 ;;
    -h|--help) gpu_usage "$0"; exit 0 ;;
    --) shift; flags=("$@"); break ;;
    *) gpu_usage "$0" >&2; die "unknown option $1" ;;
  esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "-r wants a positive number"
for c in $colls; do [[ " $ALL " == *" $c "* ]] || die "unknown collective $c (one of: $ALL)"; done
for p in $protos; do [[ $p =~ ^(LL|LL128|Simple)$ ]] || die "unknown protocol $p (LL, LL128, Simple)"; done
for f in "${flags[@]}"; do [[ $f == -J || $f == --output_file* ]] && die "do not pass -J: the script sets it"; done
[[ ${#flags[@]} -eq 0 ]] && flags=(-b 8 -e 512M -f 2 -n 20 -w 5)
flags+=(-c 1)

if [[ -z $np ]]; then
  if [[ $GPU_HOST == 1 ]]; then np=2; else np=$(gpu_count); fi
  [[ $np -gt 0 ]] || die "no GPU visible (nvidia-smi -L); give -n NP, or --host for host buffers"
fi
[[ $np =~ ^[1-9][0-9]*$ ]] || die "-n wants a positive number"
[[ $GPU_HOST == 1 || -f $NCCL_LIB ]] || die "no NVIDIA NCCL at $NCCL_LIB (set NCCL_LIB)"
if [[ -z $machine ]]; then
  if [[ $GPU_HOST == 1 ]]; then machine=host; else machine=$(gpu_machine "$np"); fi
  [[ ${GPU_NODES:-1} -gt 1 ]] && machine+="-${GPU_NODES}nodes"
fi

gpu_init side_by_side
tools=(braidrun)
for c in $colls; do tools+=("${c}_perf"); done
if ! gpu_use_build "$B" "${tools[@]}"; then
  targets=(braid "${tools[@]}")
  [[ $GPU_HOST == 1 ]] && targets+=(perf_tools)  # mpi_allreduce_bench where MPI is found
  gpu_build "$B" "${targets[@]}"
  gpu_use_build "$B"
fi
if [[ -n $base ]]; then
  # gpu_use_build puts a build's lib/ first on LD_LIBRARY_PATH: this build's runs keep the path they had, or they
  # would load the base's library (libnccl.so.2 resolves through LD_LIBRARY_PATH before the binaries' RUNPATH).
  new=$B keep_path=${LD_LIBRARY_PATH:-}
  gpu_use_build "$base" "${tools[@]}" || die "--base $base: its bin/ lacks some of ${tools[*]}"
  base_lib=$(cd "$base/lib" && pwd)
  B=$new LD_LIBRARY_PATH=$keep_path
  export LD_LIBRARY_PATH
fi

# The libraries of one collective: nccl (or openmpi on host buffers) and braid, then braid_<PROTO> for each
# forced protocol.
libs_of() {
  local c=$1 p
  if [[ $GPU_HOST == 1 ]]; then
    [[ $c == all_reduce && -x $B/bin/mpi_allreduce_bench ]] && command -v mpirun > /dev/null && echo openmpi
  else
    echo nccl
  fi
  echo braid
  [[ -n $base ]] && echo base
  if [[ " $RING " == *" $c "* ]]; then for p in $protos; do echo "braid_$p"; done; fi
}

echo "side by side on $np ranks ($machine, launcher $(gpu_launcher)), $rounds round(s): ${flags[*]}" \
  "${extra[*]:+[${extra[*]}]}"
failed=0
for (( r = 1; r <= rounds; r++ )); do
  if gpu_over_guard; then echo "rounds $r-$rounds not run: the script has run $GUARD s (GUARD)"; failed=1; break; fi
  for c in $colls; do
    mapfile -t libs < <(libs_of "$c")
    if (( r % 2 == 0 )); then mapfile -t libs < <(printf '%s\n' "${libs[@]}" | tac); fi
    for lib in "${libs[@]}"; do
      if gpu_over_guard; then echo "${c}_${lib}_$r not run: the script has run $GUARD s (GUARD)"; failed=1; continue; fi
      envs=("${extra[@]}")
      [[ $lib == braid_* ]] && envs+=("NCCL_PROTO=${lib#braid_}")
      if [[ $lib == base ]]; then
        (B=$base LD_LIBRARY_PATH=$base_lib:$LD_LIBRARY_PATH gpu_perf braid "$np" "${c}_perf" "${c}_base_$r" \
          "${envs[@]}" -- "${flags[@]}") || failed=1
      else
        gpu_perf "${lib%%_*}" "$np" "${c}_perf" "${c}_${lib}_$r" "${envs[@]}" -- "${flags[@]}" || failed=1
      fi
    done
  done
done

# The result: one baseline line per (collective, library, env, size), medians over the rounds.
result=$OUT/side_by_side.jsonl
rm -f "$result"
shopt -s nullglob
for lib in openmpi nccl braid $(for p in $protos; do echo "braid_$p"; done); do
  files=("$L"/*_"${lib}"_[0-9]*.json)
  [[ ${#files[@]} -eq 0 ]] && continue
  envs=()
  for e in "${extra[@]}"; do envs+=(--env "$e"); done
  [[ $lib == braid_* ]] && envs+=(--env "NCCL_PROTO=${lib#braid_}")
  "$BASELINE_PY" make --append --machine "$machine" --library "${lib%%_*}" "${envs[@]}" -o "$result" "${files[@]}" ||
    failed=1
done
shopt -u nullglob
if [[ -s $result ]]; then
  "$BASELINE_PY" table "$result" | tee "$OUT/side_by_side.txt"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || { echo "wrong values reported (#wrong > 0)"; failed=1; }
  if [[ -n $baseline ]]; then
    "$BASELINE_PY" compare --strict "$baseline" "$result" | tee -a "$OUT/side_by_side.txt"
    [[ ${PIPESTATUS[0]} -eq 0 ]] || failed=1
  fi
  if [[ -n $base ]]; then
    base_result=$OUT/side_by_side_base.jsonl
    rm -f "$base_result"
    shopt -s nullglob
    files=("$L"/*_base_[0-9]*.json)
    shopt -u nullglob
    envs=()
    for e in "${extra[@]}"; do envs+=(--env "$e"); done
    "$BASELINE_PY" make --machine "$machine" --library braid "${envs[@]}" -o "$base_result" "${files[@]}" ||
      failed=1
    echo "== this build ($B) against --base $base, same call, interleaved:" | tee -a "$OUT/side_by_side.txt"
    "$BASELINE_PY" compare "$base_result" "$result" | tee -a "$OUT/side_by_side.txt"
  fi
  echo "result: $result (a baseline for docs/perf/$machine.jsonl), tables: $OUT/side_by_side.txt"
else
  echo "no run wrote a result"; failed=1
fi
gpu_pack
exit $failed
