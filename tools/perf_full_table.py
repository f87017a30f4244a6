#!/usr/bin/env python3
"""Markdown tables of a full sweep (tools/gpu_next38.sh): per collective and size, the out-of-place time of
NCCL and Braid's tuner, their ratio, Braid with each protocol forced where those runs exist, and both busbw.

  tools/perf_full_table.py DIR > docs/perf/gpu_full_2xh200.md

DIR holds full_<coll>_{nccl,braid,LL,LL128,Simple}.json (-J output of the perf tools). A ratio below 0.9 is
marked with !, below 1.0 with *.
"""
import json
import os
import sys

COLLS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv", "gather",
         "scatter"]
PROTOS = ["LL", "LL128", "Simple"]


def load(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        d = json.load(f)
    rows = {}
    for r in d["results"]:
        rows.setdefault(r["size"], r)  # first row per size (one type, op, root)
    return rows


def human(n):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}B"
    return f"{n} B"


def main():
    d = sys.argv[1]
    for c in COLLS:
        nccl, braid = load(f"{d}/full_{c}_nccl.json"), load(f"{d}/full_{c}_braid.json")
        if not nccl or not braid:
            continue
        protos = [(p, load(f"{d}/full_{c}_{p}.json")) for p in PROTOS]
        protos = [(p, r) for p, r in protos if r]
        print(f"### {c.replace('_', '-')}\n")
        head = "| size | NCCL µs | Braid µs | NCCL ÷ Braid |" + "".join(f" {p} µs |" for p, _ in protos) + \
            " busbw NCCL / Braid GB/s |"
        print(head)
        print("|" + "---|" * (head.count("|") - 1))
        for s in sorted(braid):
            if s == 0 or s not in nccl:
                continue
            tn, tb = nccl[s]["out_of_place"]["time_us"], braid[s]["out_of_place"]["time_us"]
            r = tn / tb
            mark = "!" if r < 0.9 else ("*" if r < 1.0 else "")
            cells = "".join(f" {pr[s]['out_of_place']['time_us']:.2f} |" if s in pr else " — |" for _, pr in protos)
            print(f"| {human(s)} | {tn:.2f} | {tb:.2f} | {r:.2f}{mark} |{cells} "
                  f"{nccl[s]['out_of_place']['busbw']:.1f} / {braid[s]['out_of_place']['busbw']:.1f} |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
