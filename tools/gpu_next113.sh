#!/usr/bin/env bash
# Device call (2 GPUs, ~5 min), twenty-sixth session, call c: under bounds of 17-23 main cuts send/recv and
# all-to-all over half the bound, a CTA per direction (10 under 20, 8 under 17), and ~12 sending CTAs fill the link
# (call b). build-link (tools/var_link12.patch: 12 ring channels there, kP2pLinkChannels, paired only as far as the
# bound needs: under 20, 4 paired CTAs and 8 each way) against build-main (44b5e55) and build-pair (every channel
# paired, call b's). The p2p gpu tests on build-link under 20 and 17; send/recv and all-to-all 2-512 MB (x4) under 20
# and 17, NCCL / main / link / pair, two rounds; send/recv under 20 on build-link with BRAID_P2P_BALANCE_BYTES=256K
# (8 MB's 683 KB shares then balance too). tools/pack_carry.sh build-main build-pair build-link.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next113_out}; L=$OUT/next113; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main P=$PWD/build-pair K=$PWD/build-link
gpu_carried $P tools/var_pair24.patch
gpu_carried $K tools/var_link12.patch
echo "build-main of $(cat $M/HEAD)"
B=$K; export LD_LIBRARY_PATH=$K/lib
for b in 20 17; do (export NCCL_MAX_CTAS=$b; L=$L/link$b; mkdir -p $L; gpu_tests device_p2p_balance_test device_p2p_group_test device_mp_test); done
unset LD_LIBRARY_PATH
export PERF_TIMEOUT=60
S="-b 2M -e 512M -f 4 -c 1 -n 10 -w 3"
for r in 1 2; do
  for b in 20 17; do
    for c in sendrecv alltoall; do
      B=$M; one $c nccl ${c}${b}_nccl_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=$b -- $S
      B=$M; one $c braid ${c}${b}_main_$r LD_LIBRARY_PATH=$M/lib NCCL_MAX_CTAS=$b -- $S
      B=$K; one $c braid ${c}${b}_link_$r LD_LIBRARY_PATH=$K/lib NCCL_MAX_CTAS=$b -- $S
      B=$P; one $c braid ${c}${b}_pair_$r LD_LIBRARY_PATH=$P/lib NCCL_MAX_CTAS=$b -- $S
    done
  done
  B=$K; one sendrecv braid sendrecv20_link256k_$r LD_LIBRARY_PATH=$K/lib NCCL_MAX_CTAS=20 BRAID_P2P_BALANCE_BYTES=262144 -- $S
done
gpu_pack
