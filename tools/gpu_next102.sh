#!/usr/bin/env bash
# Twenty-fourth session, call b: a gather's FIFO steps into the root capped at 256 KiB (BRAID_P2P_GATHER_STEP,
# kP2pGatherStepBytes; build-cap, the working tree on 19455d7) against main (build-final, 19455d7) and NCCL:
# the gpu tests that run p2p (the new DeviceP2pGroup.GatherStepsBesideTransfersTheSameWay among them) on
# build-cap unbounded and under 24 and 8, then gathers 16-512 MB unbounded and under 32, 24, 16 and 8, two rounds;
# under 16 and 8 also a cap of half the connection's step (512 KiB / 1 MiB there).
# tools/pack_carry.sh build-final build-cap.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next102_out}; L=$OUT/next102; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
F=$PWD/build-final C=$PWD/build-cap
B=$C; export LD_LIBRARY_PATH=$C/lib
echo "build-cap of $(cat $C/HEAD); build-final of $(cat $F/HEAD)"
gpu_tests device_p2p_group_test device_mp_test device_coll_test
for b in 8 24; do (export NCCL_MAX_CTAS=$b; L=$L/ctas$b; mkdir -p $L; gpu_tests device_mp_test); done
export PERF_TIMEOUT=60
S="-b 16M -e 512M -f 2 -c 1 -n 10 -w 3"
for r in 1 2; do
  for b in 0 32 24 16 8; do
    E=(); [[ $b != 0 ]] && E+=(NCCL_MAX_CTAS=$b)
    B=$F; one gather nccl gather${b}_nccl_$r LD_LIBRARY_PATH=$F/lib "${E[@]}" -- $S
    B=$F; one gather braid gather${b}_main_$r LD_LIBRARY_PATH=$F/lib "${E[@]}" -- $S
    B=$C; one gather braid gather${b}_cap_$r LD_LIBRARY_PATH=$C/lib "${E[@]}" -- $S
    [[ $b == 16 ]] && { B=$C; one gather braid gather${b}_half_$r LD_LIBRARY_PATH=$C/lib "${E[@]}" BRAID_P2P_GATHER_STEP=524288 -- $S; }
    [[ $b == 8 ]] && { B=$C; one gather braid gather${b}_half_$r LD_LIBRARY_PATH=$C/lib "${E[@]}" BRAID_P2P_GATHER_STEP=1048576 -- $S; }
  done
done
gpu_pack
