#!/usr/bin/env python3
"""Plots memory timelines (the CSV files of --memory-timeline) on one axis, as SVG.

usage: plot_timelines.py OUT.svg LABEL=FILE.csv [LABEL=FILE.csv ...]  (the last = splits)

Each CSV's device bytes are drawn against the fraction of its run (runs of different lengths line
up), with at most 1500 points per line (the maximum of each bucket, so no peak is lost).
"""
import csv
import sys

COLORS = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd"]
W, H, LEFT, BOTTOM = 800, 320, 70, 280


def series(path, points=1500):
    with open(path, newline="") as f:
        values = [float(r["device_bytes"]) / 2**20 for r in csv.DictReader(f)]
    if not values:
        raise SystemExit(f"{path}: no rows")
    step = max(1, len(values) // points)
    return [max(values[k:k + step]) for k in range(0, len(values), step)]


def main(argv):
    if len(argv) < 3 or any("=" not in a for a in argv[2:]):
        raise SystemExit(__doc__)
    lines = [(a.rsplit("=", 1)[0], series(a.rsplit("=", 1)[1])) for a in argv[2:]]
    top = max(max(v) for _, v in lines) * 1.05
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{W}' height='{H + 20}' "
           "font-family='sans-serif' font-size='11'>",
           "<rect width='100%' height='100%' fill='white'/>",
           f"<line x1='{LEFT}' y1='{BOTTOM}' x2='{W - 10}' y2='{BOTTOM}' stroke='black'/>",
           f"<line x1='{LEFT}' y1='10' x2='{LEFT}' y2='{BOTTOM}' stroke='black'/>",
           f"<text x='4' y='16'>{top:.0f} MiB</text><text x='4' y='{BOTTOM}'>0</text>",
           f"<text x='{LEFT}' y='{BOTTOM + 20}'>run (statements executed, as a fraction)</text>"]
    for k, (label, v) in enumerate(lines):
        color = COLORS[k % len(COLORS)]
        pts = " ".join(f"{LEFT + (W - 10 - LEFT) * i / max(1, len(v) - 1):.1f},"
                       f"{BOTTOM - (BOTTOM - 10) * y / top:.1f}" for i, y in enumerate(v))
        out.append(f"<polyline fill='none' stroke='{color}' points='{pts}'/>")
        out.append(f"<text x='{W - 260}' y='{24 + 14 * k}' fill='{color}'>{label} "
                   f"(peak {max(v):.1f} MiB)</text>")
    out.append("</svg>")
    with open(argv[1], "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main(sys.argv)
