#!/usr/bin/env python3
"""Draw the stress-strain curve(s) of demhpc's strainer.csv as a PNG.

usage: plot_stress_strain.py OUT/strainer.csv [OTHER.csv ...] [-o curve.png]

Stress is plotted in MPa, > 0 in tension, < 0 in compression (CONVENTIONS.md); the right axis
shows the number of damaged (ω > 0) or removed links.
"""
import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    col = lambda k: [float(r[k]) for r in rows]  # noqa: E731
    damaged = [a + b for a, b in zip(col("links_damaged"), col("links_broken"))]
    return col("strain"), col("stress_Pa"), col("stress_lw_Pa"), damaged


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("-o", "--out", default="stress_strain.png")
    a = ap.parse_args()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax2 = ax.twinx()
    for p in a.csv:
        eps, s, lw, broken = read(p)
        (line,) = ax.plot([e * 1e3 for e in eps], [x / 1e6 for x in s], label=f"{p} (ends)")
        ax.plot([e * 1e3 for e in eps], [x / 1e6 for x in lw], "--", color=line.get_color(),
                label=f"{p} (Love–Weber)")
        ax2.plot([e * 1e3 for e in eps], broken, ":", color=line.get_color())
    ax.set_xlabel("axial strain [‰]")
    ax.set_ylabel("axial stress [MPa] (> 0 tension)")
    ax2.set_ylabel("damaged + removed links (dotted)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(a.out)


if __name__ == "__main__":
    main()
