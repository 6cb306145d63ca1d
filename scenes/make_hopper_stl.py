#!/usr/bin/env python3
"""Write the conical hopper of scenes/hopper.ron as an ASCII STL file.

A vertical cylinder (open at the top) on a cone frustum that narrows to a circular outlet
(open) at z = 0, axis z through the origin. The side of each part is `segments` flat quads
(two triangles each) whose vertices lie on circles. The cone's half-angle is measured from the
vertical (the hopper wall angle of Jenike's design charts).

    python3 scenes/make_hopper_stl.py               # writes scenes/hopper.stl
    python3 scenes/make_hopper_stl.py --outlet 0.008 --half-angle 20 --out h.stl
"""

import argparse
import math
import os

from stl_ascii import write_ascii


def ring(radius, z, segments):
    return [
        (radius * math.cos(2 * math.pi * k / segments),
         radius * math.sin(2 * math.pi * k / segments), z)
        for k in range(segments)
    ]


def band(lower, upper):
    """Triangles between two rings of the same number of vertices."""
    n = len(lower)
    tris = []
    for k in range(n):
        a, b = lower[k], lower[(k + 1) % n]
        c, d = upper[(k + 1) % n], upper[k]
        tris += [(a, b, c), (a, c, d)]
    return tris


def hopper_triangles(radius, outlet, half_angle_deg, height, segments):
    cone_h = (radius - outlet) / math.tan(math.radians(half_angle_deg))
    bottom = ring(outlet, 0.0, segments)
    top_of_cone = ring(radius, cone_h, segments)
    top = ring(radius, cone_h + height, segments)
    return band(bottom, top_of_cone) + band(top_of_cone, top), cone_h


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--radius", type=float, default=0.05, help="of the bin [m] (0.05)")
    p.add_argument("--outlet", type=float, default=0.01, help="outlet radius [m] (0.01)")
    p.add_argument("--half-angle", type=float, default=30.0,
                   help="cone half-angle from the vertical [deg] (30)")
    p.add_argument("--height", type=float, default=0.08,
                   help="of the cylinder above the cone [m] (0.08)")
    p.add_argument("--segments", type=int, default=48, help="faces around (48)")
    p.add_argument("--out", default=os.path.join(here, "hopper.stl"))
    a = p.parse_args()
    if a.segments < 3 or not (0 < a.outlet < a.radius and a.height > 0
                              and 0 < a.half_angle < 90):
        p.error("needs segments >= 3, 0 < outlet < radius, height > 0, 0 < half-angle < 90")
    tris, cone_h = hopper_triangles(a.radius, a.outlet, a.half_angle, a.height, a.segments)
    write_ascii(a.out, tris, "hopper")
    print(f"{a.out}: {len(tris)} triangles, cone height {cone_h:.6g} m")


if __name__ == "__main__":
    main()
