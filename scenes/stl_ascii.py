"""ASCII STL writing shared by the scenes' geometry scripts (make_drum_stl.py,
make_hopper_stl.py)."""

import math


def normal(a, b, c):
    """Unit normal of triangle abc (right-handed), for viewers: demhpc ignores it."""
    u = [b[i] - a[i] for i in range(3)]
    v = [c[i] - a[i] for i in range(3)]
    n = (u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0])
    length = math.sqrt(sum(x * x for x in n))
    return tuple(x / length for x in n)


def write_ascii(path, tris, name):
    """Write triangles `tris` ((a, b, c) vertex triples) as the ASCII STL solid `name`."""
    with open(path, "w") as f:
        f.write(f"solid {name}\n")
        for t in tris:
            f.write("  facet normal %.17g %.17g %.17g\n    outer loop\n" % normal(*t))
            for v in t:
                f.write("      vertex %.17g %.17g %.17g\n" % v)
            f.write("    endloop\n  endfacet\n")
        f.write(f"endsolid {name}\n")
