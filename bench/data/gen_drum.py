#!/usr/bin/env python3
"""Initial spheres of the drum validation case (issue 21, bench/liggghts_drum.sh).

Pure Python (no numpy), bit-reproducible. Writes one LAMMPS/LIGGGHTS data file (atom_style
granular: "id type diameter density x y z") that both codes read: LIGGGHTS with `read_data`
(bench/liggghts/in.drum_hertz), demhpc with `LammpsData` (scenes/drum_hertz.ron).

Construction:
  * drum of radius R (to the vertices of its 96-gon, inner radius R cos(pi/96)) and length L,
    axis y through the origin (scenes/make_drum_stl.py --radius R --length L);
  * points of a face-centred cubic lattice of nearest-neighbour distance A (cubic cell
    A sqrt 2, cells centred on the axis) whose centres lie at least r_max + sqrt(3) J + 0.1 mm
    inside the drum; the N lowest are kept, numbered in that order (by z, then in a fixed
    pseudo-random order within a layer: a partial top layer is spread over the whole width);
  * for each sphere in id order 4 uniforms from the MMIX LCG of gen_settle.py (seed 20240601):
        r = R0 (1 + 0.1 (2 u1 - 1)),  dx, dy, dz = J (2 u - 1)
  * no overlaps: A - 2 sqrt(3) J > 2 r_max.
The bed starts as a loose crystal (solid fraction 0.47) at the bottom of the drum and settles
by a few millimetres.

    python3 bench/data/gen_drum.py                      # N = 4720 -> bench/data/drum_hertz.data
    python3 bench/data/gen_drum.py 4000 /tmp/d.data
"""
import math
import sys

from gen_settle import LCG  # the MMIX generator of the settle set-up (same stream)

R = 0.05          # drum radius to the vertices [m]
L = 0.03          # drum length [m]
SEGMENTS = 96     # faces around
R0 = 1.5e-3       # mean sphere radius [m] (d = 3 mm)
POLY = 0.10       # +-10 % uniform
J = 0.05e-3       # jitter [m]
A = 3.5e-3        # FCC nearest-neighbour distance [m]
RHO = 2500.0      # glass [kg/m^3]
SEED = 20240601


def lattice_points():
    rmax = R0 * (1 + POLY)
    margin = rmax + math.sqrt(3) * J + 1e-4
    rin = R * math.cos(math.pi / SEGMENTS) - margin
    ymax = 0.5 * L - margin
    c = A * math.sqrt(2)
    basis = [(0, 0, 0), (0.5, 0.5, 0), (0.5, 0, 0.5), (0, 0.5, 0.5)]
    n = int(R / c) + 2
    pts = []
    for k in range(-n, n + 1):
        for j in range(-n, n + 1):
            for i in range(-n, n + 1):
                for bx, by, bz in basis:
                    x, y, z = (i + bx) * c, (j + by) * c, (k + bz) * c
                    if x * x + z * z <= rin * rin and abs(y) <= ymax:
                        key = (len(pts) * 2654435761) % (1 << 32)
                        pts.append((round(z / c * 2), key, x, y, z))
    pts.sort()
    return [(x, y, z) for _, _, x, y, z in pts]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4720
    out = sys.argv[2] if len(sys.argv) > 2 else "bench/data/drum_hertz.data"
    pts = lattice_points()
    if n > len(pts):
        raise SystemExit("N = %d: the lattice holds only %d spheres" % (n, len(pts)))
    g = LCG(SEED)
    rows = []
    for x, y, z in pts[:n]:
        u1, u2, u3, u4 = g.u(), g.u(), g.u(), g.u()
        r = R0 * (1.0 + POLY * (2.0 * u1 - 1.0))
        rows.append((x + J * (2 * u2 - 1), y + J * (2 * u3 - 1), z + J * (2 * u4 - 1), r))
    h = R + 2e-3
    with open(out, "w") as f:
        f.write("LAMMPS data file: demhpc drum validation N=%d (bench/data/gen_drum.py)\n\n" % n)
        f.write("%d atoms\n2 atom types\n\n" % n)
        f.write("%.9e %.9e xlo xhi\n%.9e %.9e ylo yhi\n%.9e %.9e zlo zhi\n\n"
                % (-h, h, -0.5 * L - 2e-3, 0.5 * L + 2e-3, -h, h))
        f.write("Atoms # granular: id type diameter density x y z\n\n")
        for idx, (x, y, z, r) in enumerate(rows, 1):
            f.write("%d 1 %.9e %.1f %.9e %.9e %.9e\n" % (idx, 2.0 * r, RHO, x, y, z))
    top = max(p[2] for p in rows[:n])
    print("wrote %s: N=%d of %d lattice sites, top centre z = %.4g m" % (out, n, len(pts), top))


if __name__ == "__main__":
    main()
