#!/usr/bin/env python3
"""Dynamic angle of repose and fill of a rotating drum, measured the same way for demhpc and
LIGGGHTS (issue 21, acceptance 3; bench/liggghts_drum.sh).

Input: demhpc output directories (snapshots/snap_*.h5) and LIGGGHTS dump files
(`dump custom N FILE id x y z radius`). The drum's axis is y through the origin.

Free surface of one snapshot: the spheres of the central section (|y| <= L/4) projected
on the x-z plane; along a trial line (direction t, upward normal n) the projections are binned
by s = t.p in bins of one mean diameter, and each bin's surface point is its highest centre
(n.p) among spheres touching another sphere (centre distance < 1.05 (r_i + r_j): a bead in
flight above the bed does not count). A straight line is fitted (least squares) to the surface
points of the middle 60 % of the chord (the occupied bins' span), the trial line is
turned onto it and the fit repeated until the angle moves less than 1e-4 deg. The angle of
repose is the line's inclination to the horizontal, positive when the bed is raised on the side
the drum's bottom moves to (-x for a positive rotation about +y).

Fill: the bed is the part of the drum below the surface line shifted up by the mean radius (the
tops of the surface beads): fill = that segment's area / the drum's cross-section. For a static
bed (the drum not turning) the line is horizontal.

Second measure, free of any surface fit: the bed's centre of mass (all beads, density 2500):
its angle off the vertical below the axis, and the torque of its weight about the axis,
M g x_c, which at steady state is the torque the bed exerts on the drum (demhpc's series.csv
column mesh0_ty_Nm, printed beside it for comparison).

Steady state: snapshots from T0 (default one revolution, 2 pi / omega) on; the script prints the
mean angle, its scatter (standard deviation over snapshots), the fill, and the difference
between the codes, and with --plot draws the angle against time and the time-averaged surface
profiles.

    python3 bench/drum_angle.py --demhpc OUT_DIR --liggghts dump.drum --dt 2e-5 \\
        --omega 0.99045 --plot bench/drum_angle.png
    python3 bench/drum_angle.py --static OUT_DIR     # fill of a settled bed only
"""
import argparse
import glob
import json
import math
import os

import numpy as np

G = 9.81
R_DRUM = 0.05      # to the vertices [m]
L_DRUM = 0.03
SEGMENTS = 96


def load_demhpc(out_dir):
    import h5py

    snaps = []
    for path in sorted(glob.glob(os.path.join(out_dir, "snapshots", "snap_*.h5"))):
        with h5py.File(path, "r") as f:
            snaps.append((float(f.attrs["time"]), np.array(f["pos"]), np.array(f["radius"])))
    if not snaps:
        raise SystemExit(f"{out_dir}: no snapshots/snap_*.h5")
    return snaps


def load_liggghts(dump, dt):
    snaps = []
    with open(dump) as f:
        lines = iter(f)
        for line in lines:
            if not line.startswith("ITEM: TIMESTEP"):
                continue
            step = int(next(lines))
            next(lines)
            n = int(next(lines))
            for _ in range(5):
                next(lines)
            a = np.loadtxt([next(lines) for _ in range(n)], ndmin=2)
            snaps.append((step * dt, a[:, 1:4], a[:, 4]))
    if not snaps:
        raise SystemExit(f"{dump}: no snapshots")
    return snaps


def area_below(c, radius):
    """Area of the disc of `radius` about the origin below the line n.p = c (n upward)."""
    c = max(-radius, min(radius, c))
    return radius * radius * (math.pi - math.acos(c / radius)) + c * math.sqrt(radius ** 2 - c * c)


def surface(pos, rad, section=0.25, middle=0.6, theta0=0.0, max_iter=20):
    """Fit the free surface of one snapshot. Returns the line's inclination theta (rad, the
    direction (cos theta, sin theta) in the x-z plane), its offset c (n.p = c with
    n = (-sin theta, cos theta)), the fitted points (s, h) and the chord span."""
    sel = np.abs(pos[:, 1]) <= section * L_DRUM
    p3, r3 = pos, rad
    p = pos[sel][:, [0, 2]]
    r = rad[sel]
    idx = np.nonzero(sel)[0]
    w = 2.0 * rad.mean()
    touching = {}

    def supported(i):
        k = idx[i]
        if k not in touching:
            d = np.linalg.norm(p3 - p3[k], axis=1)
            d[k] = np.inf
            touching[k] = bool(np.any(d < 1.05 * (r3 + r3[k])))
        return touching[k]

    theta = theta0
    for _ in range(max_iter):
        t = np.array([math.cos(theta), math.sin(theta)])
        n = np.array([-math.sin(theta), math.cos(theta)])
        s, h = p @ t, p @ n
        b = np.floor(s / w).astype(int)
        pts = []
        for bb in np.unique(b):
            members = np.nonzero(b == bb)[0]
            for i in members[np.argsort(-h[members])]:
                if supported(i):
                    pts.append((s[i], h[i]))
                    break
        pts = np.array(pts)
        lo, hi = pts[:, 0].min(), pts[:, 0].max()
        mid, half = 0.5 * (lo + hi), 0.5 * middle * (hi - lo)
        m = np.abs(pts[:, 0] - mid) <= half
        slope, icpt = np.polyfit(pts[m, 0], pts[m, 1], 1)
        dtheta = math.atan(slope)
        # the fitted line h = icpt + slope s in the trial frame, as n'.p = c' in the turned one
        theta += dtheta
        c = icpt * math.cos(dtheta)
        if abs(dtheta) < math.radians(1e-4):
            break
    return theta, c, pts, (lo, hi), r.mean()


def profile_x(pos, rad, section=0.25):
    """Highest supported-or-not centre per x bin of one diameter (for the plot only)."""
    sel = np.abs(pos[:, 1]) <= section * L_DRUM
    x, z = pos[sel, 0], pos[sel, 2]
    w = 2.0 * rad.mean()
    edges = np.arange(-R_DRUM, R_DRUM + w, w)
    b = np.digitize(x, edges)
    top = np.full(len(edges) + 1, np.nan)
    for bb in np.unique(b):
        top[bb] = z[b == bb].max()
    centres = np.concatenate(([np.nan], 0.5 * (edges[1:] + edges[:-1]), [np.nan]))
    return centres, top


def analyse(snaps, omega, t0, density):
    sign = 1.0 if omega >= 0 else -1.0
    rows = []
    theta = 0.0
    r_area = R_DRUM * math.sqrt(SEGMENTS * math.sin(2 * math.pi / SEGMENTS) / (2 * math.pi))
    for t, pos, rad in snaps:
        if t <= 0.0:
            continue  # the initial lattice is no bed
        theta, c, _, _, rmean = surface(pos, rad, theta0=theta)
        fill = area_below(c + rmean, r_area) / (math.pi * r_area ** 2)
        m = density * 4.0 / 3.0 * math.pi * rad ** 3
        xc, zc = (m @ pos[:, 0]) / m.sum(), (m @ pos[:, 2]) / m.sum()
        # the bed rises towards -x for a positive rotation about +y: the line falls with x;
        # the torque of the bed's weight about the axis, M g x_c, is (at steady state) the
        # torque the bed exerts on the drum (demhpc's series.csv mesh0_ty_Nm)
        rows.append((t, -sign * math.degrees(theta), fill, m.sum() * G * xc,
                     sign * math.degrees(math.atan2(-xc, -zc))))
    a = np.array(rows)
    steady = a[a[:, 0] >= t0 - 1e-9]
    return a, steady


def summary(name, a, steady):
    if len(steady) == 0:
        return {"name": name, "n": 0}
    return {
        "name": name,
        "n": int(len(steady)),
        "t_from": float(steady[0, 0]),
        "t_to": float(steady[-1, 0]),
        "angle_deg": float(steady[:, 1].mean()),
        "scatter_deg": float(steady[:, 1].std(ddof=1)) if len(steady) > 1 else 0.0,
        "stderr_deg": float(steady[:, 1].std(ddof=1) / math.sqrt(len(steady)))
        if len(steady) > 1 else 0.0,
        "fill": float(steady[:, 2].mean()),
        "weight_torque_Nm": float(steady[:, 3].mean()),
        "com_angle_deg": float(steady[:, 4].mean()),
    }


def series_torque(out_dir, t_from, t_to):
    """Mean torque on the drum about y from demhpc's series.csv over [t_from, t_to]."""
    path = os.path.join(out_dir, "series.csv")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        head = f.readline().strip().split(",")
        if "mesh0_ty_Nm" not in head:
            return None
        a = np.loadtxt(f, delimiter=",", ndmin=2)
    t, ty = a[:, head.index("time_s")], a[:, head.index("mesh0_ty_Nm")]
    w = (t >= t_from - 1e-9) & (t <= t_to + 1e-9)
    return float(ty[w].mean()) if w.any() else None


def main():
    global R_DRUM, L_DRUM
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--demhpc", help="demhpc output directory")
    ap.add_argument("--liggghts", help="LIGGGHTS dump file (id x y z radius)")
    ap.add_argument("--static", help="demhpc output directory of a settled, non-turning bed")
    ap.add_argument("--dt", type=float, default=2e-5, help="LIGGGHTS time step (2e-5)")
    ap.add_argument("--omega", type=float, default=0.99045, help="drum speed, rad/s")
    ap.add_argument("--t0", type=float, help="start of the average [s] (one revolution)")
    ap.add_argument("--density", type=float, default=2500.0, help="beads, kg/m^3 (2500)")
    ap.add_argument("--plot", help="PNG: angle vs time and mean surface profiles")
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("--drum-radius", type=float, default=R_DRUM,
                    help="to the vertices [m] (0.05; scenes/drum.ron: 0.1)")
    ap.add_argument("--drum-length", type=float, default=L_DRUM,
                    help="[m] (0.03; scenes/drum.ron: 0.05)")
    a = ap.parse_args()
    R_DRUM, L_DRUM = a.drum_radius, a.drum_length
    out = {}
    if a.static:
        t, pos, rad = load_demhpc(a.static)[-1]
        theta, c, _, _, rmean = surface(pos, rad)
        r_area = R_DRUM * math.sqrt(SEGMENTS * math.sin(2 * math.pi / SEGMENTS) / (2 * math.pi))
        fill = area_below(c + rmean, r_area) / (math.pi * r_area ** 2)
        vs = float(np.sum(4.0 / 3.0 * math.pi * rad ** 3))
        vdrum = math.pi * r_area ** 2 * L_DRUM
        print(f"static bed at t = {t:.3f} s: surface {math.degrees(theta):+.2f} deg, top-centre "
              f"line at z = {c:+.5f} m, fill {100 * fill:.1f} % of the drum "
              f"(solids {100 * vs / vdrum:.1f} % of its volume, bed solid fraction "
              f"{vs / (fill * vdrum):.3f})")
        out["static"] = {"t": t, "fill": fill, "surface_deg": math.degrees(theta)}
    t0 = a.t0 if a.t0 is not None else 2 * math.pi / abs(a.omega)
    codes = []
    if a.demhpc:
        codes.append(("demhpc", load_demhpc(a.demhpc)))
    if a.liggghts:
        codes.append(("LIGGGHTS", load_liggghts(a.liggghts, a.dt)))
    results = {}
    for name, snaps in codes:
        series, steady = analyse(snaps, a.omega, t0, a.density)
        s = summary(name, series, steady)
        results[name] = (series, steady, s, snaps)
        out[name] = s
        if s["n"] == 0:
            print(f"{name:8s}: no snapshot after t0 = {t0:.3f} s (last {series[-1, 0]:.3f} s)")
            continue
        print(f"{name:8s}: angle {s['angle_deg']:.2f} +- {s['scatter_deg']:.2f} deg (scatter over "
              f"{s['n']} snapshots, t = {s['t_from']:.2f}..{s['t_to']:.2f} s; standard error "
              f"{s['stderr_deg']:.2f}), fill {100 * s['fill']:.1f} %; centre of mass "
              f"{s['com_angle_deg']:.2f} deg off the vertical, M g x_c = "
              f"{s['weight_torque_Nm']:+.5f} N m")
        if name == "demhpc":
            ty = series_torque(a.demhpc, s["t_from"], s["t_to"])
            if ty is not None:
                print(f"          drum torque (series.csv mesh0_ty_Nm, same window) {ty:+.5f} N m")
                s["drum_torque_Nm"] = ty
    if "demhpc" in results and "LIGGGHTS" in results and results["demhpc"][2]["n"] and \
            results["LIGGGHTS"][2]["n"]:
        d = results["demhpc"][2]["angle_deg"] - results["LIGGGHTS"][2]["angle_deg"]
        print(f"difference demhpc - LIGGGHTS: {d:+.2f} deg (target |d| <= 2)")
        out["difference_deg"] = d
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    if a.plot and results:
        plot(results, t0, a.plot)


def plot(results, t0, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.6))
    colours = {"demhpc": "C0", "LIGGGHTS": "C3"}
    for name, (series, steady, s, snaps) in results.items():
        ax1.plot(series[:, 0], series[:, 1], ".-", ms=3, lw=0.8, color=colours[name],
                 label=f"{name}: {s.get('angle_deg', float('nan')):.2f}"
                       f" ± {s.get('scatter_deg', float('nan')):.2f}°")
        if s["n"]:
            ax1.hlines(s["angle_deg"], s["t_from"], s["t_to"], color=colours[name], lw=2)
        tops = []
        for t, pos, rad in snaps:
            if t >= t0 - 1e-9:
                xc, top = profile_x(pos, rad)
                tops.append(top)
        if tops:
            tops = np.array(tops)
            cnt = np.isfinite(tops).sum(axis=0)
            # bins occupied in most snapshots (the corners at the wall come and go)
            mean = np.where(cnt > 0.5 * len(tops), np.nansum(tops, axis=0) / np.maximum(cnt, 1),
                            np.nan)
            ax2.plot(1e3 * xc, 1e3 * mean, "o-", ms=3, lw=1,
                     color=colours[name], label=f"{name}, mean highest centre")
    ax1.axvline(t0, color="k", lw=0.6, ls=":")
    ax1.set_xlabel("time [s]")
    ax1.set_ylabel("dynamic angle of repose [°]")
    ax1.set_title("free-surface angle (central section), average from 1 revolution")
    ax1.legend(fontsize=8)
    ax1.set_ylim(bottom=0)
    phi = np.linspace(0, 2 * np.pi, 200)
    ax2.plot(1e3 * R_DRUM * np.cos(phi), 1e3 * R_DRUM * np.sin(phi), "k-", lw=0.8)
    ax2.set_aspect("equal")
    ax2.set_xlabel("x [mm]")
    ax2.set_ylabel("z [mm]")
    ax2.set_title("time-averaged surface, |y| ≤ L/4")
    ax2.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
