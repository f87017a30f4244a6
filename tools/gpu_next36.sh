#!/usr/bin/env bash
# Device call (2 GPUs, ~8 min), the fifteenth session's first: every gpu test on main (432a014/397ff68 were not
# run on a GPU); NCCL's own choices (NCCL_DEBUG_SUBSYS=TUNING) for broadcast/reduce/all-reduce; three timing
# variants of the split one-shot at 8-16 MB (var/*.patch: one-line edits of the tree at 397ff68, since removed,
# each named in docs/gpu/2026-11-27a/log.txt: the in-place guard counted before the post's fence; no fence
# before tail (timing only, unsafe); the receiving CTA copies instead of reducing (timing only, wrong output)),
# three rounds against NCCL and main; all-reduce 256 KB-1 MB at 16/32 channels; broadcast 256-512 MB with 48/56
# channels, 8 MiB FIFOs and read mode, two rounds. Raw outputs: $OUT/next36.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next36_out}; L=$OUT/next36; mkdir -p "$L"
source tools/gpu_common.sh
VARS="guardearly nofence norecvred"
gpu_build_patch guardearly var/guardearly.patch braid all_reduce_perf device_coll_test
gpu_build_patch nofence var/nofence.patch braid all_reduce_perf
gpu_build_patch norecvred var/norecvred.patch braid all_reduce_perf
gpu_build braid braidrun all_reduce_perf broadcast_perf reduce_perf matmul_demo device_coll_test device_mp_test \
  numeric_device_test matmul_gpu_test device_one_rank_test device_errors_test device_p2p_group_test
wait
echo "builds: $(( $(date +%s) - GPU_T0 )) s"
gpu_tests device_p2p_group_test device_coll_test device_errors_test device_one_rank_test numeric_device_test \
  device_mp_test matmul_gpu_test
export PERF_TIMEOUT=60
for c in broadcast reduce all_reduce; do
  one $c nccl ${c}_nccl_info NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING -- -b 512K -e 512M -f 4 -n 1 -w 1 -c 0
  grep -E "Algo|proto|nChannels|Channel [0-9]+/|NTHREADS|threadThresholds" "$L/${c}_nccl_info.txt" | sort | uniq -c | sort -rn | head -12
done
S="-b 8M -e 16M -f 2 -c 0 -n 40 -w 5"
for round in 1 2 3; do
  one all_reduce nccl ar_nccl_$round -- $S
  B=$NEWB; one all_reduce braid ar_main_$round -- $S
  for v in $VARS; do B=/tmp/braid-$v/build-var; one all_reduce braid ar_${v}_$round -- $S; done
  B=$NEWB
done
for f in "$L"/ar_*_[123].txt; do
  echo "$(basename $f .txt) in-place: $(grep -v '^#' "$f" | awk 'NF>12 && $1 ~ /^[0-9]+$/ {printf "%s:%s ", $1, $10}')"
done
B=/tmp/braid-guardearly/build-var
one all_reduce braid ar_guardearly_check -- -b 4M -e 64M -f 2 -c 1 -n 5 -w 2
timeout 150 $B/bin/device_coll_test --gtest_filter='*OneShot*' > "$L/guardearly_oneshot_test.txt" 2>&1
echo "guardearly OneShot tests rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$L/guardearly_oneshot_test.txt" | tr '\n' ' ')"
B=$NEWB
S2="-b 256K -e 1M -f 2 -c 1 -n 40 -w 5"
for round in 1 2; do
  one all_reduce nccl small_nccl_$round -- $S2
  one all_reduce braid small_def_$round -- $S2
  one all_reduce braid small_c32_$round NCCL_MAX_NCHANNELS=32 -- $S2
  one all_reduce braid small_c16_$round NCCL_MAX_NCHANNELS=16 -- $S2
done
B3="-b 256M -e 512M -f 2 -c 1 -n 20 -w 3 -a 3"
for round in 1 2; do
  [[ $(( $(date +%s) - GPU_T0 )) -gt 470 ]] && { echo "skipping broadcast round $round (time)"; break; }
  one broadcast nccl bc_nccl_$round -- $B3
  one broadcast braid bc_def_$round -- $B3
  one broadcast braid bc_c48_$round NCCL_MAX_NCHANNELS=48 -- $B3
  one broadcast braid bc_c56_$round NCCL_MAX_NCHANNELS=56 -- $B3
  one broadcast braid bc_b8m_$round NCCL_BUFFSIZE=8388608 -- $B3
  one broadcast braid bc_read_$round NCCL_P2P_READ_ENABLE=1 -- $B3
done
for f in "$L"/bc_*_[12].txt; do
  echo "$(basename $f .txt) in-place: $(grep -v '^#' "$f" | awk 'NF>12 && $1 ~ /^[0-9]+$/ {printf "%s:%s ", $1, $10}')"
done
gpu_pack
