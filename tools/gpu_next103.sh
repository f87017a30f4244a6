#!/usr/bin/env bash
# Twenty-fourth session, call c: main as it lands (f5806c9: the gather step cap on the half-bound cut, and the
# init line when p2p CTAs cannot pair), carried as build-new (a default build: every gpu test, braidrun,
# matmul_demo, the perf tools); build-final is 19455d7. Every gpu test; the p2p tests under 24 and 20; the init
# line under NCCL_NTHREADS=96 NCCL_MAX_CTAS=8; gathers 64-512 MB unbounded and under 32, 24 and 20, and
# send/recv and all-to-all unbounded (P2pBlock's layout changed), main against new, NCCL beside.
# tools/pack_carry.sh build-final build-new.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_next103_out}; L=$OUT/next103; mkdir -p "$L"
source tools/gpu_common.sh
nvidia-smi -L
gpu_unpack
F=$PWD/build-final N=$PWD/build-new
B=$N; export LD_LIBRARY_PATH=$N/lib
echo "build-new of $(cat $N/HEAD); build-final of $(cat $F/HEAD)"
gpu_tests cluster_gpu_test fifo_gpu_test device_coll_test device_errors_test device_p2p_group_test \
  numeric_device_test device_one_rank_test device_mp_test matmul_gpu_test
for b in 20 24; do (export NCCL_MAX_CTAS=$b; L=$L/ctas$b; mkdir -p $L; gpu_tests device_p2p_group_test device_mp_test); done
one sendrecv braid info_pair LD_LIBRARY_PATH=$N/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT NCCL_NTHREADS=96 NCCL_MAX_CTAS=8 -- -b 1M -e 1M -c 1 -n 2 -w 1
grep -h "cannot run a p2p" $L/info_pair.txt | head -2
export PERF_TIMEOUT=60
S="-b 64M -e 512M -f 2 -c 1 -n 10 -w 3"
for b in 0 32 24 20; do
  E=(); [[ $b != 0 ]] && E+=(NCCL_MAX_CTAS=$b)
  B=$F; one gather nccl gather${b}_nccl LD_LIBRARY_PATH=$F/lib "${E[@]}" -- $S
  B=$F; one gather braid gather${b}_main LD_LIBRARY_PATH=$F/lib "${E[@]}" -- $S
  B=$N; one gather braid gather${b}_new LD_LIBRARY_PATH=$N/lib "${E[@]}" -- $S
done
for c in sendrecv alltoall; do
  B=$F; one $c braid ${c}_main LD_LIBRARY_PATH=$F/lib -- -b 1M -e 256M -f 4 -c 1 -n 10 -w 3
  B=$N; one $c braid ${c}_new LD_LIBRARY_PATH=$N/lib -- -b 1M -e 256M -f 4 -c 1 -n 10 -w 3
done
gpu_pack
