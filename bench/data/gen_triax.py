#!/usr/bin/env python3
"""Deterministic initial cloud for the periodic triaxial test (issue 23, scenes/triax_peri.ron).

Pure Python (no numpy), bit-reproducible on any IEEE-754 machine (same LCG as gen_settle.py).

Usage:  gen_triax.py [N] [OUTDIR]          (default N = 5000, OUTDIR = .)

Writes  triax_cloud_<N>.txt: header lines starting with '#' (the cubic periodic cell, the
        construction), then N lines "x y z r" (SI, metres, '%.9e'). Every centre lies in
        [0, L)^3. demhpc reads it with TextFile, Yade with a 4-column loader (bench/yade/triax_peri.py).

Construction:
  * radii: r_k = R0 * (1 + POLY * (2 u - 1)), R0 = 1 mm, POLY = 0.3 (uniform in [0.7, 1.3] mm),
    one uniform u per sphere, k = 0..N-1, drawn first (N draws);
  * the cell: a cube of side L with sum(4/3 pi r^3) / L^3 = PHI0 = 0.25 (a granular gas);
  * placement: spheres in order of decreasing radius (stable sort on (-r, k)), each by random
    sequential addition: draw 3 uniforms (x, y, z) = L * (u1, u2, u3) until the sphere overlaps
    no sphere placed before it (periodic minimum-image distance >= r_i + r_j + GAP, GAP = 0.01 R0);
    lines are written in placement order.
  * LCG (Knuth MMIX constants), 64-bit unsigned wrap-around:
        state_{n+1} = (6364136223846793005 * state_n + 1442695040888963407) mod 2^64
        u = (state_{n+1} >> 11) / 2^53          seed state_0 = 20261126
"""
import math
import sys

R0 = 1.0e-3      # mean radius [m]
POLY = 0.30      # +-30 % uniform polydispersity
PHI0 = 0.25      # initial solid fraction of the cloud
GAP = 0.01 * R0  # minimum surface gap at generation [m]
SEED = 20261126
MASK = (1 << 64) - 1


class LCG:
    def __init__(self, seed):
        self.s = seed & MASK

    def u(self):
        self.s = (6364136223846793005 * self.s + 1442695040888963407) & MASK
        return (self.s >> 11) / float(1 << 53)


def generate(n):
    g = LCG(SEED)
    radii = [R0 * (1.0 + POLY * (2.0 * g.u() - 1.0)) for _ in range(n)]
    vol = sum(4.0 / 3.0 * math.pi * r ** 3 for r in radii)
    side = (vol / PHI0) ** (1.0 / 3.0)
    rmax = max(radii)
    nc = max(1, int(side / (2.0 * rmax + GAP)))   # grid cells of size >= 2 rmax + GAP
    cs = side / nc
    grid = {}
    placed = []
    order = sorted(range(n), key=lambda k: (-radii[k], k))
    for k in order:
        r = radii[k]
        while True:
            x, y, z = side * g.u(), side * g.u(), side * g.u()
            ci, cj, ck = int(x / cs) % nc, int(y / cs) % nc, int(z / cs) % nc
            ok = True
            for di in (-1, 0, 1):
                for dj in (-1, 0, 1):
                    for dk in (-1, 0, 1):
                        for (px, py, pz, pr) in grid.get(((ci + di) % nc, (cj + dj) % nc, (ck + dk) % nc), ()):
                            dx = x - px
                            dy = y - py
                            dz = z - pz
                            dx -= side * round(dx / side)
                            dy -= side * round(dy / side)
                            dz -= side * round(dz / side)
                            lim = r + pr + GAP
                            if dx * dx + dy * dy + dz * dz < lim * lim:
                                ok = False
                                break
                        if not ok:
                            break
                    if not ok:
                        break
                if not ok:
                    break
            if ok:
                break
        s = (x, y, z, r)
        grid.setdefault((ci, cj, ck), []).append(s)
        placed.append(s)
    return side, placed


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    outdir = sys.argv[2] if len(sys.argv) > 2 else "."
    side, placed = generate(n)
    path = "%s/triax_cloud_%d.txt" % (outdir, n)
    with open(path, "w") as f:
        f.write("# demhpc periodic triaxial cloud (bench/data/gen_triax.py): N=%d R0=%.4g m +-%.0f%% uniform, "
                "phi0=%.3f, seed %d\n" % (n, R0, 100 * POLY, PHI0, SEED))
        f.write("# cell: periodic cube Lx=%.9e Ly=%.9e Lz=%.9e m, origin 0; columns: x y z r [m]\n" % (side, side, side))
        for (x, y, z, r) in placed:
            f.write("%.9e %.9e %.9e %.9e\n" % (x, y, z, r))
    rs = [p[3] for p in placed]
    print("wrote %s: N=%d cell %.6g m, r in [%.6g, %.6g] m, mean r %.6g m"
          % (path, n, side, min(rs), max(rs), sum(rs) / n))


if __name__ == "__main__":
    main()
