#!/usr/bin/env python3
"""Per-size medians of repeated perf-tool runs: perf_medians.py DIR COLL LIB... reads DIR/COLL_LIB_<round>.txt
(the perf tools' output, one file per round) and prints, per size, each LIB's median out-of-place time in us
(min-max over the rounds) and, when the first LIB is nccl, each other LIB's ratio of medians (NCCL / LIB).
--in-place (first argument): the in-place column instead."""
import glob
import statistics
import sys


COL = 5  # the out-of-place time; --in-place: 9


def times(path):
    out = {}
    for line in open(path):
        f = line.split()
        if line.startswith('#') or len(f) <= max(8, COL) or not f[0].isdigit():
            continue
        out[int(f[0])] = float(f[COL])
    return out


def main():
    global COL
    args = sys.argv[1:]
    if args and args[0] == '--in-place':
        COL = 9
        args = args[1:]
    d, coll, libs = args[0], args[1], args[2:]
    runs = {lib: [times(p) for p in sorted(glob.glob(f'{d}/{coll}_{lib}_[0-9]*.txt'))] for lib in libs}
    sizes = sorted(set().union(*[r.keys() for rs in runs.values() for r in rs]))
    print(f'| {coll} bytes | ' + ' | '.join(f'{lib} median (min-max) us' for lib in libs) +
          (' | ' + ' | '.join(f'nccl / {lib}' for lib in libs[1:]) if libs[0] == 'nccl' else '') + ' |')
    print('|---' * (len(libs) + (len(libs) - 1 if libs[0] == 'nccl' else 0) + 1) + '|')
    for s in sizes:
        if s == 0:
            continue
        med = {}
        cells = []
        for lib in libs:
            v = [r[s] for r in runs[lib] if s in r]
            med[lib] = statistics.median(v)
            cells.append(f'{med[lib]:.2f} ({min(v):.2f}-{max(v):.2f})')
        if libs[0] == 'nccl':
            cells += [f'{med["nccl"] / med[lib]:.2f}' for lib in libs[1:]]
        print(f'| {s} | ' + ' | '.join(cells) + ' |')


main()
