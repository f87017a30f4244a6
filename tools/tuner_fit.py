#!/usr/bin/env python3
"""Fits the tuner's P2pNvlink rows (src/tuner/tuner_model.def) to a calibration grid measured by
tools/gpu/calibrate.sh and shows what the fitted model would choose against the measured best.

usage: tools/tuner_fit.py DIR [--fix NAME=VALUE ...] [--model FILE]

DIR holds {coll}_{LL|LL128|Simple}_{channels}.txt perf outputs (tools/gpu/calibrate.sh's calibrate.tgz,
unpacked); coll all_reduce_oneshot is all-reduce with NCCL_ALGO=allreduce:OneShot. --fix holds a parameter
of NAMES at VALUE, e.g. --fix perCh=0.01 where two ranks cannot separate it from the rest (a grid of a few
channel counts). --model reads the receive-tail rows from FILE instead of src/tuner/tuner_model.def.

The model is the one in the tuner's predictUs for 2 ranks: base + perChannel*(n-1) + steps*step +
chunks*chunkUs + W/(n*bwPerCh) + W/cap (+ the receive tail on Simple), W the bytes on the busiest link,
chunks = ceil(W/n / chunkBytes).
Pure Python (no numpy): Nelder-Mead on log-parameters, least squares of log(predicted/measured)."""
import glob, math, os, re, sys

CHUNK = {"LL": 32768, "LL128": 122880, "Simple": 512 * 1024}
SHAPE = {  # coll: (wire bytes factor for 2 ranks, steps)
    "all_reduce": (1.0, 2), "all_gather": (0.5, 1), "reduce_scatter": (0.5, 1),
    "broadcast": (1.0, 1), "reduce": (1.0, 1),
    "all_reduce_oneshot": (1.0, 1)}  # the 2-rank one-shot: the whole buffer to the peer in one hop
NAMES = ["base", "step", "chunkUs", "perCh", "bwPerCh", "cap"]
FIX = {}  # NAMES index -> value held fixed (--fix)


def params(logp):
    return [FIX.get(i, math.exp(x)) for i, x in enumerate(logp)]


def load(d):
    data = []  # (coll, proto, ch, bytes, us)
    for f in glob.glob(os.path.join(d, "*_*_*.txt")):
        m = re.match(r"(.+)_(LL128|LL|Simple)_(\d+)\.txt$", os.path.basename(f))
        if not m:
            continue
        coll, proto, ch = m.group(1), m.group(2), int(m.group(3))
        for line in open(f):
            t = line.split()
            if line.startswith("#") or len(t) < 9 or not t[0].isdigit() or int(t[0]) == 0:
                continue
            data.append((coll, proto, ch, int(t[0]), float(t[5])))
    return data


# Large-size anchors measured on 2xH200 (NV18) beside the grid, which stops at 32 MB: ring all-reduce busbw
# 313.0 / 351.8 GB/s at 2 GB and 312.7 / 349.1 at 512 MB on 32 / 64 channels.
# Weighted so the few large points count as much as the grid's many small ones.
ANCHORS = [("all_reduce", "Simple", ch, size, size / bw / 1e3)
           for ch, size, bw in ((32, 1 << 31, 313.0), (64, 1 << 31, 351.8), (32, 1 << 29, 312.7), (64, 1 << 29, 349.1))]
ANCHOR_WEIGHT = 20


# tuner_model.def's BRAID_TUNER_RECV_TAIL rows on NVLink (ctaGBs, capUs), read from it and held fixed: a fit of the
# Simple row would otherwise take the tail into base and step.
DEF = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "tuner",
                                   "tuner_model.def"))
RECV_TAIL = {}


def read_recv_tail(path):
    if not os.path.exists(path):
        sys.exit("tuner_fit.py: no tuner model at %s (--model FILE)" % path)
    return {m.group(1): (float(m.group(2)), float(m.group(3))) for m in re.finditer(
        r"^BRAID_TUNER_RECV_TAIL\(P2pNvlink, (\w+), ([\d.]+), ([\d.]+)\)", open(path).read(), re.M)}


TAILED = set(SHAPE)  # every collective here is a ring one (or the one-shot): predictUs adds the tail to all


def predict(p, proto, coll, size, ch):
    base, step, chunk_us, per_ch, bw, cap = p
    factor, steps = SHAPE[coll]
    w = factor * size
    chunks = max(1, math.ceil(w / ch / CHUNK[proto]))
    tail = 0.0
    if coll in TAILED and proto in RECV_TAIL:
        cta_gbs, cap_us = RECV_TAIL[proto]
        tail = min(cap_us, w / ch / cta_gbs / 1e3)
    return base + per_ch * (ch - 1) + steps * step + chunks * chunk_us + w / (ch * bw) / 1e3 + w / cap / 1e3 + tail


def loss(logp, pts, proto, anchors=True):
    p = params(logp)
    err = sum(math.log(predict(p, proto, c, s, ch) / us) ** 2 for c, _, ch, s, us in pts)
    if anchors and proto == "Simple":
        err += ANCHOR_WEIGHT * sum(math.log(predict(p, proto, c, s, ch) / us) ** 2 for c, _, ch, s, us in ANCHORS)
    return err


def nelder_mead(f, x0, iters=4000):
    n = len(x0)
    simplex = [x0[:]] + [[x + (0.5 if i == j else 0) for j, x in enumerate(x0)] for i in range(n)]
    vals = [f(x) for x in simplex]
    for _ in range(iters):
        order = sorted(range(n + 1), key=lambda i: vals[i])
        simplex, vals = [simplex[i] for i in order], [vals[i] for i in order]
        cen = [sum(simplex[i][j] for i in range(n)) / n for j in range(n)]
        refl = [cen[j] + (cen[j] - simplex[-1][j]) for j in range(n)]
        fr = f(refl)
        if fr < vals[0]:
            exp_ = [cen[j] + 2 * (cen[j] - simplex[-1][j]) for j in range(n)]
            fe = f(exp_)
            simplex[-1], vals[-1] = (exp_, fe) if fe < fr else (refl, fr)
        elif fr < vals[-2]:
            simplex[-1], vals[-1] = refl, fr
        else:
            con = [cen[j] + 0.5 * (simplex[-1][j] - cen[j]) for j in range(n)]
            fc = f(con)
            if fc < vals[-1]:
                simplex[-1], vals[-1] = con, fc
            else:
                for i in range(1, n + 1):
                    simplex[i] = [simplex[0][j] + 0.5 * (simplex[i][j] - simplex[0][j]) for j in range(n)]
                    vals[i] = f(simplex[i])
    return simplex[0], vals[0]


def main():
    usage = "usage: tuner_fit.py DIR [--fix NAME=VALUE ...] [--model FILE], NAME one of " + " ".join(NAMES)
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) >= 2 else 2)
    data = load(sys.argv[1])
    if not data:
        sys.exit("tuner_fit.py: no {coll}_{proto}_{channels}.txt perf outputs in %s" % sys.argv[1])
    model = DEF
    args = sys.argv[2:]
    while args:
        if args[0] == "--model" and len(args) >= 2:
            model = args[1]
        elif args[0] != "--fix" or len(args) < 2 or "=" not in args[1] or args[1].split("=")[0] not in NAMES:
            sys.exit(usage)
        else:
            name, value = args[1].split("=")
            FIX[NAMES.index(name)] = float(value)
        args = args[2:]
    RECV_TAIL.update(read_recv_tail(model))
    fitted = {}
    for proto, x0 in (("LL", [5.0, 0.5, 0.2, 0.02, 5.0, 400.0]), ("LL128", [5.0, 1.5, 0.3, 0.02, 15.0, 400.0]),
                      ("Simple", [5.0, 3.0, 0.3, 0.02, 20.0, 400.0])):
        pts = [d for d in data if d[1] == proto]
        if not pts:  # a grid of one protocol (calibrate.sh -p LL128)
            continue
        best, val = nelder_mead(lambda lp: loss(lp, pts, proto), [math.log(v) for v in x0])
        for _ in range(3):  # restarts from the optimum
            best, val = nelder_mead(lambda lp: loss(lp, pts, proto), best)
        fitted[proto] = params(best)
        rms = math.exp(math.sqrt(loss(best, pts, proto, False) / len(pts))) - 1
        print("%-6s %s  (%d points, rms error %.0f%%)" % (
            proto, " ".join("%s=%.3g" % kv for kv in zip(NAMES, fitted[proto])), len(pts), 100 * rms))
    # What the model would pick among the measured (protocol, channels), against the measured best.
    print("\ncoll           bytes     best(meas)          model's pick        regret")
    worst = 1.0
    for coll in SHAPE:
        for size in sorted({d[3] for d in data if d[0] == coll}):
            opts = {(d[1], d[2]): d[4] for d in data if d[0] == coll and d[3] == size and d[1] in fitted}
            if not opts:
                continue
            best = min(opts, key=opts.get)
            pick = min(opts, key=lambda k: predict(fitted[k[0]], k[0], coll, size, k[1]))
            r = opts[pick] / opts[best]
            worst = max(worst, r)
            print("%-14s %9d %-7s %2d %7.2f  %-7s %2d %7.2f  %.2f" % (
                coll, size, best[0], best[1], opts[best], pick[0], pick[1], opts[pick], r))
    print("worst regret %.2f" % worst)
    for c, proto, ch, size, us in ANCHORS if "Simple" in fitted else []:
        print("anchor %s %s %d ch %d B: measured %.0f us, model %.0f us" % (
            c, proto, ch, size, us, predict(fitted[proto], proto, c, size, ch)))


if __name__ == "__main__":
    main()
