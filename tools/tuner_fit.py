#!/usr/bin/env python3
"""Fits the tuner's P2pNvlink rows (src/tuner/tuner_model.def), or with --nodes its NetSocket rows, to a
calibration grid measured by tools/gpu/calibrate.sh and shows what the fitted model would choose against the
measured best.

usage: tools/tuner_fit.py [--nodes K] DIR [DIR ...] [--fix NAME=VALUE ...] [--model FILE] [--no-anchors]

Each DIR holds {coll}_{LL|LL128|Simple}_{channels}.txt perf outputs (tools/gpu/calibrate.sh's calibrate.tgz,
unpacked), of any rank count: a file's ranks come from its header ("... = N ranks"; 2 where it has none), so grids
taken at 2, 3 and 4 ranks (calibrate.sh -n 2, -n 3, -n 4, one DIR each) fit one row together. Coll
all_reduce_oneshot is all-reduce with NCCL_ALGO=allreduce:OneShot, which the row prices at 2 ranks only (more
ranks run the one-shot over peers by a size rule: its points are left out). --fix holds a parameter of NAMES at
VALUE, e.g. --fix perCh=0.01 where two ranks cannot separate it from the rest (a grid of a few channel counts).
--model reads the receive-tail rows from FILE instead of src/tuner/tuner_model.def. --no-anchors leaves out the
large-size points measured on 2xH200 that a Simple fit otherwise counts (a grid from another machine).

The model is the one in the tuner's predictUs (shapeOf's ring shapes, r ranks): base + perChannel*(n-1) +
steps*step + chunks*chunkUs + W/(n*bwPerCh) + W/cap (+ the receive tail), W the bytes on the busiest link, n the
channels, chunks = ceil(W/n / chunkBytes); all-reduce W = 2(r-1)/r of the buffer in 2(r-1) steps, all-gather and
reduce-scatter (r-1)/r in r-1, broadcast and reduce the buffer in r-1.

--nodes K: the DIRs after it were measured as K simulated nodes (GPU_NODES=K calibrate.sh: NCCL_HOSTID per node),
and the fit is of the NetSocket rows, as shapeOf's netRingShape prices a ring on the network: of its steps, those
that cross a node boundary on the slowest rank's way (K per lap of up to r steps) at step, each channel beyond the
first that carries data (64-byte shares of the op) adding perCh at each; the others at P2pNvlink's stepUs; one GPU
per node (r <= K) doubles the proxy's bytes and channel costs and lengthens a step by NET_LATENCY_LOAD; broadcast
and reduce, which pipeline from call to call, one network step. No receive tail, no anchors.
Pure Python (no numpy): Nelder-Mead on log-parameters, least squares of log(predicted/measured)."""
import glob, math, os, re, sys

CHUNK = {"LL": 32768, "LL128": 122880, "Simple": 512 * 1024}
COLLS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_reduce_oneshot")


def shape(coll, r):
    """(wire bytes factor, steps) of a ring collective on r ranks, as the tuner's shapeOf; None where not modelled."""
    frac = (r - 1) / r
    if coll == "all_reduce":
        return 2 * frac, 2 * (r - 1)
    if coll in ("all_gather", "reduce_scatter"):
        return frac, r - 1
    if coll in ("broadcast", "reduce"):
        return 1.0, r - 1
    if coll == "all_reduce_oneshot" and r == 2:  # the 2-rank one-shot: the whole buffer to the peer in one hop
        return 1.0, 1
    return None


def net_active_channels(coll, size, r, ch):
    """Channels that carry data, as the tuner's activeChannels: channelRange cuts an op into shares of
    ceil(bytes / ch) rounded up to 64 bytes, so a small op leaves the last channels empty (an all-gather's or
    reduce-scatter's op is one rank's part)."""
    part = size / r if coll in ("all_gather", "reduce_scatter") else size
    share = math.ceil(math.ceil(part / ch) / 64.0) * 64.0
    return max(1, min(ch, math.ceil(part / share))) if share > 0 else 1


def net_shape(coll, r, nodes, steps):
    """(steps across nodes, steps inside them, proxy load) of a ring on the network, as the tuner's shapeOf. The
    ring crosses each node's boundary once, so the slowest rank's data crosses the network nodes times in each
    lap of up to r steps it makes. Broadcast and reduce pipeline from one call to the next, so a call costs what
    one rank's busiest link does: one network step. With one GPU per node each rank's proxy carries both ring
    directions (load 2)."""
    load = 2 if r <= nodes else 1
    if coll in ("broadcast", "reduce"):
        return 1, 0, 1
    net = min(steps, nodes * math.ceil(steps / r))
    return net, steps - net, load


NAMES = ["base", "step", "chunkUs", "perCh", "bwPerCh", "cap"]
FIX = {}  # NAMES index -> value held fixed (--fix)


def params(logp):
    return [FIX.get(i, math.exp(min(max(x, -40.0), 40.0))) for i, x in enumerate(logp)]


def load(d, nodes=1):
    data = []  # (coll, proto, ch, bytes, us, ranks, nodes)
    for f in glob.glob(os.path.join(d, "*_*_*.txt")):
        m = re.match(r"(.+)_(LL128|LL|Simple)_(\d+)\.txt$", os.path.basename(f))
        if not m or m.group(1) not in COLLS:
            continue
        coll, proto, ch = m.group(1), m.group(2), int(m.group(3))
        lines = open(f).read().splitlines()
        ranks = 2
        for line in lines:
            h = re.match(r"#.*= (\d+) ranks\s*$", line)
            if h:
                ranks = int(h.group(1))
        if shape(coll, ranks) is None:
            continue
        for line in lines:
            t = line.split()
            if line.startswith("#") or len(t) < 9 or not t[0].isdigit() or int(t[0]) == 0:
                continue
            data.append((coll, proto, ch, int(t[0]), float(t[5]), ranks, nodes))
    return data


# Large-size anchors measured on 2xH200 (NV18) beside the grid, which stops at 32 MB: ring all-reduce busbw
# 313.0 / 351.8 GB/s at 2 GB and 312.7 / 349.1 at 512 MB on 32 / 64 channels.
# Weighted so the few large points count as much as the grid's many small ones.
ANCHORS = [("all_reduce", "Simple", ch, size, size / bw / 1e3, 2, 1)
           for ch, size, bw in ((32, 1 << 31, 313.0), (64, 1 << 31, 351.8), (32, 1 << 29, 312.7), (64, 1 << 29, 349.1))]
ANCHOR_WEIGHT = 20
ANCHORED = [True]  # --no-anchors: a grid measured elsewhere than 2xH200
NODES = [1]  # --nodes K: the DIRs after it were measured as K simulated nodes (GPU_NODES=K): the NetSocket row


# tuner_model.def's BRAID_TUNER_RECV_TAIL rows on NVLink (ctaGBs, capUs), read from it and held fixed: a fit of the
# Simple row would otherwise take the tail into base and step.
DEF = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "tuner",
                                   "tuner_model.def"))
RECV_TAIL = {}
NET_LATENCY_LOAD = 1.25  # one GPU per node: a network step's latency, the tuner's kNetSoloLatencyLoad
INTRA_STEP = {}  # P2pNvlink's stepUs per protocol: a ring step inside a node (--nodes)


def read_intra_step(path):
    if not os.path.exists(path):
        sys.exit("tuner_fit.py: no tuner model at %s (--model FILE)" % path)
    return {m.group(1): float(m.group(2)) for m in re.finditer(
        r"^BRAID_TUNER_ROW\(P2pNvlink, (\w+), [\d.]+, ([\d.]+),", open(path).read(), re.M)}


def read_recv_tail(path):
    if not os.path.exists(path):
        sys.exit("tuner_fit.py: no tuner model at %s (--model FILE)" % path)
    return {m.group(1): (float(m.group(2)), float(m.group(3))) for m in re.finditer(
        r"^BRAID_TUNER_RECV_TAIL\(P2pNvlink, (\w+), ([\d.]+), ([\d.]+)\)", open(path).read(), re.M)}


def predict(p, proto, coll, size, ch, ranks=2, nodes=1):
    # one node: every collective here is a ring one (or the one-shot), and predictUs adds the receive tail to all;
    # several nodes: the NetSocket row, whose ring steps that cross a node boundary cost step and each channel
    # beyond the first per_ch, the others an NVLink step (INTRA_STEP)
    base, step, chunk_us, per_ch, bw, cap = p
    factor, steps = shape(coll, ranks)
    w = factor * size
    chunks = max(1, math.ceil(w / ch / CHUNK[proto]))
    if nodes > 1:
        net, intra, load = net_shape(coll, ranks, nodes, steps)
        act = net_active_channels(coll, size, ranks, ch)
        lat = NET_LATENCY_LOAD if load > 1 else 1.0
        return (base + lat * net * step + load * net * per_ch * (act - 1) + intra * INTRA_STEP[proto] +
                chunks * chunk_us + load * (w / (act * bw) / 1e3 + w / cap / 1e3))
    tail = 0.0
    if proto in RECV_TAIL:
        cta_gbs, cap_us = RECV_TAIL[proto]
        tail = min(cap_us, w / ch / cta_gbs / 1e3)
    return base + per_ch * (ch - 1) + steps * step + chunks * chunk_us + w / (ch * bw) / 1e3 + w / cap / 1e3 + tail


def loss(logp, pts, proto, anchors=True):
    p = params(logp)
    err = sum(math.log(predict(p, proto, c, s, ch, r, k) / us) ** 2 for c, _, ch, s, us, r, k in pts)
    if anchors and proto == "Simple" and ANCHORED[0]:
        err += ANCHOR_WEIGHT * sum(math.log(predict(p, proto, c, s, ch, r, k) / us) ** 2
                                   for c, _, ch, s, us, r, k in ANCHORS)
    return err


def nelder_mead(f, x0, iters=4000, xtol=1e-7):
    """Minimises f from x0; stops after iters steps or once the simplex has shrunk within xtol (log-parameters:
    relative 1e-7) with its values equal to 1e-12, where further steps no longer move the fit."""
    n = len(x0)
    simplex = [x0[:]] + [[x + (0.5 if i == j else 0) for j, x in enumerate(x0)] for i in range(n)]
    vals = [f(x) for x in simplex]
    for _ in range(iters):
        order = sorted(range(n + 1), key=lambda i: vals[i])
        simplex, vals = [simplex[i] for i in order], [vals[i] for i in order]
        spread = max(abs(simplex[i][j] - simplex[0][j]) for i in range(1, n + 1) for j in range(n))
        if spread < xtol and vals[-1] - vals[0] <= 1e-12 * (1.0 + abs(vals[0])):
            break
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
    usage = ("usage: tuner_fit.py [--nodes K] DIR [DIR ...] [--fix NAME=VALUE ...] [--model FILE] [--no-anchors], "
             "NAME one of " +
             " ".join(NAMES))
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) >= 2 else 2)
    model = DEF
    dirs = []
    args = sys.argv[1:]
    while args:
        if args[0] == "--model" and len(args) >= 2:
            model = args[1]
        elif args[0] == "--no-anchors":
            ANCHORED[0] = False
            args = args[1:]
            continue
        elif args[0] == "--nodes":
            if len(args) < 2 or not args[1].isdigit() or int(args[1]) < 1:
                sys.exit(usage)
            NODES[0] = int(args[1])
        elif args[0] == "--fix":
            if len(args) < 2 or "=" not in args[1] or args[1].split("=")[0] not in NAMES:
                sys.exit(usage)
            name, value = args[1].split("=")
            FIX[NAMES.index(name)] = float(value)
        elif args[0].startswith("-"):
            sys.exit(usage)
        else:
            dirs.append((args[0], NODES[0]))
            args = args[1:]
            continue
        args = args[2:]
    data = [d for path, nodes in dirs for d in load(path, nodes)]
    if not data:
        sys.exit("tuner_fit.py: no {coll}_{proto}_{channels}.txt perf outputs in %s" % " ".join(p for p, _ in dirs))
    if len({d[6] > 1 for d in data}) > 1:
        sys.exit("tuner_fit.py: grids of one node and of several (--nodes) fit different rows: fit them apart")
    if data[0][6] > 1:
        ANCHORED[0] = False  # the anchors are NVLink's
        print("NetSocket rows: steps across nodes at step + perCh per channel beyond the first, the rest at "
              "P2pNvlink's stepUs")
    RECV_TAIL.update(read_recv_tail(model))
    INTRA_STEP.update(read_intra_step(model))
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
    print("\ncoll           ranks nodes     bytes     best(meas)          model's pick        regret")
    worst = 1.0
    for coll in COLLS:
        for ranks, nodes in sorted({(d[5], d[6]) for d in data if d[0] == coll}):
            here = [d for d in data if d[0] == coll and d[5] == ranks and d[6] == nodes and d[1] in fitted]
            for size in sorted({d[3] for d in here}):
                opts = {(d[1], d[2]): d[4] for d in here if d[3] == size}
                best = min(opts, key=opts.get)
                pick = min(opts, key=lambda k: (predict(fitted[k[0]], k[0], coll, size, k[1], ranks, nodes), k[1]))
                r = opts[pick] / opts[best]
                worst = max(worst, r)
                print("%-14s %5d %5d %9d %-7s %2d %7.2f  %-7s %2d %7.2f  %.2f" % (
                    coll, ranks, nodes, size, best[0], best[1], opts[best], pick[0], pick[1], opts[pick], r))
    print("worst regret %.2f" % worst)
    for c, proto, ch, size, us, r, k in ANCHORS if "Simple" in fitted and ANCHORED[0] else []:
        print("anchor %s %s %d ch %d B: measured %.0f us, model %.0f us" % (
            c, proto, ch, size, us, predict(fitted[proto], proto, c, size, ch, r, k)))


if __name__ == "__main__":
    main()
