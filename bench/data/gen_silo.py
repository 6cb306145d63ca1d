#!/usr/bin/env python3
"""Initial spheres for the flat-bottomed silo benchmarks (issue 22: bench/beverloo.sh,
bench/liggghts_silo.sh).

Pure Python (no numpy), bit-reproducible. Writes one LAMMPS/LIGGGHTS data file (atom_style
granular: "id type diameter density x y z") that both codes read: LIGGGHTS with `read_data`,
demhpc with `LammpsData`.

Construction:
  * silo of radius R (to the vertices of its `segments`-gon, inner radius R cos(pi/segments),
    scenes/make_silo_stl.py), axis z through the origin, floor at z = 0;
  * points of a simple cubic lattice of spacing A (columns centred on the axis) whose centres
    lie at least r_max + sqrt(3) J + 0.1 mm inside the wall, the lowest layer at r_max + J +
    0.1 mm above the floor; the N lowest are kept, numbered in that order (by layer, then in a
    fixed pseudo-random order within a layer: a partial top layer is spread over the width);
  * for each sphere in id order 4 uniforms from the MMIX LCG of gen_settle.py (seed 20240601):
        r = R0 (1 + POLY (2 u1 - 1)),  dx, dy, dz = J (2 u - 1)
  * no overlaps: A - 2 sqrt(3) J > 2 r_max.
The column starts loose (solid fraction ~0.36 for A = 5.7 mm, d = 5 mm +-10 %) and collapses
under gravity into a random packing (solid fraction ~0.6): the simple cubic stacking is
unstable, so the settled bed keeps no lattice order.

    python3 bench/data/gen_silo.py --n 46000 --out silo.data
"""
import argparse
import math

from gen_settle import LCG  # the MMIX generator of the settle set-up (same stream)

SEED = 20240601


def lattice_points(R, segments, A, rmax, J, n):
    margin = rmax + math.sqrt(3) * J + 1e-4
    rin = R * math.cos(math.pi / segments) - margin
    z0 = rmax + J + 1e-4
    m = int(rin / A) + 1
    layer = []
    for j in range(-m, m + 1):
        for i in range(-m, m + 1):
            x, y = i * A, j * A
            if x * x + y * y <= rin * rin:
                layer.append((x, y))
    per = len(layer)
    layers = (n + per - 1) // per
    pts = []
    for k in range(layers):
        keyed = sorted(((idx * 2654435761 + k * 40503) % (1 << 32), x, y)
                       for idx, (x, y) in enumerate(layer))
        pts += [(x, y, z0 + k * A) for _, x, y in keyed]
    return pts[:n], per


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--radius", type=float, default=0.075, help="silo radius to the vertices [m]")
    p.add_argument("--segments", type=int, default=96, help="faces around (96)")
    p.add_argument("--n", type=int, required=True, help="number of spheres")
    p.add_argument("--d", type=float, default=5e-3, help="mean diameter [m] (5 mm)")
    p.add_argument("--poly", type=float, default=0.1, help="uniform +- fraction of r (0.1)")
    p.add_argument("--spacing", type=float, default=5.7e-3, help="lattice spacing [m]")
    p.add_argument("--jitter", type=float, default=0.05e-3, help="[m]")
    p.add_argument("--density", type=float, default=2500.0)
    p.add_argument("--height", type=float, default=1.0,
                   help="z extent of the data file's box [m] (LIGGGHTS' read_data box)")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    r0 = 0.5 * a.d
    rmax = r0 * (1 + a.poly)
    if a.spacing - 2 * math.sqrt(3) * a.jitter <= 2 * rmax:
        raise SystemExit("spacing too small for the largest sphere and the jitter")
    pts, per = lattice_points(a.radius, a.segments, a.spacing, rmax, a.jitter, a.n)
    g = LCG(SEED)
    J = a.jitter
    with open(a.out, "w") as f:
        f.write("LAMMPS data file: demhpc silo N=%d R=%g (bench/data/gen_silo.py)\n\n"
                % (a.n, a.radius))
        f.write("%d atoms\n2 atom types\n\n" % a.n)
        h = a.radius + 2e-3
        f.write("%.9e %.9e xlo xhi\n%.9e %.9e ylo yhi\n%.9e %.9e zlo zhi\n\n"
                % (-h, h, -h, h, -0.1, a.height))
        f.write("Atoms # granular: id type diameter density x y z\n\n")
        for idx, (x, y, z) in enumerate(pts, 1):
            u1, u2, u3, u4 = g.u(), g.u(), g.u(), g.u()
            r = r0 * (1.0 + a.poly * (2.0 * u1 - 1.0))
            f.write("%d 1 %.9e %.1f %.9e %.9e %.9e\n"
                    % (idx, 2 * r, a.density, x + J * (2 * u2 - 1), y + J * (2 * u3 - 1),
                       z + J * (2 * u4 - 1)))
    top = pts[-1][2]
    print("%s: %d spheres, %d per layer, lattice top z = %.4f m" % (a.out, a.n, per, top))


if __name__ == "__main__":
    main()
