#!/usr/bin/env bash
# One collective run by NVIDIA NCCL and by Braid under several environment variants (each a name and VAR=V
# settings), in interleaved rounds (the order reversed every other round), every output checked (-c 1); prints
# the per-size medians of each (tools/perf/medians: NCCL / variant ratios). For choosing a size rule or a
# channel count on the machine at hand, side by side with NCCL in one call.
#
#   tools/gpu/variants.sh [-n NP] [-C COLL] [-r ROUNDS] [-b BUILD_DIR] [-g GUARD] [--no-nccl]
#                         -V NAME[:VAR=V,VAR=V...]... [-- PERF_FLAGS...]
#
#   -n NP       ranks, one per GPU (default: every visible GPU)
#   -C COLL     the collective's perf tool without _perf (default all_reduce)
#   -r ROUNDS   interleaved rounds (default 3)
#   -V SPEC     a Braid variant, repeatable: NAME, then the settings after a colon, comma-separated
#               (e.g. -V default -V ring:BRAID_TWOSHOT_PEERS_BYTES=0 -V ch4k:BRAID_PEERS_CHANNEL_BYTES=4096)
#   -b DIR      build folder (default build-gpu; a carried build-pack/DIR.tgz is unpacked), as side_by_side.sh
#   -g SEC      start no run once the script has run SEC seconds (default 540; 0: no limit)
#   --no-nccl   leave NVIDIA NCCL out
#   PERF_FLAGS  the perf tool's flags (default -b 8K -e 1M -f 2 -n 50 -w 10); -c 1 is appended
#   -h          this text
#
# Output: the table on stdout, and $OUT/variants.tgz with each run's output (<coll>_<name>_<round>.txt).
# Exit status 1 if a run failed or reported wrong values.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"
MEDIANS=$(cd "$(dirname "$0")/../perf" && pwd)/medians

np="" coll=all_reduce rounds=3 specs=() nccl=1 flags=()
die() { echo "variants.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
    -n) np=${2:?}; shift 2 ;;
    -C) coll=${2:?}; shift 2 ;;
    -r) rounds=${2:?}; shift 2 ;;
    -V) specs+=("${2:?}"); shift 2 ;;
    -b) BUILD=${2:?}; shift 2 ;;
    -g) GUARD=${2:?}; shift 2 ;;
    --no-nccl) nccl=0; shift ;;
    -h) gpu_usage "$0"; exit 0 ;;
    --) shift; flags=("$@"); break ;;
    *) die "unknown option $1 (-h for help)" ;;
  esac
done
[[ ${#specs[@]} -gt 0 ]] || die "no variant (-V NAME[:VAR=V,...])"
[[ ${#flags[@]} -gt 0 ]] || flags=(-b 8K -e 1M -f 2 -n 50 -w 10)
gpu_init variants
[[ -n $np ]] || np=$(gpu_count)
[[ $np -ge 1 ]] || die "no GPU visible"
gpu_use_build "${BUILD:-build-gpu}" "${coll}_perf" || gpu_build "${BUILD:-build-gpu}" "${coll}_perf" braidrun

libs=()
[[ $nccl == 1 ]] && libs+=(nccl)
for s in "${specs[@]}"; do libs+=("${s%%:*}"); done
failed=0
for (( r = 1; r <= rounds; ++r )); do
  order=("${libs[@]}")
  if (( r % 2 == 0 )); then
    order=(); for (( i = ${#libs[@]} - 1; i >= 0; --i )); do order+=("${libs[i]}"); done
  fi
  for name in "${order[@]}"; do
    gpu_over_guard && { echo "stopped at ${GUARD} s (GUARD)"; failed=1; break 2; }
    envs=()
    lib=braid
    if [[ $name == nccl ]]; then
      lib=nccl
    else
      for s in "${specs[@]}"; do
        [[ ${s%%:*} == "$name" && $s == *:* ]] && IFS=, read -r -a envs <<< "${s#*:}"
      done
    fi
    gpu_perf "$lib" "$np" "${coll}_perf" "${coll}_${name}_${r}" "${envs[@]}" -- "${flags[@]}" -c 1 || failed=1
    # Columns: size count type redop root, then time algbw busbw #wrong out of place and the same in place.
    if awk '!/^#/ && $1 ~ /^[0-9]+$/ && NF >= 13 && ($9 != 0 || $13 != 0) { bad = 1 } END { exit !bad }' \
         "$L/${coll}_${name}_${r}.txt"; then
      echo "    wrong values in ${coll}_${name}_${r}"; failed=1
    fi
  done
done
echo
echo "np=$np $coll, medians over $rounds round(s) (us; NCCL / variant where NCCL ran):"
"$MEDIANS" "$L" "$coll" "${libs[@]}"
gpu_pack
exit $failed
