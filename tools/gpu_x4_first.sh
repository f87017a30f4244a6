#!/usr/bin/env bash
# Device call (4 GPUs, nvidia-h200-x4, ~3 min): the first 4-rank run of Braid's device path. All-reduce and
# all-gather 8 B-32 MB on 4 processes (rings; the one-shot exists for 2 ranks only), Braid and NCCL, -c 1 (every
# element checked). No gpu tests (they are written for 2 GPUs). Raw outputs: $OUT/x4.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_x4_out}; L=$OUT/x4; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi topo -m > $L/topo.txt 2>&1; head -8 $L/topo.txt
cmake -S . -B $B -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > "$L/cmake.log" 2>&1 || exit 1
ninja -C $B -j64 braid all_reduce_perf all_gather_perf > "$L/build.log" 2>&1 || { tail -20 $L/build.log; exit 1; }
echo "build: $(( $(date +%s) - GPU_T0 )) s"
A="-b 8 -e 32M -f 8 -c 1 -n 20 -w 5"
for c in all_reduce all_gather; do for lib in nccl braid; do
  envs=(-x NCCL_NVLS_ENABLE=0); [[ $lib == nccl ]] && envs+=(-x LD_PRELOAD=$NCCL_LIB)
  timeout 40 mpirun --allow-run-as-root -np 4 "${envs[@]}" $B/bin/${c}_perf $A > $L/${c}_$lib.txt 2>&1
  echo "${c}_$lib rc=$?: $(awk 'NF>8 && $1 ~ /^[0-9]+$/ {printf "%s:%s(%s,%s) ", $1, $6, $8, $9}' $L/${c}_$lib.txt)"
done; done
gpu_pack
