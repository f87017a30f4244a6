#!/usr/bin/env python3
"""Summarises the TL lines that a tools/var_p2p_timeline.patch build prints (per p2p CTA of 4 MiB and more: start, end,
thread 0's wait and copy time, the poster's post time; per local-copy CTA: start, end).
  tools/p2p_timeline_summary.py FILE...
Per file and launch (CTAs grouped by start time) and role (send, recv, copy): CTAs, MiB each, duration min / median /
max us, the spread of end times, thread 0's wait and copy (medians, us), and GB/s per CTA during its copy."""
import re
import statistics as st
import sys

XF = re.compile(r"TL xfer cta (\d+) send (\d) bytes (\d+) start (\d+) end (\d+) wait (\d+) copy (\d+) post (\d+) steps (\d+)")
CP = re.compile(r"TL copy cta (\d+) bytes (\d+) start (\d+) end (\d+)")


def launches(rows):
    rows.sort(key=lambda r: r["start"])
    out, cur = [], []
    for r in rows:
        if cur and r["start"] - cur[-1]["start"] > 50000:  # 50 us between CTA starts: the next launch
            out.append(cur)
            cur = []
        cur.append(r)
    if cur:
        out.append(cur)
    return out


def main():
    for path in sys.argv[1:]:
        rows = []
        for line in open(path, errors="replace"):
            m = XF.search(line)
            if m:
                c, s, b, t0, t1, w, cp, p, n = map(int, m.groups())
                rows.append(dict(role="send" if s else "recv", bytes=b, start=t0, end=t1, wait=w, copy=cp, steps=n))
                continue
            m = CP.search(line)
            if m:
                c, b, t0, t1 = map(int, m.groups())
                rows.append(dict(role="copy", bytes=b, start=t0, end=t1, wait=0, copy=t1 - t0, steps=0))
        print(f"== {path}")
        for role in ("send", "recv", "copy"):
            rs = [r for r in rows if r["role"] == role]
            for i, L in enumerate(launches(rs)):
                d = [(r["end"] - r["start"]) / 1e3 for r in L]
                ends = [r["end"] for r in L]
                rate = [r["bytes"] / max(1, r["copy"]) for r in L]
                print(f"  {role} #{i}: {len(L)} CTAs x {st.median([r['bytes'] for r in L]) / 2**20:.1f} MiB, "
                      f"us {min(d):.0f} / {st.median(d):.0f} / {max(d):.0f}, end spread {(max(ends) - min(ends)) / 1e3:.0f}, "
                      f"wait {st.median([r['wait'] for r in L]) / 1e3:.0f} copy {st.median([r['copy'] for r in L]) / 1e3:.0f}, "
                      f"GB/s per CTA {min(rate):.1f}-{max(rate):.1f} (sum {sum(r['bytes'] for r in L) / (max(ends) - min(r['start'] for r in L)):.0f})")


if __name__ == "__main__":
    main()
