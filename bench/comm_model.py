#!/usr/bin/env python3
"""Communication model for demhpc's halo exchange, calibrated on the 1–8 rank measurements of
bench/scaling (bench/SCALING.md), extrapolated to 64, 512 and 4096 ranks.

    $DEMHPC_PYTHON bench/comm_model.py [--bw GB/s] [--lat µs] [--measured bench/work/scaling]

Model (what demhpc does, src/domain/halo.rs):
  * A rank's ghosts are every particle within the halo h = 2 r_max + skin of a face with a
    neighbour, copied in three sweeps (x, y, z; later sweeps forward earlier ghosts, so edges
    and corners come for free). With uniform number density ρ and a subdomain of edges L_a with
    k_a ∈ {0, 1, 2} neighbours along axis a, the ghost count is exactly
        G = ρ · (Π_a (L_a + k_a h) − Π_a L_a)
    and for an interior cubic subdomain holding N_r particles (L = (N_r/ρ)^(1/3), a = ρ^(−1/3)):
        G = N_r ((1 + 2 (h/a) N_r^(−1/3))³ − 1) ≈ 6 N_r^(2/3) (h/a).
  * Bytes per step per rank: every step the ghosts' kinematics (13 f64 = 104 B) are refreshed;
    at a rebuild (every n_reb steps) whole particles (25 f64 = 200 B) go out as ghosts, plus the
    few migrants (neglected):  V = 104 G + 200 G / n_reb.
  * Messages per step: 6 (two per sweep, the three sweeps one after the other) plus one
    allreduce (the Verlet-trigger max) of ⌈log2 P⌉ latency-bound rounds.
        t_net = 6 α + V / B + ⌈log2 P⌉ α
  * Packing and unpacking cost c_pack per ghost per step, calibrated on the 1-rank periodic
    chute (its ghosts are periodic self-images: the comm phase there is pure pack/copy/unpack).
  * Compute per step: (N_r + γ G) / R, with R the measured 1-core rate in particle-steps/s and
    γ = 0.5 the extra work per ghost (cross-rank pairs are computed on both sides, "newton off";
    a ghost has about half its neighbours on the owned side).
  * No overlap of communication and computation (the exchange is blocking), perfect load
    balance, one rank per core, every rank an interior one (6 neighbours: the slowest rank sets
    the pace in a bulk-synchronous step).
        efficiency = (N_r / R) / ((N_r + γ G) / R + c_pack G + t_net)
"""
import argparse
import csv
import math
import os

# Scene geometry (from the scene files; ρ = number density of the particles' bounding box).
SCENES = {
    # 40³ lattice, spacing a = 2.4 mm, r ≤ 1.1 mm, skin 0.2 mm -> h = 2.4 mm = a.
    "settle_large": dict(
        rho=1.0 / 2.4e-3**3, h=2 * 1.1e-3 + 0.2e-3, box=(0.096, 0.096, 0.096),
        periodic=(False, False, False), n=64000,
    ),
    # 32 000 spheres d = 1 in 40 × 20 × 37.29 (periodic x, y), skin 0.1 -> h = 1.1.
    "chute": dict(
        rho=32000 / (40 * 20 * 37.2885), h=2 * 0.5 + 0.1, box=(40.0, 20.0, 37.2885),
        periodic=(True, True, False), n=32000,
    ),
}

# Measured on the 2-core AMD EPYC, 2026-11-23 (bench/SCALING.md): grid, ghost fraction, bytes
# per step per rank, rebuilds in 1000 steps. Overridden by --measured when its CSVs exist.
MEASURED = {
    "settle_large": [((1, 1, 1), 0.000, 0.0, 2), ((1, 1, 2), 0.050, 166707.0, 2),
                     ((2, 1, 2), 0.102, 170875.0, 2), ((2, 2, 2), 0.158, 131386.0, 2)],
    "chute": [((1, 1, 1), 0.173, 586112.0, 30), ((1, 1, 2), 0.242, 413179.0, 30),
              ((2, 1, 2), 0.308, 262299.0, 30), ((4, 1, 2), 0.438, 185969.0, 30)],
}
# Best 1 rank × 1 thread rate (particle-steps/s) and the chute's 1-rank comm time per ghost.
RATE_1CORE = {"settle_large": 5.65e7, "chute": 4.62e6}
C_PACK = 0.164 / (1000 * 0.173 * 32000)  # s per ghost per step (1-rank chute comm phase)
B_REFRESH, B_BUILD = 13 * 8, 25 * 8
GAMMA = 0.5


def ghosts_grid(s, dims):
    """Ghosts summed over ranks for a grid over the scene's box (uniform density)."""
    total = 0.0
    L = [s["box"][a] / dims[a] for a in range(3)]
    for c in [(i, j, k) for i in range(dims[0]) for j in range(dims[1]) for k in range(dims[2])]:
        vol_ext = 1.0
        for a in range(3):
            if s["periodic"][a]:
                k_a = 2  # periodic: always two neighbours (possibly itself)
            else:
                k_a = (c[a] > 0) + (c[a] < dims[a] - 1)
            vol_ext *= L[a] + k_a * s["h"]
        total += s["rho"] * (vol_ext - L[0] * L[1] * L[2])
    return total


def ghosts_cube(s, n_r):
    a = s["rho"] ** (-1.0 / 3.0)
    return n_r * ((1 + 2 * (s["h"] / a) * n_r ** (-1.0 / 3.0)) ** 3 - 1)


def read_measured(root):
    out = {}
    for name in SCENES:
        path = os.path.join(root, name, "scaling.csv")
        if not os.path.exists(path):
            continue
        grids = {1: (1, 1, 1), 2: (1, 1, 2), 4: (2, 1, 2), 8: (2, 2, 2) if name != "chute"
                 else (4, 1, 2)}
        rows = []
        with open(path) as f:
            for r in csv.DictReader(f):
                if int(r["threads"]) != 1 or int(r["ranks"]) not in grids:
                    continue
                rows.append((grids[int(r["ranks"])], float(r["ghost_fraction"]),
                             float(r["bytes_per_step_per_rank"]), MEASURED[name][0][3]))
        if rows:
            out[name] = sorted(rows, key=lambda x: math.prod(x[0]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bw", type=float, default=10.0, help="network bandwidth per rank, GB/s")
    ap.add_argument("--lat", type=float, default=2.0, help="message latency, µs")
    ap.add_argument("--measured", default=None, help="bench/scaling output root to read")
    a = ap.parse_args()
    bw, lat = a.bw * 1e9, a.lat * 1e-6
    measured = dict(MEASURED)
    if a.measured:
        measured.update(read_measured(a.measured))

    print("## Calibration: ghost fraction and bytes/step/rank, model vs measured (1000 steps)\n")
    print("| scene | ranks | grid | ghost frac. model | measured | B/step/rank model | measured |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for name, s in SCENES.items():
        for dims, gf, bps, nreb in measured[name]:
            p = math.prod(dims)
            g = ghosts_grid(s, dims)
            v = (B_REFRESH * g + B_BUILD * g * nreb / 1000) / p
            print(f"| {name} | {p} | {'x'.join(map(str, dims))} | {g / s['n']:.3f} | {gf:.3f} "
                  f"| {v:,.0f} | {bps:,.0f} |")
    print("\n(1 rank: chute's ghosts are periodic self-images, copied in memory, not sent.)\n")

    print(f"## Prediction: interior cubic subdomain, B = {a.bw:g} GB/s, α = {a.lat:g} µs, "
          f"6 messages + 1 allreduce per step, c_pack = {C_PACK * 1e9:.0f} ns/ghost, "
          f"γ = {GAMMA}\n")
    print("| scene (1-core rate) | ranks | N/rank | ghosts/rank | ghost frac. | kB/step/rank "
          "| t_net µs | t_pack µs | t_comp µs | efficiency |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    n_reb = {"settle_large": 500, "chute": 33}
    for name, s in SCENES.items():
        rate = RATE_1CORE[name]
        for p in (64, 512, 4096):
            for n_r in (10_000, 30_000, 100_000):
                g = ghosts_cube(s, n_r)
                v = B_REFRESH * g + B_BUILD * g / n_reb[name]
                t_net = 6 * lat + v / bw + math.ceil(math.log2(p)) * lat
                t_pack = C_PACK * g
                t_comp = (n_r + GAMMA * g) / rate
                eff = (n_r / rate) / (t_comp + t_pack + t_net)
                print(f"| {name} ({rate:.3g}/s) | {p} | {n_r:,} | {g:,.0f} | {g / n_r:.3f} "
                      f"| {v / 1e3:,.0f} | {t_net * 1e6:,.0f} | {t_pack * 1e6:,.0f} "
                      f"| {t_comp * 1e6:,.0f} | {eff:.2f} |")


if __name__ == "__main__":
    main()
