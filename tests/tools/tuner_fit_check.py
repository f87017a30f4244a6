#!/usr/bin/env python3
"""tools/tuner_fit.py on calibration grids it can check: perf outputs written from known cost rows at 2, 3 and 4
ranks (the ranks in each file's header, as the perf tools print them), fitted together. The fit must give back
each row's base and step, which grids of one rank count cannot tell apart (2 ranks: every collective's steps are
1 or 2), and its pick table must list each rank count. Also: the ranks come from the header, so the same files
read as 2-rank ones (no header) fit worse; and grids of 2 simulated nodes (--nodes 2) of 2 GPUs and of 1 give back
the NetSocket rows' step and per-channel cost, which only the network steps carry.

usage: tuner_fit_check.py TOOLS/tuner_fit.py"""
import os, re, subprocess, sys, tempfile

sys.dont_write_bytecode = True
FIT = sys.argv[1]
sys.path.insert(0, os.path.dirname(os.path.abspath(FIT)))
import tuner_fit  # noqa: E402  (its predict() and shapes are what the files are written from)

TRUE = {"LL": [2.5, 0.8, 0.2, 0.05, 8.0, 200.0], "Simple": [3.0, 4.0, 0.3, 0.02, 20.0, 400.0]}
SIZES = [8 << (4 * k) for k in range(6)]  # 8 B .. 8 MB
CHANNELS = [1, 8, 64]
COLLS = ["all_reduce", "all_gather"]


TRUE_NET = {"LL": [5.0, 9.0, 0.5, 5.0, 2.5, 2.0], "Simple": [5.0, 12.0, 1.0, 0.4, 8.0, 9.0]}


def write_grid(d, ranks, header, nodes=1):
    tuner_fit.RECV_TAIL.update(tuner_fit.read_recv_tail(tuner_fit.DEF))
    tuner_fit.INTRA_STEP.update(tuner_fit.read_intra_step(tuner_fit.DEF))
    rows, channels = (TRUE_NET, [1, 2, 4]) if nodes > 1 else (TRUE, CHANNELS)
    for coll in COLLS:
        for proto, p in rows.items():
            for ch in channels:
                with open(os.path.join(d, "%s_%s_%d.txt" % (coll, proto, ch)), "w") as f:
                    if header:
                        f.write("# Launcher: mpi, %d processes x 1 thread x 1 rank each = %d ranks\n" % (ranks, ranks))
                    for size in SIZES:
                        us = tuner_fit.predict(p, proto, coll, size, ch, ranks, nodes)
                        f.write("%12d %12d float sum -1 %9.3f 0.00 0.00 0 %9.3f 0.00 0.00 0\n" % (size, size // 4, us, us))


def fit(dirs, extra=("--no-anchors",)):
    out = subprocess.run([sys.executable, FIT] + list(extra) + dirs, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("tuner_fit.py failed: " + out.stderr)
    rows = {}
    for m in re.finditer(r"^(LL|Simple)\s+(base=\S+.*?)\s+\(\d+ points, rms error (\d+)%\)", out.stdout, re.M):
        rows[m.group(1)] = (dict(kv.split("=") for kv in m.group(2).split()), int(m.group(3)))
    return rows, out.stdout


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        dirs = []
        for ranks in (2, 3, 4):
            d = os.path.join(tmp, "r%d" % ranks)
            os.mkdir(d)
            write_grid(d, ranks, header=True)
            dirs.append(d)
        rows, text = fit(dirs)
        for proto, p in TRUE.items():
            if proto not in rows:
                failures.append("%s: no fitted row in\n%s" % (proto, text))
                continue
            got, rms = rows[proto]
            for name, want in (("base", p[0]), ("step", p[1])):
                if abs(float(got[name]) / want - 1) > 0.05:
                    failures.append("%s %s: fitted %s, written %g" % (proto, name, got[name], want))
            if rms > 2:
                failures.append("%s: rms error %d%% on exact points" % (proto, rms))
        for ranks in (2, 3, 4):
            if not re.search(r"^all_reduce\s+%d\s" % ranks, text, re.M):
                failures.append("no all_reduce row at %d ranks in the pick table" % ranks)
        # Without the headers every file reads as 2 ranks: the points no longer fit one row.
        flat = os.path.join(tmp, "flat")
        os.mkdir(flat)
        write_grid(flat, 4, header=False)
        rows_flat, text_flat = fit([dirs[0], flat])
        if all(rows_flat.get(p, ({}, 0))[1] <= 2 for p in TRUE):
            failures.append("3- and 4-rank points read as 2-rank ones still fit exactly:\n" + text_flat)
        # 2 nodes of 2 GPUs and of 1: the NetSocket rows.
        net = []
        for ranks in (2, 4):
            d = os.path.join(tmp, "net%d" % ranks)
            os.mkdir(d)
            write_grid(d, ranks, header=True, nodes=2)
            net.append(d)
        rows_net, text_net = fit(net, ("--fix", "base=5", "--nodes", "2"))
        for proto, p in TRUE_NET.items():
            got = rows_net.get(proto, ({}, 99))
            for name, want in (("step", p[1]), ("perCh", p[3])):
                if name not in got[0] or abs(float(got[0][name]) / want - 1) > 0.05:
                    failures.append("NetSocket %s %s: fitted %s, written %g\n%s" % (proto, name, got[0].get(name),
                                                                                    want, text_net))
        if not re.search(r"^all_gather\s+4\s+2\s", text_net, re.M):
            failures.append("no all_gather row of 4 ranks on 2 nodes in the pick table:\n" + text_net)
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print("tuner_fit.py: base and step recovered from grids at 2, 3 and 4 ranks, and the network rows' step and "
          "per-channel cost from 2 simulated nodes")


if __name__ == "__main__":
    main()
