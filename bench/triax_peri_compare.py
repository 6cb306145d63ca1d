#!/usr/bin/env python3
"""demhpc's periodic triaxial test against Yade's (issue 23, acceptance 2; bench/triax_peri.sh).

Usage: triax_peri_compare.py WORK DATADIR OUT.png
Reads WORK/{dense,loose}/series.csv (demhpc, the shear stage's rows) and
DATADIR/yade_triax_{dense,loose}.csv (bench/yade_triax_peri.sh), puts demhpc's rows in Yade's
definitions (eps_a = 1 - Lz/Lz0, eps_v = 1 - V/V0 > 0 in contraction, s1 = -szz, s3 = the mean
lateral, sin phi = (s1 - s3)/(s1 + s3), q = s1 - s3, p = (s1 + 2 s3)/3, solid fraction from the
spheres' volume), summarises both with bench/yade_triax_plot.py's `summarise` (peak, critical
state = mean over eps_a in [0.15, 0.20]) and plots q/p and eps_v against eps_a for both codes.
"""
import csv
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from yade_triax_plot import load, summarise  # noqa: E402

import matplotlib  # noqa: E402
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def solid_volume(cloud):
    return sum(4.0 / 3.0 * math.pi * float(l.split()[3]) ** 3 for l in open(cloud) if not l.startswith("#"))


def demhpc(path, vs, shear_stage):
    rows = [r for r in csv.DictReader(open(path)) if int(r["stage"]) == shear_stage]
    v0 = float(rows[0]["volume_m3"]) / math.exp(float(rows[0]["strain_vol"]))
    lz0 = float(rows[0]["hzz_m"]) / math.exp(float(rows[0]["strain_zz"]))
    out = {k: [] for k in ("eps_a", "eps_v", "sinphi", "q", "p", "phi_solid", "Zm", "unbalanced")}
    for r in rows:
        ea = 1.0 - float(r["hzz_m"]) / lz0
        if ea > 0.2 + 1e-9:
            break
        s1 = -float(r["szz_Pa"])
        s3 = -0.5 * (float(r["sxx_Pa"]) + float(r["syy_Pa"]))
        v = float(r["volume_m3"])
        out["eps_a"].append(ea)
        out["eps_v"].append(1.0 - v / v0)
        out["sinphi"].append((s1 - s3) / (s1 + s3))
        out["q"].append(s1 - s3)
        out["p"].append((s1 + 2.0 * s3) / 3.0)
        out["phi_solid"].append(vs / v)
        out["Zm"].append(float(r["coordination"]))
        out["unbalanced"].append(float(r["unbalanced"]))
    return out


def main():
    work, ddir, png = sys.argv[1], sys.argv[2], sys.argv[3]
    vs = solid_volume(os.path.join(ddir, "triax_cloud_5000.txt"))
    # the shear stage: dense has compact, friction, shear; loose compact, shear
    ours = {"dense": demhpc(os.path.join(work, "dense", "series.csv"), vs, 2),
            "loose": demhpc(os.path.join(work, "loose", "series.csv"), vs, 1)}
    theirs = {n: load(os.path.join(ddir, "yade_triax_%s.csv" % n)) for n in ("dense", "loose")}
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(6.4, 7.2), sharex=True)
    print("| packing | code | solid fraction start → 20 % | peak φ [°] (ε_a) | ε_v at peak | φ at 15–20 % [°] | ε_v at 20 % | coordination start |")
    print("|---|---|---|---|---|---|---|---|")
    for n, c in (("dense", "tab:red"), ("loose", "tab:blue")):
        for code, d, ls in (("demhpc", ours[n], "-"), ("Yade", theirs[n], "--")):
            s = summarise(n, d)
            print("| %s | %s | %.3f → %.3f | %.1f (%.3f) | %.4f | %.1f | %.4f | %.2f |"
                  % (n, code, s["phi_solid_start"], s["phi_solid_end"], s["peak_phi_deg"], s["eps_a_peak"],
                     s["eps_v_peak"], s["cs_phi_deg"], s["eps_v_end"], s["Z_start"]))
            a1.plot(d["eps_a"], [q / p for q, p in zip(d["q"], d["p"])], ls, color=c, label="%s %s" % (code, n))
            a2.plot(d["eps_a"], d["eps_v"], ls, color=c, label="%s %s" % (code, n))
    a1.set_ylabel("q / p")
    a1.set_title("Periodic triaxial, N = 5 000, p0 = 100 kPa, μ = 0.5: demhpc vs Yade")
    a1.legend(loc="lower right", fontsize=8)
    a1.grid(alpha=0.3)
    a2.set_ylabel("volumetric strain ε_v (> 0 contraction)")
    a2.set_xlabel("axial strain ε_a")
    a2.axhline(0, color="k", lw=0.5)
    a2.grid(alpha=0.3)
    a2.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print("wrote", png)


if __name__ == "__main__":
    main()
