#!/usr/bin/env bash
# Runs JAX's and CuPy's collectives on Braid (tools/gpu/frameworks_check.py: JAX psum, all_gather, psum_scatter,
# all_to_all and ppermute over pmap; CuPy's cupy.cuda.nccl all-reduce; every element checked against NumPy),
# with NCCL_DEBUG=VERSION, and says which library served each run: BRAID (Braid's banner, and no init by
# another NCCL), NVIDIA (no Braid banner) or MIXED (both).
#
#   tools/gpu/frameworks_check.sh [-b BUILD_DIR] [-n NDEV] [-m MODES] [WHAT...]
#
#   -b DIR    Braid build folder (default build-gpu): DIR/lib/libnccl.so.2 is used as it is; when missing the
#             library is configured and built there (CMAKE_ARGS adds configure options)
#   -n NDEV   GPUs each run drives from its one process (default: every visible GPU)
#   -m MODES  comma list of how Braid is put in (default preload,path):
#               preload  LD_PRELOAD=DIR/lib/libnccl.so.2 (the way for JAX: see docs/USAGE.md)
#               path     LD_LIBRARY_PATH=DIR/lib first
#               nccl     neither: the framework's own NCCL, for comparison
#   WHAT...   jax, cupy (default: both)
#   -h        this text
#
# One verdict line per run: PASS (every check equal) or FAIL, and the library that served it. Exit status 1 if
# a check failed or a preload run was not served by Braid alone. Logs: $OUT/frameworks.tgz (OUT: the job's
# output folder, default ./build-gpu-out). NCCL_NVLS_ENABLE=0 is exported for every run.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

ndev=64 modes=preload,path
while getopts "b:n:m:h" o; do
  case $o in
    b) B=$OPTARG ;;
    n) ndev=$OPTARG ;;
    m) modes=$OPTARG ;;
    h) gpu_usage "$0"; exit 0 ;;
    *) gpu_usage "$0" >&2; exit 2 ;;
  esac
done
shift $(( OPTIND - 1 ))
whats=("$@")
[[ ${#whats[@]} -eq 0 ]] && whats=(jax cupy)
py=$(dirname "$0")/frameworks_check.py
[[ -f $py ]] || { echo "frameworks_check.sh: $py is missing"; exit 2; }

gpu_init frameworks
if [[ ! -e $B/lib/libnccl.so.2 ]]; then
  [[ -f CMakeLists.txt ]] || { echo "frameworks_check.sh: no $B/lib/libnccl.so.2 and no source here to build"; exit 2; }
  gpu_build "$B" braid
fi
lib=$(cd "$B/lib" && pwd)
echo "GPUs: $(gpu_count); Braid: $lib/libnccl.so.2 -> $(readlink -f "$lib/libnccl.so.2"); runs: ${whats[*]} x $modes"

failed=0
for what in "${whats[@]}"; do
  for mode in ${modes//,/ }; do
    envs=(NCCL_DEBUG=VERSION PYTHONUNBUFFERED=1)
    case $mode in
      preload) envs+=("LD_PRELOAD=$lib/libnccl.so.2") ;;
      path) envs+=("LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}") ;;
      nccl) ;;
      *) echo "frameworks_check.sh: unknown mode $mode"; exit 2 ;;
    esac
    log=$L/${what}_$mode.txt
    s=$SECONDS
    echo "env ${envs[*]} python3 $py $what -n $ndev" > "$log"
    timeout "$(gpu_limit 240)" env "${envs[@]}" python3 "$py" "$what" -n "$ndev" >> "$log" 2>&1
    rc=$?
    # NCCL's bare "NCCL version" line comes from whichever library initialised; Braid follows its own with
    # "Braid X.Y.Z (NCCL ... API) from FILE". More NCCL lines than Braid lines: another NCCL initialised too.
    nv=$(grep -c '^NCCL version' "$log")
    br=$(grep -c '^Braid .* API) from ' "$log")
    if [[ $br -gt 0 && $nv -eq $br ]]; then served=BRAID
    elif [[ $br -gt 0 ]]; then served=MIXED
    elif [[ $nv -gt 0 ]]; then served=NVIDIA
    else served=NONE; fi
    pass=$(grep -c '^PASS ' "$log")
    fail=$(grep -c '^FAIL ' "$log")
    verdict=PASS
    [[ $rc -ne 0 || $fail -gt 0 || $pass -eq 0 ]] && verdict=FAIL
    [[ $mode == preload && $served != BRAID ]] && verdict=FAIL
    [[ $verdict == PASS ]] || failed=$(( failed + 1 ))
    printf '%-4s %-5s %-8s rc=%-3d %3d s  checks: %d pass %d fail  served by %s\n' "$verdict" "$what" "$mode" "$rc" \
      $(( SECONDS - s )) "$pass" "$fail" "$served"
    grep -E '^(Braid |dlopen|NCCL files)' "$log" | sort -u | sed 's/^/    | /'
    [[ $verdict == PASS ]] || grep -vE '^(PASS|NCCL version|Braid )' "$log" | tail -8 | sed 's/^/    | /'
  done
done
gpu_pack
exit $(( failed > 0 ))
