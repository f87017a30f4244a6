#!/usr/bin/env bash
# Where a kernel's time goes, phase by phase: builds Braid with -DBRAID_DEV_PROBE=ON (src/device/dev_probe.h:
# thread 0 of CTA 0 of each probed kernel prints its phase marks once per launch), runs one perf tool per variant
# and prints, per kernel and rank, the median time from the kernel's entry to each mark, in ns (the SM clock's
# cycles scaled by each launch's %globaltimer span). The printing slows the launches, so compare marks inside a
# kernel and between variants, not the perf tool's own times. The marks are numbered in the kernels' source
# (BRAID_PROBE(k)).
#
#   tools/gpu/probe.sh [-n NP] [-C COLL] [-b BUILD_DIR] [-s SKIP] [-r RANK] [-V NAME:VAR=V[,VAR=V]]...
#                      [-- PERF_FLAGS...]
#
#   -n NP     ranks, one per GPU (default: every visible GPU); -n 1 -- -g 4 for one process driving 4
#   -C COLL   the collective's perf tool without _perf (default all_reduce)
#   -b DIR    the probe build's folder (default /tmp/braid-probe; configured with the minimal kernel preset and
#             the probe on where it has no build.ninja yet; CMAKE_ARGS adds options)
#   -s SKIP   launches left out at the start per kernel and rank (default 10); records come 32 launches at a
#             time, so run at least 32 past SKIP (-n plus -w, times -G's launches)
#   -r RANK   only this rank's lines (default: every rank)
#   -V ...    a variant: its name and environment settings (repeatable; default one variant "default")
#   PERF_FLAGS the perf tool's flags (default -b 8 -e 8 -n 100 -w 10)
#   -h        this text
#
# Output: the tables on stdout; each run's output in $OUT/probe/.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

np="" coll=all_reduce dir=/tmp/braid-probe skip=10 rank="" variants=() flags=()
die() { echo "probe.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
    -n) np=${2:?}; shift 2 ;;
    -C) coll=${2:?}; shift 2 ;;
    -b) dir=${2:?}; shift 2 ;;
    -s) skip=${2:?}; shift 2 ;;
    -r) rank=${2:?}; shift 2 ;;
    -V) variants+=("${2:?}"); shift 2 ;;
    -h) gpu_usage "$0"; exit 0 ;;
    --) shift; flags=("$@"); break ;;
    *) die "unknown option $1 (-h for help)" ;;
  esac
done
[[ ${#flags[@]} -gt 0 ]] || flags=(-b 8 -e 8 -n 100 -w 10)
[[ ${#variants[@]} -gt 0 ]] || variants=(default:)
gpu_init probe
[[ -n $np ]] || np=$(gpu_count)
[[ $np -ge 1 ]] || die "no GPU visible"
CMAKE_ARGS="-DBRAID_DEV_PROBE=ON -DBRAID_KERNELS=minimal -DBRAID_BUILD_TESTS=OFF ${CMAKE_ARGS:-}" \
  gpu_build "$dir" "${coll}_perf" braidrun
gpu_use_build "$dir"

failed=0
for v in "${variants[@]}"; do
  name=${v%%:*} settings=${v#*:} envs=()
  [[ -n $settings && $settings != "$v" ]] && IFS=, read -r -a envs <<< "$settings"
  gpu_perf braid "$np" "${coll}_perf" "probe_$name" "${envs[@]}" -- "${flags[@]}" -c 1 || failed=1
  echo "== $name (${settings:-no settings}): ${coll} ${flags[*]}"
  python3 - "$L/probe_$name.txt" "$skip" "$rank" <<'EOF'
import collections, re, statistics, sys
path, skip, only = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = collections.defaultdict(list)
# The ranks' lines may interleave in the launcher's output: records are matched anywhere in the text.
rec = re.compile(r"BRAID_PROBE (\S+) rank (\d+) ns (\d+) cyc ((?:-?\d+ ){11})at (\d+) seq (\d+)")
for m in rec.finditer(open(path, errors="replace").read()):
    kernel, r, ns, at, seq = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(5)), int(m.group(6))
    if only and str(r) != only:
        continue
    cyc = [int(x) for x in m.group(4).split()]
    last = max(cyc)
    if last > 0:
        runs[(kernel, r)].append(([c * ns / last if c >= 0 else None for c in cyc], ns, at, seq))
for (kernel, r), rows in sorted(runs.items()):
    rows.sort(key=lambda row: row[3])
    # outside: from a launch's report to the next launch's first mark on this rank, for consecutive launches of
    # one batch of 32 (the batch's last one prints): a few us when they run back to back, the host's pace otherwise
    outside = [b[2] - (a[2] + a[1]) for a, b in zip(rows, rows[1:])
               if b[3] == a[3] + 1 and a[3] % 32 != 31][skip:]
    rows = rows[skip:] or rows
    cols = []
    for k in range(len(rows[0][0])):
        vals = [row[0][k] for row in rows if row[0][k] is not None]
        if vals:
            cols.append("%d:%.0f" % (k + 1, statistics.median(vals)))
    print("%-10s rank %d, %d launches, ns from entry: %s | end %.0f | outside %s" % (
        kernel, r, len(rows), " ".join(cols), statistics.median(row[1] for row in rows),
        "%.0f" % statistics.median(outside) if outside else "-"))
EOF
done
exit $failed
