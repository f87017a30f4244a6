#!/usr/bin/env bash
# Builds Braid and runs every gpu test binary (tests/gpu/*_test.{cc,cu}) on this machine's GPUs: one verdict line
# per binary and the first failures. Exit status 1 if any binary did not pass: FAIL, SKIPPED (every case skipped
# itself, e.g. too few GPUs visible), MISSING (not built) or SKIP (not started: -g).
#
#   tools/gpu/test.sh [-b BUILD_DIR] [-n NP] [-g GUARD] [-t TIMEOUT] [TEST...]
#
#   -b DIR    build folder (default build-gpu). Used as it is when its bin/ holds the tests and the programs they
#             start (braidrun, perf tools, matmul_demo), e.g. a folder made by tools/gpu/carry.sh; else those
#             targets are configured and built there (Ninja; GoogleTest from $BRAID_GTEST_SOURCE, ./.gtest or
#             /usr/src/googletest where the system has none; CMAKE_ARGS adds configure options)
#   -n NP     GPUs the tests see: CUDA_VISIBLE_DEVICES=0..NP-1 (default: every visible GPU)
#   -g SEC    start no test once the script has run SEC seconds, build included (default 540; 0: no limit)
#   -t SEC    time limit of one test binary (default 200; none goes on past CALL_LIMIT, default 585 s after the
#             start: a 10-minute GPU-machine job less the packing)
#   TEST...   the binaries to run (default: all), e.g. device_coll_test fifo_gpu_test
#   -h        this text
#
# Run from the repository root. Logs: $OUT/test.tgz (OUT: the job's output folder, default
# ./build-gpu-out). NCCL_NVLS_ENABLE=0 is exported for every test.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

np=""
while getopts "b:n:g:t:h" o; do
  case $o in
    b) B=$OPTARG ;;
    n) np=$OPTARG ;;
    g) GUARD=$OPTARG ;;
    t) TEST_TIMEOUT=$OPTARG ;;
    h) gpu_usage "$0"; exit 0 ;;
    *) gpu_usage "$0" >&2; exit 2 ;;
  esac
done
shift $(( OPTIND - 1 ))
[[ -d tests/gpu ]] || { echo "run from the repository root (no tests/gpu here)"; exit 2; }

tests=("$@")
[[ ${#tests[@]} -eq 0 ]] && mapfile -t tests < <(gpu_gpu_tests)
[[ ${#tests[@]} -eq 0 ]] && { echo "no gpu tests found in tests/gpu"; exit 2; }
needs=()
for t in "${tests[@]}"; do
  [[ -f tests/gpu/$t.cc || -f tests/gpu/$t.cu ]] || { echo "no test $t in tests/gpu"; exit 2; }
  mapfile -t -O "${#needs[@]}" needs < <(gpu_test_needs "$t")
done
mapfile -t needs < <(printf '%s\n' "${needs[@]}" | sort -u | grep .)

gpu_init test
if [[ -n $np ]]; then
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $(( np - 1 )))
  export CUDA_VISIBLE_DEVICES
fi
echo "GPUs: $(gpu_count)${np:+ (CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES)}; tests: ${#tests[@]}; build: $B"
if ! gpu_use_build "$B" "${tests[@]}" "${needs[@]}"; then
  gpu_build "$B" braid "${needs[@]}" "${tests[@]}"
  gpu_use_build "$B"
fi

gpu_tests "${tests[@]}"
failed=$?
echo "$(( ${#tests[@]} - failed )) of ${#tests[@]} test binaries passed"
gpu_pack
[[ $failed -eq 0 ]]
