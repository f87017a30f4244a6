#!/usr/bin/env bash
# Device call (2 GPUs, ~6 min), twenty-eighth session, call b. First the landing build (build-new: the balanced
# transfer's close word folds the chunk size in, so a sender with a larger chunk than its receiver is reported):
# device_coll_test (not run since fc2a767's launch-argument layout), device_errors_test, device_mp_test and the p2p
# tests unbounded, and the p2p tests under 17. Then an unequal split of a paired p2p CTA's warps (call a: more
# threads did not help; does one direction's half hold the other up?), 512 threads, send group's share in sixteenths:
#   build-sp10 / build-sp6   tools/var_split10.patch / var_split6.patch
# (10: 320 send threads / 192 receive; 6: 192 / 320), two rounds of send/recv 8-512 MB under 17 and
# 20 with NCCL and main (c041c76), and all-to-all under 17, one round.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next125_out}; L=$OUT/next125; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
M=$PWD/build-main
echo "build-main of $(cat $M/HEAD), build-new of $(cat build-new/HEAD)"
for k in 10 6; do gpu_carried build-sp$k tools/var_split$k.patch; done
for k in 10 6; do
  (B=$PWD/build-sp$k; export LD_LIBRARY_PATH=$B/lib NCCL_MAX_CTAS=17; L=$L/sp$k; mkdir -p $L
   gpu_tests device_p2p_balance_test)
done
export PERF_TIMEOUT=60
S="-b 8M -e 512M -f 4 -c 1 -n 10 -w 3"
run_all() {  # coll bound round
  local c=$1 b=$2 r=$3 E k
  E=(NCCL_MAX_CTAS=$b)
  B=$M; one $c nccl ${c}${b}_nccl_$r LD_LIBRARY_PATH=$M/lib "${E[@]}" -- $S
  B=$M; one $c braid ${c}${b}_main_$r LD_LIBRARY_PATH=$M/lib "${E[@]}" -- $S
  for k in 10 6; do B=$PWD/build-sp$k; one $c braid ${c}${b}_sp${k}_$r LD_LIBRARY_PATH=$B/lib "${E[@]}" -- $S; done
}
for r in 1 2; do for b in 17 20; do run_all sendrecv $b $r; done; done
run_all alltoall 17 1
X=$PWD/build-new
(B=$X; export LD_LIBRARY_PATH=$X/lib
 gpu_tests device_p2p_balance_test device_p2p_group_test device_mp_test device_errors_test device_coll_test
 grep -h "estimated" $L/device_mp_test.txt
 export NCCL_MAX_CTAS=17; L=$L/ctas17; mkdir -p $L; gpu_tests device_p2p_balance_test device_p2p_group_test)
gpu_pack
