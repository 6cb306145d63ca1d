#!/usr/bin/env python3
"""Write the closed cylindrical drum of scenes/drum.ron as an ASCII STL file.

The drum's axis is y through the origin; its side is `segments` flat quads (two triangles
each) whose vertices lie on the circle of `radius`, the lowest face centred at -z, and its two
end caps are fans of triangles from the axis. Triangles are listed side, front cap, back cap
per segment (any order works: demhpc treats triangles as two-sided and ignores the facet
normals, which are written for viewers anyway).

    python3 scenes/make_drum_stl.py                  # writes scenes/drum.stl
    python3 scenes/make_drum_stl.py --radius 0.05 --length 0.03 --segments 64 --out d.stl
"""

import argparse
import math
import os

from stl_ascii import write_ascii


def drum_triangles(radius, length, segments):
    def rim(k, y):
        t = -math.pi / 2 + math.pi / segments + 2 * math.pi * k / segments
        return (radius * math.cos(t), y, radius * math.sin(t))

    y0, y1 = -0.5 * length, 0.5 * length
    tris = []
    for k in range(segments):
        a, b, c, d = rim(k, y0), rim(k + 1, y0), rim(k + 1, y1), rim(k, y1)
        tris += [(a, b, c), (a, c, d)]           # side
        tris.append(((0.0, y0, 0.0), b, a))      # cap at y0
        tris.append(((0.0, y1, 0.0), d, c))      # cap at y1
    return tris


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--radius", type=float, default=0.1, help="to the vertices [m] (0.1)")
    p.add_argument("--length", type=float, default=0.05, help="along the axis [m] (0.05)")
    p.add_argument("--segments", type=int, default=96, help="faces around (96)")
    p.add_argument("--out", default=os.path.join(here, "drum.stl"))
    a = p.parse_args()
    if a.segments < 3 or not (a.radius > 0 and a.length > 0):
        p.error("needs segments >= 3 and positive radius and length")
    tris = drum_triangles(a.radius, a.length, a.segments)
    write_ascii(a.out, tris, "drum")
    print(f"{a.out}: {len(tris)} triangles")


if __name__ == "__main__":
    main()
