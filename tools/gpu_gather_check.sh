#!/usr/bin/env bash
# Device call (2 GPUs, ~3 min): gather/scatter at small sizes measured 8.3-11.6 us in call zd (5.4-6.5 in the
# ninth session's call w). A/B in one call: this tree against a copy with the SIMPLE receive fence restored
# (devPostRecv, e617850), both against NCCL, alternating, 8 B-8 MB. Raw outputs: $OUT/gathercheck.tgz.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_gathercheck_out}; L=$OUT/gathercheck; mkdir -p "$L"
source tools/gpu_common.sh
F=/tmp/braid-fence
mkdir -p $F && tar --exclude=./build-gpu -cf - . | tar -C $F -xf -
python3 - "$F/src/device/prims_simple.h" <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
old = "  ++c.step;\n  stRelaxedSys(c.head, c.step);"
assert s.count(old) == 1
open(p, "w").write(s.replace(old, "  ++c.step;\n  fenceSys();\n  stRelaxedSys(c.head, c.step);"))
PY
(cd $F && cmake -S . -B build-f -G Ninja -DBRAID_GTEST_SOURCE=$PWD/.gtest > "$L/cmake_f.log" 2>&1 &&
 ninja -C build-f -j16 braid gather_perf scatter_perf alltoall_perf sendrecv_perf > "$L/build_f.log" 2>&1; echo "fence build rc=$?") &
gpu_build braid gather_perf scatter_perf alltoall_perf sendrecv_perf
wait
export PERF_TIMEOUT=40
P="-b 8 -e 8M -f 8 -c 1 -n 40 -w 10"
for c in gather scatter alltoall sendrecv; do
  a=1; case $c in gather|scatter) a=3 ;; esac
  one $c nccl ${c}_nccl -- $P -a $a
  for r in 1 2; do
    one $c braid ${c}_now_$r -- $P -a $a
    B0=$B; B=$F/build-f; one $c braid ${c}_fence_$r -- $P -a $a; B=$B0
  done
done
gpu_pack
