"""Side-by-side table of bench/compare_libtorch.sh's runs: per figure, build A, build B, B/A."""
import sys
from pathlib import Path

# The figures compared and the columns that name a row, by the benchmarks' table headers.
FIGURES = ["Tempo s/iter", "eager s/iter", "s/iter", "Tempo ms/token", "grown cache ms/token"]
KEYS = ["algo", "config", "T", "returns", "system", "attention", "batch"]


def tables(text):
    """Rows of every Markdown table in text, as dicts keyed by the header."""
    rows, header = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not all(set(c) <= set("-:") for c in cells):
            rows.append(dict(zip(header, cells)))
    return rows


def main(out, a, b):
    out = Path(out)
    wall = {}
    for line in (out / "wall.txt").read_text().splitlines():
        name, build, seconds = line.split()
        wall[(name, build)] = float(seconds)
    print(f"| command | figure | {a} | {b} | {b}/{a} |")
    print("|---|---|---|---|---|")
    for name in ["rl", "decode"]:
        ra = tables((out / f"{name}.{a}.txt").read_text())
        rb = tables((out / f"{name}.{b}.txt").read_text())
        for x, y in zip(ra, rb):
            key = " ".join(x[k] for k in KEYS if k in x)
            for c in FIGURES:
                if c in x and c in y:
                    va, vb = float(x[c]), float(y[c])
                    print(f"| {name} | {key}: {c} | {va:g} | {vb:g} | {vb / va:.2f} |")
    for name in ["rl", "decode", "main"]:
        va, vb = wall[(name, a)], wall[(name, b)]
        print(f"| {name} | wall s (whole command) | {va:.1f} | {vb:.1f} | {vb / va:.2f} |")


if __name__ == "__main__":
    main(*sys.argv[1:4])
