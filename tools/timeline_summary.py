#!/usr/bin/env python3
"""Summarises the TL lines that tools/var_timeline.patch (second form) prints: timeline_summary.py FILE.

Each line is one CTA of a split one-shot launch (channel, role S = sending / R = receiving CTA): its entry time
(%globaltimer before griddepcontrol.wait, ns) and, relative to it, the end of the wait, setup, each step's
wait / workers' end / post, and the end. Per launch and rank it prints (us after that rank's first entry):
when the CTAs entered and got past the wait, the first copy, the first and last data a receiving CTA saw, the
last post of a sending CTA and the end; then, per rank, the gap from a launch's last printed end to the next
launch's first entry. The GPUs' clocks are not aligned (they differed by ~1 ms on 2xH200), so ranks are only
compared through their own timelines. Lines that printf interleaved are skipped."""
import collections
import sys


def parse(path):
    rows = collections.defaultdict(list)
    for line in open(path):
        if not line.startswith('TL '):
            continue
        try:
            d = dict(kv.split('=', 1) for kv in line.split()[1:])
            lst = lambda k: [int(x) for x in d[k].split(',')]
            row = dict(ch=int(d['ch']), role=d['role'], entry=int(d['entry']), start=int(d['start']),
                       setup=int(d['setup']), bar=lst('bar'), post=lst('post'), wait=lst('wait'), end=int(d['end']))
            if row['role'] not in ('S', 'R') or min(len(row['bar']), len(row['post']), len(row['wait'])) != 4:
                continue
            rows[(int(d['L']), int(d['r']))].append(row)
        except (KeyError, ValueError):
            continue
    return rows


def main():
    rows = parse(sys.argv[1])
    launches = sorted(set(k[0] for k in rows))
    for n in launches:
        if (n, 0) not in rows or (n, 1) not in rows:
            continue
        print(f'L={n}')
        for r in (0, 1):
            cta = rows[(n, r)]
            t0 = min(x['entry'] for x in cta)
            at = lambda x, v: (x['entry'] + v - t0) / 1e3
            snd = [x for x in cta if x['role'] == 'S']
            rcv = [x for x in cta if x['role'] == 'R']
            if not snd or not rcv:
                continue
            print(f"   r{r}: entry 0..{max(at(x, 0) for x in cta):.2f} "
                  f"start {min(at(x, x['start']) for x in cta):.2f}..{max(at(x, x['start']) for x in cta):.2f} "
                  f"setup<= {max(at(x, x['setup']) for x in cta):.2f} copy0 {min(at(x, x['wait'][0]) for x in snd):.2f} "
                  f"data0 {min(at(x, x['wait'][0]) for x in rcv):.2f} lastdata {max(at(x, x['wait'][3]) for x in rcv):.2f} "
                  f"lastpost {max(at(x, x['post'][3]) for x in snd):.2f} end {max(at(x, x['end']) for x in cta):.2f}")
    for r in (0, 1):
        for n in launches:
            if (n, r) in rows and (n + 1, r) in rows:
                end = max(x['entry'] + x['end'] for x in rows[(n, r)])
                nxt = rows[(n + 1, r)]
                print(f"r{r} L{n}->{n + 1}: next entry {(min(x['entry'] for x in nxt) - end) / 1e3:+.2f} .. "
                      f"{(max(x['entry'] for x in nxt) - end) / 1e3:+.2f} us after the last printed end")


if __name__ == '__main__':
    main()
