#!/usr/bin/env python3
"""Angle of repose of the poured heaps of bench/heap.sh (issue 22, acceptance 3).

    heap_angle.py RUN:MU_R [RUN:MU_R ...] [--plate 0.08] [--plot P] [--json J]

For each run, from its last snapshot: the beads resting on the heap (centre above the disc,
z > 0, touching another bead or the disc: ncontacts >= 1); their tops z + r binned by the
distance rho from the axis (bins of one mean diameter d) in 8 sectors of 45 degrees; the
highest top per bin and sector; the free-surface profile is the median over the sectors per
bin. The angle of repose is atan(-slope) of the least-squares line through the profile for
rho in [0.25, 0.85] R (R: the disc's radius; the rounded apex under the pour and the rim,
where beads roll off, left out). Its scatter: the standard deviation of the 8 sectors' own
fitted angles (each sector's profile fitted alone). Also printed: the heap's height (the
highest top) and the beads on the disc; with fewer than 100 left on it no heap formed (all
rolled off the disc) and the angle is 0.
"""
import argparse
import glob
import json
import math
import sys

import h5py
import numpy as np

SECTORS = 8
MIN_BEADS = 100  # fewer beads left on the disc: no heap formed (angle 0)


def last_snapshot(run):
    snaps = sorted(glob.glob(run + "/snapshots/snap_*.h5"))
    if not snaps:
        raise SystemExit("%s: no snapshot" % run)
    return snaps[-1]


def profile(path, plate, d):
    with h5py.File(path, "r") as f:
        pos, rad, nc = f["pos"][:], f["radius"][:], f["ncontacts"][:]
        t = float(f.attrs.get("time", 0.0))
    rho = np.hypot(pos[:, 0], pos[:, 1])
    on = (pos[:, 2] > 0) & (rho <= plate) & (nc >= 1)
    rho, top = rho[on], pos[on, 2] + rad[on]
    phi = np.arctan2(pos[on, 1], pos[on, 0])
    sec = np.minimum(((phi + math.pi) / (2 * math.pi) * SECTORS).astype(int), SECTORS - 1)
    nb = int(plate / d)
    b = np.minimum((rho / d).astype(int), nb - 1)
    grid = np.full((SECTORS, nb), np.nan)
    for s, k, h in zip(sec, b, top):
        if not h <= grid[s, k]:  # NaN or lower
            grid[s, k] = h
    centres = (np.arange(nb) + 0.5) * d
    return centres, grid, int(on.sum()), float(top.max()) if on.any() else 0.0, t


def fit_angle(centres, prof, plate):
    w = (centres >= 0.25 * plate) & (centres <= 0.85 * plate) & np.isfinite(prof)
    if w.sum() < 3:
        return float("nan"), None
    sl, ic = np.polyfit(centres[w], prof[w], 1)
    return math.degrees(math.atan(-sl)), (sl, ic)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", help="RUN_DIR:MU_R")
    p.add_argument("--plate", type=float, default=0.08, help="disc radius [m]")
    p.add_argument("--d", type=float, default=5e-3, help="mean bead diameter [m]")
    p.add_argument("--plot")
    p.add_argument("--json")
    a = p.parse_args()
    rows = []
    for spec in a.runs:
        run, mu = spec.rsplit(":", 1)
        snap = last_snapshot(run)
        centres, grid, n_on, hmax, t = profile(snap, a.plate, a.d)
        if n_on < MIN_BEADS:  # everything rolled off: no heap, angle 0
            prof = np.full(len(centres), np.nan)
            ang, line, per, sd = 0.0, (0.0, 0.0), [0.0] * SECTORS, 0.0
        else:
            with np.errstate(all="ignore"):
                prof = np.nanmedian(grid, axis=0)
            ang, line = fit_angle(centres, prof, a.plate)
            per = [fit_angle(centres, grid[s], a.plate)[0] for s in range(SECTORS)]
            sd = float(np.nanstd(per, ddof=1))
        rows.append(dict(run=run, mu_r=float(mu), angle_deg=ang, sector_sd_deg=sd,
                         sectors_deg=per, height_m=hmax, beads_on_disc=n_on, t=t,
                         centres=centres.tolist(), profile=prof.tolist(), line=list(line)))
        print("mu_r = %-5s angle of repose %.2f deg (sectors: sd %.2f, %s); heap height "
              "%.4f m, %d beads on the disc, t = %.3f s (%s)"
              % (mu, ang, sd, " ".join("%.1f" % x for x in per), hmax, n_on, t, snap))
    angs = [r["angle_deg"] for r in rows]
    mono = all(b > a_ for a_, b in zip(angs, angs[1:]))
    print("angle grows with mu_r: %s" % ("yes" if mono else "NO"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(runs=rows, monotone=mono), f, indent=1)
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.3))
        for r in rows:
            c = np.array(r["centres"])
            l, = ax1.plot(c * 1e3, np.array(r["profile"]) * 1e3, "o", ms=3,
                          label="mu_r = %g: %s" % (r["mu_r"], "%.1f deg" % r["angle_deg"]
                                                    if r["beads_on_disc"] >= MIN_BEADS
                                                    else "no heap"))
            sl, ic = r["line"]
            if r["beads_on_disc"] >= MIN_BEADS:
                xs = np.array([0.25, 0.85]) * a.plate
                ax1.plot(xs * 1e3, (sl * xs + ic) * 1e3, "-", color=l.get_color())
        ax1.set_xlabel("distance from the axis [mm]")
        ax1.set_ylabel("free surface height [mm]")
        ax1.set_title("heap profiles (median of 8 sectors), fitted 0.25-0.85 R")
        ax1.set_aspect("equal")
        ax1.legend(fontsize=8)
        mus = [r["mu_r"] for r in rows]
        ax2.errorbar(mus, angs, yerr=[r["sector_sd_deg"] for r in rows], fmt="o-")
        ax2.set_xlabel("rolling friction mu_r (EPSD2)")
        ax2.set_ylabel("angle of repose [deg]")
        ax2.set_title("poured heap on a disc of radius %g mm, mu = 0.5" % (a.plate * 1e3))
        fig.tight_layout()
        fig.savefig(a.plot, dpi=110)
        print("plot: %s" % a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
