#!/usr/bin/env python3
"""Write the flat-bottomed cylindrical silo of scenes/silo.ron as an ASCII STL file.

A vertical cylinder (open at the top) of radius `radius` and height `height` standing on a
flat annular floor at z = 0 with a central circular orifice of radius `orifice` (open), axis z
through the origin. Each part is `segments` flat quads (two triangles each).

    python3 scenes/make_silo_stl.py                 # writes scenes/silo.stl
    python3 scenes/make_silo_stl.py --orifice 0.018 --out s.stl
    python3 scenes/make_silo_stl.py --orifice 0 --out closed.stl   # no orifice (settling)
    python3 scenes/make_silo_stl.py --orifice 0 --height 0 --radius 0.08 --out scenes/heap.stl
                                                    # a disc, no wall (scenes/heap.ron)
"""

import argparse
import os

from make_hopper_stl import band, ring
from stl_ascii import write_ascii


def silo_triangles(radius, orifice, height, segments):
    rim = ring(radius, 0.0, segments)
    top = ring(radius, height, segments)
    if orifice == 0:  # a closed floor: a fan about the axis (filling, settling)
        n = len(rim)
        floor = [((0.0, 0.0, 0.0), rim[k], rim[(k + 1) % n]) for k in range(n)]
    else:
        floor = band(ring(orifice, 0.0, segments), rim)
    return floor + (band(rim, top) if height > 0 else [])


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--radius", type=float, default=0.0375, help="of the silo [m] (0.0375)")
    p.add_argument("--orifice", type=float, default=0.015, help="orifice radius [m] (0.015; 0: a closed floor)")
    p.add_argument("--height", type=float, default=0.12, help="of the wall [m] (0.12; 0: no wall)")
    p.add_argument("--segments", type=int, default=48, help="faces around (48)")
    p.add_argument("--out", default=os.path.join(here, "silo.stl"))
    a = p.parse_args()
    if a.segments < 3 or not (0 <= a.orifice < a.radius and a.height >= 0):
        p.error("needs segments >= 3, 0 <= orifice < radius, height >= 0")
    tris = silo_triangles(a.radius, a.orifice, a.height, a.segments)
    write_ascii(a.out, tris, "silo")
    print(f"{a.out}: {len(tris)} triangles")


if __name__ == "__main__":
    main()
