#!/usr/bin/env python3
"""Plot a periodic-cell test from demhpc's series.csv (issue 23; scenes/triax_peri.ron).

Usage: plot_triax.py OUT/series.csv [more series.csv] [-o curve.png] [--stage K]

For each file, the rows of servo stage K (default: the last stage present): q/p (contact
stress, q = σ1 − σ3, p = −tr σ/3, compression positive) and the volumetric strain
ε_v = −ln det F (> 0 contraction) against the axial strain ε_a = −ln F_zz, both counted from
the stage's strain reference (`reset_strain`). For a simple-shear run (`shear_rate`), plot
sxz_Pa / p_Pa against the row index instead: use --shear.
"""
import argparse
import csv

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(path, stage):
    rs = list(csv.DictReader(open(path)))
    if stage is None:
        stage = max(int(r["stage"]) for r in rs)
    return [r for r in rs if int(r["stage"]) == stage]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("series", nargs="+")
    ap.add_argument("-o", "--out", default="triax.png")
    ap.add_argument("--stage", type=int, default=None)
    ap.add_argument("--shear", action="store_true", help="simple shear: τ/p against γ")
    a = ap.parse_args()
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(6.4, 7.2), sharex=True)
    for path in a.series:
        rs = rows(path, a.stage)
        f = lambda k: [float(r[k]) for r in rs]  # noqa: E731
        p = f("p_Pa")
        if a.shear:
            t = f("time_s")
            a1.plot([x - t[0] for x in t], [-s / pp for s, pp in zip(f("sxz_Pa"), p)], label=path)
            a2.plot([x - t[0] for x in t], p, label=path)
            a1.set_ylabel("τ_xz / p")
            a2.set_ylabel("p [Pa]")
            a2.set_xlabel("time in the stage [s] (γ = γ̇ t)")
        else:
            ea = [-s for s in f("strain_zz")]
            a1.plot(ea, [q / pp for q, pp in zip(f("q_Pa"), p)], label=path)
            a2.plot(ea, [-v for v in f("strain_vol")], label=path)
            a1.set_ylabel("q / p")
            a2.set_ylabel("ε_v = −ln det F (> 0 contraction)")
            a2.set_xlabel("ε_a = −ln F_zz")
    for ax in (a1, a2):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
