#!/usr/bin/env python3
"""Summarise an ncu source page exported per SASS instruction.

    ncu -i REPORT.ncu-rep --page source --csv --print-source sass > K.csv
    python3 tools/ncu_sass_summary.py K.csv [TOP]

Prints the kernel's warp-stall samples by reason, the TOP (default 14) instructions with the
most samples (with the reasons that make up at least 15% of each), and the warp instructions
executed per HGMMA (how much issue work surrounds each tensor-core instruction).
"""
import csv
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = list(csv.reader(open(sys.argv[1])))
    hdr, data = rows[1], rows[2:]
    idx = {h: i for i, h in enumerate(hdr)}
    samples = "Warp Stall Sampling (All Samples)"
    num = lambda r, k: int(r[idx[k]] or 0)
    tot = sum(num(r, samples) for r in data) or 1
    stalls = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    agg = {s: sum(num(r, s) for r in data) for s in stalls}
    print(sys.argv[1], "samples", tot, "instructions", len(data))
    print("by reason:", ", ".join("%s %.1f%%" % (s[6:], 100 * v / tot)
                                  for s, v in sorted(agg.items(), key=lambda x: -x[1]) if v / tot > 0.01))
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 14
    for r in sorted(data, key=lambda r: -num(r, samples))[:top]:
        n = num(r, samples)
        why = ", ".join("%s %d" % (s[6:], num(r, s)) for s in stalls if num(r, s) > n * 0.15)
        print("%5.1f%% %-60s executed %s [%s]" % (100 * n / tot, r[idx["Source"]].strip()[:60],
                                                  r[idx["Instructions Executed"]], why))
    ex = "Instructions Executed"
    hg = sum(num(r, ex) for r in data if "HGMMA" in r[idx["Source"]])
    if hg:
        print("warp instructions per HGMMA: %.1f" % (sum(num(r, ex) for r in data) / hg))


if __name__ == "__main__":
    main()
