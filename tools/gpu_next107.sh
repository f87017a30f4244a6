#!/usr/bin/env bash
# Twenty-fifth session, call b: a timeline of p2p CTAs (build-tl: e01892e + tools/var_p2p_timeline.patch, which prints
# per transfer CTA of 4 MiB and more its start, end, and the time thread 0 spent waiting and copying and the poster
# posting, and per local-copy CTA its start and end). Gathers and scatters of 512 MB unbounded and under 32, 24 and
# 20 (gathers under 24 and 20 run at 0.89-0.93x NCCL, scatters under 24 at 1.0x), and a gather under 24 with
# NCCL_NTHREADS=256. tools/pack_carry.sh build-tl; tools/p2p_timeline_summary.py reads the output.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next107_out}; L=$OUT/next107; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
T=$PWD/build-tl
B=$T; export LD_LIBRARY_PATH=$T/lib PERF_TIMEOUT=60
echo "build-tl of $(cat $T/HEAD)"
S="-b 512M -e 512M -c 1 -n 4 -w 1"
for c in gather scatter; do
  for b in 0 32 24 20; do
    E=(); [[ $b != 0 ]] && E+=(NCCL_MAX_CTAS=$b)
    one $c braid ${c}${b} LD_LIBRARY_PATH=$T/lib "${E[@]}" -- $S
  done
done
one gather braid gather24_t256 LD_LIBRARY_PATH=$T/lib NCCL_MAX_CTAS=24 NCCL_NTHREADS=256 -- $S
one gather braid gather20_t256 LD_LIBRARY_PATH=$T/lib NCCL_MAX_CTAS=20 NCCL_NTHREADS=256 -- $S
grep -c "^TL" $L/*.txt
gpu_pack
