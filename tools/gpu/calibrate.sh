#!/usr/bin/env bash
# The tuner's calibration grid: each collective run by Braid with one protocol and one channel count forced
# (NCCL_PROTO, NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS, BRAID_DEVICE_TUNER=1), the perf tools' output of each run
# kept as <coll>_<proto>_<channels>.txt, which tools/tuner_fit.py fits the tuner's cost rows
# (src/tuner/tuner_model.def) to. Prints one line per run.
#
#   tools/gpu/calibrate.sh [-n NP] [-C COLLS] [-p PROTOS] [-k CHANNELS] [-x VAR=V]... [-b BUILD_DIR] [-g GUARD]
#                          [-- PERF_FLAGS...]
#
#   -n NP        ranks, one per GPU (default: every visible GPU; tools/tuner_fit.py fits grids of several rank
#                counts together: one calibrate.sh run and DIR per count)
#   -C COLLS     comma- or space-separated (default all_reduce,all_gather,reduce_scatter,broadcast,reduce);
#                all_reduce_oneshot is all_reduce with NCCL_ALGO=allreduce:OneShot
#   -p PROTOS    protocols (default LL,Simple; LL128 fits in a run of its own: -p LL128)
#   -k CHANNELS  channel counts (default 1,2,4,8,16,32,64 for all_reduce and all_gather, 1,8,64 for the others)
#   -x VAR=V     extra environment for every run, repeatable (e.g. -x NCCL_ALGO=allreduce:Ring)
#   -b DIR       build folder (default build-gpu): used as it is when its bin/ holds the perf tools, else built
#   -g SEC       start no run once the script has run SEC seconds, build included (default 540; 0: no limit)
#   PERF_FLAGS   the perf tools' flags (default -b 8 -e 32M -f 4 -n 40 -w 5); -c 1 is appended, and -a 3 (the
#                slower rank's time) for broadcast and reduce unless PERF_FLAGS has -a
#   -h           this text
#
# Output: $OUT/calibrate.tgz (OUT: the job's output folder, default ./build-gpu-out) holding
# calibrate/<coll>_<proto>_<channels>.{txt,json}. Then, on any machine:
#   tar -xzf calibrate.tgz && tools/tuner_fit.py calibrate [--fix NAME=VALUE ...]
# Exit status 1 if a run failed or was not started (-g). NCCL_NVLS_ENABLE=0 is passed to every rank. Environment:
# PERF_TIMEOUT (s per run, default 150; none goes on past CALL_LIMIT, default 585 s), MPIRUN_OPTS, GPU_LAUNCHER.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

RING="all_reduce all_gather reduce_scatter broadcast reduce all_reduce_oneshot"
np="" colls="all_reduce all_gather reduce_scatter broadcast reduce" protos="LL Simple" channels="" extra=() flags=()
die() { echo "calibrate.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
    -n) np=${2:?}; shift 2 ;;
    -C) colls=${2//,/ }; shift 2 ;;
    -p) protos=${2//,/ }; shift 2 ;;
    -k) channels=${2//,/ }; shift 2 ;;
    -x) [[ ${2:-} == *=* ]] || die "-x wants VAR=V"; extra+=("$2"); shift 2 ;;
    -b) B=${2:?}; shift 2 ;;
    -g) GUARD=${2:?}; shift 2 ;;
    -h|--help) gpu_usage "$0"; exit 0 ;;
    --) shift; flags=("$@"); break ;;
    *) gpu_usage "$0" >&2; die "unknown option $1" ;;
  esac
done
for c in $colls; do [[ " $RING " == *" $c "* ]] || die "unknown collective $c (one of: $RING)"; done
for p in $protos; do [[ $p =~ ^(LL|LL128|Simple)$ ]] || die "unknown protocol $p (LL, LL128, Simple)"; done
for k in $channels; do [[ $k =~ ^[1-9][0-9]*$ ]] || die "-k wants channel counts"; done
for f in "${flags[@]}"; do [[ $f == -J || $f == --output_file* ]] && die "do not pass -J: the script sets it"; done
[[ ${#flags[@]} -eq 0 ]] && flags=(-b 8 -e 32M -f 4 -n 40 -w 5)
has_a=0
for f in "${flags[@]}"; do [[ $f == -a || $f == --average* ]] && has_a=1; done
if [[ -z $np ]]; then
  np=$(gpu_count)
  [[ $np -gt 0 ]] || die "no GPU visible (nvidia-smi -L); give -n NP"
fi
[[ $np =~ ^[1-9][0-9]*$ ]] || die "-n wants a positive number"

gpu_init calibrate
tools=(braidrun)
for c in $colls; do tools+=("${c%_oneshot}_perf"); done
if ! gpu_use_build "$B" "${tools[@]}"; then
  gpu_build "$B" braid "${tools[@]}"
  gpu_use_build "$B"
fi
[[ $np -eq 2 ]] || echo "note: $np ranks; tools/tuner_fit.py's wire model is the 2-rank one"
echo "calibration grid on $np ranks (launcher $(gpu_launcher)): $colls x $protos; ${flags[*]} -c 1"

failed=0
for c in $colls; do
  chs=$channels
  if [[ -z $chs ]]; then
    case $c in all_reduce|all_gather|all_reduce_oneshot) chs="1 2 4 8 16 32 64" ;; *) chs="1 8 64" ;; esac
  fi
  f=("${flags[@]}" -c 1)
  [[ $has_a == 0 && ( $c == broadcast || $c == reduce ) ]] && f+=(-a 3)
  envs=("${extra[@]}" BRAID_DEVICE_TUNER=1)
  [[ $c == all_reduce_oneshot ]] && envs+=(NCCL_ALGO=allreduce:OneShot)
  for p in $protos; do
    for k in $chs; do
      if gpu_over_guard; then echo "${c}_${p}_$k not run: the script has run $GUARD s (GUARD)"; failed=1; continue; fi
      gpu_perf braid "$np" "${c%_oneshot}_perf" "${c}_${p}_$k" "${envs[@]}" NCCL_PROTO="$p" \
        NCCL_MIN_NCHANNELS="$k" NCCL_MAX_NCHANNELS="$k" -- "${f[@]}" || failed=1
    done
  done
done
gpu_pack
echo "fit: tar -xzf calibrate.tgz && tools/tuner_fit.py calibrate"
exit $failed
