#!/usr/bin/env python3
"""Scaling report for bench/scaling: reads OUT/runs/*/timing.json, writes OUT/scaling.csv,
OUT/scaling.md, OUT/speedup.png and OUT/efficiency.png.

    $DEMHPC_PYTHON bench/scaling_report.py [--nproc N] [--machine NAME] OUT

Definitions (per configuration ranks × threads, fastest of the repeats by wall_s):
  cores            ranks × threads
  psps_total       particle-steps per second (particles × steps / wall_s)
  psps_per_core    psps_total / cores
  speedup          psps_total / psps_total of the 1 rank × 1 thread run (strong scaling;
                   without a 1×1 run: relative to the smallest-core run, times its core count)
  efficiency       speedup / cores
  comm_pct         100 · comm / wall_s, comm = average over ranks of the time in halo refresh,
                   migration, ghost builds and the Verlet-trigger allreduce. It includes the
                   time a rank waits there for slower neighbours, i.e. load imbalance shows up
                   in it.
  imbalance_pct    100 · (Σ_c max_c − Σ_c avg_c) / Σ_c avg_c over the compute phases
                   c ∈ {collide, contact, integrate}, max/avg over ranks. timing.json keeps
                   per-phase min/avg/max only, not per-rank totals, so this is an upper bound
                   of the imbalance (max − avg)/avg of the per-rank compute time (exact when
                   the same rank is slowest in every phase); 0 at 1 rank.
  ghost_fraction   ghosts summed over ranks / particles, at the end of the run (with periodic
                   axes a single rank also holds periodic-image ghosts)
  bytes_per_step_per_rank
                   bytes handed to neighbour exchanges, averaged over steps and ranks (refresh
                   every step, ghost build + migration at rebuilds; with one rank along a
                   periodic axis the "neighbour" is the rank itself: a copy, not network)
  oversubscribed   ranks × threads > nproc: timings check correctness only, not performance
"""
import argparse
import csv
import glob
import json
import os
import re
import sys

COLUMNS = [
    "ranks", "threads", "cores", "particles", "particles_per_rank", "steps", "wall_s",
    "psps_total", "psps_per_core", "speedup", "efficiency", "comm_pct", "imbalance_pct",
    "ghost_fraction", "bytes_per_step_per_rank", "oversubscribed",
]
COMPUTE = ("collide", "contact", "integrate")


def load_runs(out):
    """Fastest run per (ranks, threads): (timing dict, repeats, load average before it)."""
    best = {}
    for path in sorted(glob.glob(os.path.join(out, "runs", "*", "timing.json"))):
        with open(path) as f:
            t = json.load(f)
        key = (t["ranks"], t["threads"])
        load = None
        lpath = os.path.join(os.path.dirname(path), "loadavg")
        if os.path.exists(lpath):
            with open(lpath) as f:
                load = f.read().strip()
        n, prev = 1, best.get(key)
        if prev is not None:
            n = prev[1] + 1
            if prev[0]["wall_s"] <= t["wall_s"]:
                best[key] = (prev[0], n, prev[2])
                continue
        best[key] = (t, n, load)
    return best


def rows_of(best, nproc):
    if not best:
        sys.exit("scaling_report: no timing.json under runs/")
    keys = sorted(best, key=lambda k: (k[0] * k[1], k[1], k[0]))
    base = best.get((1, 1))
    if base is not None:
        base_psps, base_cores = base[0]["particle_steps_per_s"], 1
    else:
        t = best[keys[0]][0]
        base_psps, base_cores = t["particle_steps_per_s"], t["ranks"] * t["threads"]
    rows = []
    for k in keys:
        t, reps, load = best[k]
        ranks, threads = k
        cores = ranks * threads
        psps = t["particle_steps_per_s"]
        speedup = psps / base_psps * base_cores
        ph = t["phases"]
        avg = sum(ph[c]["avg"] for c in COMPUTE)
        mx = sum(ph[c]["max"] for c in COMPUTE)
        rows.append({
            "ranks": ranks,
            "threads": threads,
            "cores": cores,
            "particles": t["particles"],
            "particles_per_rank": t["particles"] / ranks,
            "steps": t["steps"],
            "wall_s": t["wall_s"],
            "psps_total": psps,
            "psps_per_core": psps / cores,
            "speedup": speedup,
            "efficiency": speedup / cores,
            "comm_pct": 100.0 * t["phases_s"]["comm"] / t["wall_s"],
            "imbalance_pct": 100.0 * (mx - avg) / avg if avg > 0 else 0.0,
            "ghost_fraction": t["ghost_fraction"],
            "bytes_per_step_per_rank": t["bytes_sent_per_step_per_rank"],
            "oversubscribed": cores > nproc,
            "_grid": "x".join(str(g) for g in t["grid"]),
            "_reps": reps,
            "_load": load,
            "_rebuilds": t["rebuilds"],
            "_scene": t["scene"],
            "_reproducible": t["reproducible"],
        })
    return rows


def fmt(col, v):
    if col == "oversubscribed":
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if col in ("psps_total", "psps_per_core"):
        return f"{v:.4g}"
    if col in ("wall_s",):
        return f"{v:.3f}"
    if col in ("speedup", "efficiency", "ghost_fraction"):
        return f"{v:.3f}"
    if col in ("comm_pct", "imbalance_pct"):
        return f"{v:.1f}"
    return f"{v:.0f}"


def write_csv(out, rows):
    with open(os.path.join(out, "scaling.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow([fmt(c, r[c]) if c == "oversubscribed" else
                        (r[c] if isinstance(r[c], int) else f"{r[c]:.6g}") for c in COLUMNS])


def write_md(out, rows, nproc, machine, flags, weak=False):
    r0 = rows[0]
    # Weak scaling (bench/scaling --weak): the scene is tiled to the rank grid, so the
    # particles per rank stay constant and efficiency = psps_per_core / psps_per_core(1).
    title = (f"# Weak scaling: {r0['_scene']} ({r0['particles_per_rank']:.0f} particles per rank, "
             f"{r0['steps']} steps)" if weak else
             f"# Strong scaling: {r0['_scene']} ({r0['particles']} particles, {r0['steps']} steps)")
    lines = [
        title,
        "",
        f"Machine: {machine}, nproc = {nproc}. Fastest of the repeats per configuration."
        + (f" demhpc flags: `{flags}`." if flags else "")
        + f" Reproducible mode: {'on' if r0['_reproducible'] else 'off'}.",
        "Rows marked oversubscribed (ranks × threads > nproc) check correctness only.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "|".join("---:" for _ in COLUMNS) + "|",
    ]
    for r in rows:
        lines.append("| " + " | ".join(fmt(c, r[c]) for c in COLUMNS) + " |")
    lines += [
        "",
        "| ranks × threads | grid | rebuilds | repeats | load avg before the kept run |",
        "|---|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['ranks']}×{r['threads']} | {r['_grid']} | {r['_rebuilds']} | "
                     f"{r['_reps']} | {r['_load'] or '?'} |")
    lines += [
        "",
        "speedup = psps_total / psps_total(1 rank × 1 thread); efficiency = speedup / cores;",
        "comm_pct = 100 · avg-over-ranks comm time / wall_s (includes waiting for neighbours);",
        "imbalance_pct = 100 · (Σ max − Σ avg) / Σ avg over the compute phases collide, contact,",
        "integrate (an upper bound of the per-rank compute-time imbalance);",
        "ghost_fraction = ghosts over all ranks / particles (end of run);",
        "bytes_per_step_per_rank = bytes given to neighbour exchanges per step per rank",
        "(see bench/scaling_report.py for details).",
        "",
    ]
    with open(os.path.join(out, "scaling.md"), "w") as f:
        f.write("\n".join(lines))


def finish(fig, ax, title, legend_loc, path):
    """Title, grid and legend of a report figure, then write it as PNG."""
    import matplotlib.pyplot as plt

    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc=legend_loc)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plots(out, rows, nproc):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    title = f"{rows[0]['_scene']}: {rows[0]['particles']} particles, {rows[0]['steps']} steps"
    by_threads = {}
    for r in rows:
        by_threads.setdefault(r["threads"], []).append(r)
    markers = ["o", "s", "^", "D", "v"]
    colors = ["C0", "C1", "C2", "C3", "C4"]

    def draw(ax, xkey, ykey):
        for i, (th, rs) in enumerate(sorted(by_threads.items())):
            rs = sorted(rs, key=lambda r: r[xkey])
            m, c = markers[i % len(markers)], colors[i % len(colors)]
            ax.plot([r[xkey] for r in rs], [r[ykey] for r in rs], "-", color=c, alpha=0.5)
            for r in rs:
                ax.plot(r[xkey], r[ykey], m, ms=8, color=c,
                        mfc="none" if r["oversubscribed"] else c, mew=1.5)
                ax.annotate(f"{r['ranks']}×{r['threads']}", (r[xkey], r[ykey]),
                            textcoords="offset points", fontsize=8,
                            xytext=(6, 4) if r["threads"] == 1 else (6, -12))
            ax.plot([], [], m, color=c, label=f"{th} thread(s)/rank")
        ax.plot([], [], "o", color="gray", mfc="none",
                label=f"hollow: oversubscribed (> {nproc} cores)")

    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    cmax = max(r["cores"] for r in rows)
    ax.plot([1, cmax], [1, cmax], "k--", lw=1, label="ideal")
    draw(ax, "cores", "speedup")
    ax.axvspan(nproc + 0.5, cmax * 1.5, color="0.9", zorder=0, label="oversubscribed region")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlim(0.8, cmax * 1.3)
    ax.set_xlabel("cores (ranks × threads)")
    ax.set_ylabel("speed-up vs 1 rank × 1 thread")
    finish(fig, ax, title, "upper left", os.path.join(out, "speedup.png"))

    for r in rows:
        r["_ppc"] = r["particles"] / r["cores"]
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    ax.axhline(1.0, color="k", ls="--", lw=1, label="ideal")
    ax.axhline(0.85, color="C3", ls=":", lw=1, label="target 85 %")
    draw(ax, "_ppc", "efficiency")
    ax.set_xscale("log")
    ax.invert_xaxis()
    ax.set_ylim(0, max(1.15, max(r["efficiency"] for r in rows) * 1.1))
    ax.set_xlabel("particles per core (decreasing →)")
    ax.set_ylabel("parallel efficiency")
    finish(fig, ax, title, "lower left", os.path.join(out, "efficiency.png"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--nproc", type=int, default=os.cpu_count())
    ap.add_argument("--machine", default="")
    ap.add_argument("--flags", default="")
    ap.add_argument("--weak", action="store_true", help="runs of bench/scaling --weak")
    a = ap.parse_args()
    machine = a.machine
    if not machine and os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            m = re.search(r"^model name\s*:\s*(.*)$", f.read(), re.M)
            machine = m.group(1) if m else "?"
    rows = rows_of(load_runs(a.out), a.nproc)
    write_csv(a.out, rows)
    write_md(a.out, rows, a.nproc, machine, a.flags, a.weak)
    plots(a.out, rows, a.nproc)
    with open(os.path.join(a.out, "scaling.md")) as f:
        print(f.read())


if __name__ == "__main__":
    main()
