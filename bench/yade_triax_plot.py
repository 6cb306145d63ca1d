#!/usr/bin/env python3
"""Plot and summarise the Yade periodic triaxial reference (bench/yade_triax_peri.sh).

Usage: yade_triax_plot.py DATADIR OUT.png
Reads DATADIR/yade_triax_{dense,loose}.csv; writes OUT.png (q/p and eps_v vs eps_a, both packings)
and prints peak / critical-state friction angles and volumetric strains.
Critical state = mean over eps_a in [0.15, 0.20] (sin phi = (s1 - s3)/(s1 + s3), s3 = mean lateral).
"""
import csv
import math
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    with open(path) as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
    return {k: [float(r[k]) for r in rows] for k in rows[0]}


def deg(s):
    return math.degrees(math.asin(s))


def summarise(name, d):
    ea, ev, sp = d["eps_a"], d["eps_v"], d["sinphi"]
    qp = [q / p for q, p in zip(d["q"], d["p"])]
    k = max(range(len(sp)), key=lambda i: sp[i])
    cs = [i for i in range(len(ea)) if 0.15 <= ea[i] <= 0.20 + 1e-9]
    sp_cs = sum(sp[i] for i in cs) / len(cs)
    qp_cs = sum(qp[i] for i in cs) / len(cs)
    # max dilatancy rate d(-eps_v)/d(eps_a) from a 5-row centred difference
    rates = [-(ev[i + 2] - ev[i - 2]) / (ea[i + 2] - ea[i - 2]) for i in range(2, len(ea) - 2)]
    out = {
        "name": name, "peak_sinphi": sp[k], "peak_phi_deg": deg(sp[k]), "eps_a_peak": ea[k], "eps_v_peak": ev[k],
        "peak_q_over_p": qp[k], "cs_sinphi": sp_cs, "cs_phi_deg": deg(sp_cs), "cs_q_over_p": qp_cs,
        "eps_v_end": ev[-1], "eps_a_end": ea[-1], "eps_v_min": min(ev), "eps_v_max": max(ev),
        "phi_solid_start": d["phi_solid"][0], "phi_solid_end": d["phi_solid"][-1],
        "Z_start": d["Zm"][0], "Z_end": d["Zm"][-1], "max_dilatancy_rate": max(rates),
        "p_mean_cs": sum(d["p"][i] for i in cs) / len(cs),
        "unb_median_cs": sorted(d["unbalanced"][i] for i in cs)[len(cs) // 2],
    }
    return out


def main():
    ddir, png = sys.argv[1], sys.argv[2]
    data = {n: load("%s/yade_triax_%s.csv" % (ddir, n)) for n in ("dense", "loose")}
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(6.4, 7.2), sharex=True)
    for n, c in (("dense", "tab:red"), ("loose", "tab:blue")):
        d = data[n]
        s = summarise(n, d)
        print("%s: peak phi %.2f deg (sin %.4f, q/p %.3f) at eps_a %.4f, eps_v there %.5f; critical (eps_a 0.15-0.20) "
              "phi %.2f deg (sin %.4f, q/p %.3f); eps_v at %.3f: %.5f (min %.5f, max %.5f); solid fraction %.4f -> %.4f; "
              "Zm %.2f -> %.2f; max -d eps_v/d eps_a %.3f; p_cs %.4g Pa; median unbalanced (cs) %.3g"
              % (n, s["peak_phi_deg"], s["peak_sinphi"], s["peak_q_over_p"], s["eps_a_peak"], s["eps_v_peak"],
                 s["cs_phi_deg"], s["cs_sinphi"], s["cs_q_over_p"], s["eps_a_end"], s["eps_v_end"], s["eps_v_min"],
                 s["eps_v_max"], s["phi_solid_start"], s["phi_solid_end"], s["Z_start"], s["Z_end"],
                 s["max_dilatancy_rate"], s["p_mean_cs"], s["unb_median_cs"]))
        a1.plot(d["eps_a"], [q / p for q, p in zip(d["q"], d["p"])], color=c,
                label="%s (phi0 = %.3f)" % (n, d["phi_solid"][0]))
        a2.plot(d["eps_a"], d["eps_v"], color=c, label=n)
    a1.set_ylabel("q / p")
    a1.legend(loc="lower right")
    a1.grid(alpha=0.3)
    n = ""
    with open("%s/yade_triax_dense.csv" % ddir) as f:
        head = f.readline()
    if ", N=" in head:
        n = ", N = " + head.split(", N=")[1].split(",")[0]
    a1.set_title("Yade 2023.02a periodic triaxial%s, p0 = 100 kPa, mu = 0.5" % n)
    a2.set_ylabel("volumetric strain eps_v (> 0 contraction)")
    a2.set_xlabel("axial strain eps_a")
    a2.axhline(0, color="k", lw=0.5)
    a2.grid(alpha=0.3)
    a2.legend(loc="lower left")
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print("wrote", png)


if __name__ == "__main__":
    main()
