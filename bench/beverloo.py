#!/usr/bin/env python3
"""Beverloo fit of the silo discharge runs of bench/beverloo.sh (issue 22, acceptance 2).

    beverloo.py todata SNAP.h5 OUT.data [--density 2500]   # settled bed -> LAMMPS data file
    beverloo.py fit --settled SNAP.h5 --d 0.005 RUN_D6:6 RUN_D8:8 ... [--plot P] [--json J]

`fit`: for each run directory (the orifice diameter in particle diameters after the colon)
the steady mass discharge rate W is the least-squares slope of `outlet_orifice_mass_kg`
against `time_s` in series.csv over the steady window [t0, t_end] (--t0, default 0.2 s: the
flow starts from rest when the run begins and its 0.1-s rates show no trend after ~0.1 s);
its uncertainty is the standard error of the mean of the slopes of the window's 0.1-s blocks
(the rate fluctuates by ~10 % from block to block at D = 6 d: arches form and break). The bulk density rho_b is
measured on the settled bed the discharge runs start from (SNAP.h5): the mass of the spheres
whose centre lies in a slab of the silo from 5 d above the floor to 5 d below the free
surface (the 98th percentile of the centres' heights) over the slab's volume (the silo's
96-gon cross-section, where all the spheres' volume lies). The flowing bulk density at the
end of each run is printed too (same slab rule, from the run's last snapshot).

Beverloo et al. (Chem. Eng. Sci. 15, 260, 1961; Nedderman, Statics and Kinematics of
Granular Materials, 1992, eq. 10.3): W = C rho_b sqrt(g) (D - k d)^(5/2). W^(2/5) is linear
in D: W^(2/5) = a (D - k d), a = (C rho_b sqrt(g))^(2/5); a weighted least-squares line
through the points (weights from the rates' standard errors) gives a and k, then
C = a^(5/2) / (rho_b sqrt(g)). The uncertainties of C and k are those of the line's
covariance from the rates' errors, carried to first order; chi^2 says whether the points
scatter about the line as their errors allow.
"""
import argparse
import csv
import json
import math
import sys

import h5py
import numpy as np

G = 9.81
BLOCK = 0.1  # s, the blocks of the rate's uncertainty


def read_snap(path):
    with h5py.File(path, "r") as f:
        order = np.argsort(f["gid"][:])
        return f["pos"][:][order], f["radius"][:][order], float(f.attrs.get("time", 0.0))


def todata(a):
    pos, rad, _ = read_snap(a.snap)
    lo, hi = pos.min(axis=0) - 0.01, pos.max(axis=0) + 0.01
    if a.xy:  # LIGGGHTS' box (boundary f f f): |x|, |y| <= xy, zlo <= z <= top + headroom
        lo[0] = lo[1] = -a.xy
        hi[0] = hi[1] = a.xy
    with open(a.out, "w") as f:
        f.write("LAMMPS data file: settled silo bed from %s (bench/beverloo.py)\n\n" % a.snap)
        f.write("%d atoms\n2 atom types\n\n" % len(rad))
        f.write("%.9e %.9e xlo xhi\n%.9e %.9e ylo yhi\n%.9e %.9e zlo zhi\n\n"
                % (lo[0], hi[0], lo[1], hi[1], a.zlo, hi[2] + a.headroom))
        f.write("Atoms # granular: id type diameter density x y z\n\n")
        for k, (p, r) in enumerate(zip(pos, rad), 1):
            f.write("%d 1 %.17g %.1f %.17g %.17g %.17g\n" % (k, 2 * r, a.density, *p))
    print("%s: %d spheres, top centre z = %.4f m" % (a.out, len(rad), pos[:, 2].max()))


def bulk_density(pos, rad, d, density, radius, segments, floor=0.0):
    """Mass of the centres in the slab [floor + 5 d, top - 5 d] over the slab's volume."""
    top = np.percentile(pos[:, 2], 98)
    z1, z2 = floor + 5 * d, top - 5 * d
    if z2 <= z1:
        return float("nan"), top, 0.0
    area = 0.5 * segments * radius ** 2 * math.sin(2 * math.pi / segments)
    inside = (pos[:, 2] >= z1) & (pos[:, 2] < z2)
    mass = density * 4.0 / 3.0 * math.pi * np.sum(rad[inside] ** 3)
    vol = area * (z2 - z1)
    return mass / vol, top, (mass / density) / vol


def read_series(run):
    t, m = [], []
    with open(run + "/series.csv") as f:
        for row in csv.DictReader(f):
            t.append(float(row["time_s"]))
            m.append(float(row["outlet_orifice_mass_kg"]))
    return np.array(t), np.array(m)


def slope(t, m):
    return np.polyfit(t, m, 1)[0]


def rate(run, t0):
    t, m = read_series(run)
    w = t >= t0 - 1e-12
    t, m = t[w], m[w]
    if len(t) < 8:
        raise SystemExit("%s: fewer than 8 series rows after t0 = %g s" % (run, t0))
    nb = max(2, int(round((t[-1] - t[0]) / BLOCK)))
    q = np.array_split(np.arange(len(t)), nb)
    parts = [slope(t[i], m[i]) for i in q]
    return slope(t, m), float(np.std(parts, ddof=1) / math.sqrt(nb)), parts, (t[0], t[-1])


def last_snapshot(run):
    import glob
    snaps = sorted(glob.glob(run + "/snapshots/snap_*.h5"))
    return snaps[-1] if snaps else None


def fit(a):
    pos, rad, _ = read_snap(a.settled)
    rho_b, top, phi = bulk_density(pos, rad, a.d, a.density, a.radius, a.segments)
    n0 = len(rad)
    print("settled bed: %d spheres, free surface (98th percentile of centres) z = %.4f m, "
          "solid fraction %.4f, rho_b = %.1f kg/m^3" % (n0, top, phi, rho_b))
    rows = []
    for spec in a.runs:
        run, dd = spec.rsplit(":", 1)
        dd = float(dd)
        w, err, parts, (ta, tb) = rate(run, a.t0)
        s = last_snapshot(run)
        rho_f = float("nan")
        if s:
            p2, r2, _ = read_snap(s)
            rho_f = bulk_density(p2, r2, a.d, a.density, a.radius, a.segments)[0]
        rows.append(dict(run=run, D_over_d=dd, D=dd * a.d, W=w, W_err=err, blocks=parts,
                         window=[ta, tb], rho_flowing=rho_f))
        print("D = %4.1f d = %.4f m: W = %.5f kg/s +- %.5f (0.1-s blocks %s) over t = %.3f-%.3f s; "
              "flowing rho_b at the end %.1f" % (dd, dd * a.d, w, err,
                                                 " ".join("%.4f" % x for x in parts), ta, tb,
                                                 rho_f))
    if len(rows) < 2:
        print("one orifice: no fit (give two or more runs)")
        return 0
    D = np.array([r["D"] for r in rows])
    W = np.array([r["W"] for r in rows])
    E = np.array([r["W_err"] for r in rows])
    y = W ** 0.4
    sy = 0.4 * W ** -0.6 * E  # the rate's standard error carried to W^(2/5)
    A = np.vstack([D, np.ones_like(D)]).T
    # weighted least squares; the covariance of (slope, intercept) from the rates' errors
    wts = 1.0 / sy ** 2
    cov = np.linalg.inv(A.T @ (A * wts[:, None]))
    sl, ic = cov @ (A.T @ (wts * y))
    chi2 = float(np.sum(wts * (A @ np.array([sl, ic]) - y) ** 2))
    k = -ic / (sl * a.d)
    C = sl ** 2.5 / (rho_b * math.sqrt(G))
    # k = -ic / (sl d), C = sl^2.5 / (rho_b sqrt g): first-order propagation
    jk = np.array([ic / (sl * sl * a.d), -1.0 / (sl * a.d)])
    jc = np.array([2.5 * sl ** 1.5 / (rho_b * math.sqrt(G)), 0.0])
    k_err = math.sqrt(jk @ cov @ jk)
    C_err = math.sqrt(jc @ cov @ jc)
    pred = C * rho_b * math.sqrt(G) * np.clip(D - k * a.d, 0, None) ** 2.5
    for r, p in zip(rows, pred):
        r["W_fit"] = float(p)
    # C with Beverloo's k = 1.5 held (a check of the two-parameter fit)
    c15 = W / (rho_b * math.sqrt(G) * (D - 1.5 * a.d) ** 2.5)
    print("fit W^(2/5) = a (D - k d): C = %.3f +- %.3f, k = %.2f +- %.2f, chi^2 = %.2f for %d "
          "points (rho_b = %.1f kg/m^3, d = %g m); with k = 1.5 held C per D: %s"
          % (C, C_err, k, k_err, chi2, len(D), rho_b, a.d, " ".join("%.3f" % c for c in c15)))
    for r in rows:
        print("  D/d = %4.1f  W = %.5f  fit %.5f  (%+.2f %%)"
              % (r["D_over_d"], r["W"], r["W_fit"], 100 * (r["W"] / r["W_fit"] - 1)))
    ok = bool(0.55 <= C <= 0.65 and 1.0 <= k <= 2.0)
    print("acceptance (C in 0.55-0.65, k in 1.0-2.0): %s" % ("holds" if ok else "DOES NOT hold"))
    out = dict(C=C, C_err=C_err, k=k, k_err=k_err, chi2=chi2, rho_b=rho_b, solid_fraction=phi, d=a.d,
               n_settled=n0, t0=a.t0, runs=rows, C_k15=[float(c) for c in c15], holds=ok)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    if a.plot:
        plot(a, rows, C, k, rho_b)
    return 0


def plot(a, rows, C, k, rho_b):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.3))
    for r in rows:
        t, m = read_series(r["run"])
        ax1.plot(t, m, label="D = %g d" % r["D_over_d"])
        ta, tb = r["window"]
        ax1.plot([ta, tb], [np.interp(ta, t, m), np.interp(ta, t, m) + r["W"] * (tb - ta)],
                 "k:", lw=1)
    ax1.set_xlabel("t [s]")
    ax1.set_ylabel("mass discharged [kg]")
    ax1.set_title("outlet mass (dotted: steady slope from t = %g s)" % a.t0)
    ax1.legend()
    D = np.array([r["D_over_d"] for r in rows])
    W = np.array([r["W"] for r in rows])
    E = np.array([r["W_err"] for r in rows])
    xs = np.linspace(k, D.max() * 1.05, 200)
    ax2.plot(xs, (C * rho_b * math.sqrt(G) * ((xs - k) * a.d) ** 2.5) ** 0.4, "k-",
             label="Beverloo fit: C = %.3f, k = %.2f" % (C, k))
    ax2.plot(xs, (0.58 * rho_b * math.sqrt(G) * np.clip((xs - 1.5) * a.d, 0, None) ** 2.5)
             ** 0.4, "k--", lw=1, label="C = 0.58, k = 1.5 (Nedderman)")
    ax2.errorbar(D, W ** 0.4, yerr=0.4 * W ** -0.6 * E, fmt="o", label="demhpc")
    ax2.set_xlim(0, D.max() * 1.05)
    ax2.set_ylim(0, None)
    ax2.set_xlabel("D / d")
    ax2.set_ylabel("W^(2/5)  [(kg/s)^(2/5)]")
    ax2.set_title("rho_b = %.0f kg/m^3 (measured), d = %g mm" % (rho_b, a.d * 1e3))
    ax2.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(a.plot, dpi=110)
    print("plot: %s" % a.plot)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("todata")
    t.add_argument("snap")
    t.add_argument("out")
    t.add_argument("--density", type=float, default=2500.0)
    t.add_argument("--headroom", type=float, default=0.05)
    t.add_argument("--xy", type=float, help="box half-width in x and y (default: the beads')")
    t.add_argument("--zlo", type=float, default=-0.1, help="box floor [m]")
    f = sub.add_parser("fit")
    f.add_argument("runs", nargs="+", help="RUN_DIR:D_over_d")
    f.add_argument("--settled", required=True)
    f.add_argument("--d", type=float, default=5e-3)
    f.add_argument("--density", type=float, default=2500.0)
    f.add_argument("--radius", type=float, default=0.075, help="silo radius to the vertices")
    f.add_argument("--segments", type=int, default=96)
    f.add_argument("--t0", type=float, default=0.2)
    f.add_argument("--plot")
    f.add_argument("--json")
    a = p.parse_args()
    return todata(a) if a.cmd == "todata" else fit(a)


if __name__ == "__main__":
    sys.exit(main())
