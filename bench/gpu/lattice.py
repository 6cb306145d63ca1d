"""A pre-compressed simple-cubic lattice of equal spheres for bench/gpu.sh's dense packings.

    python3 -s bench/gpu/lattice.py N SPACING RADIUS > lattice.txt

N^3 spheres of radius RADIUS at (i + 1/2) SPACING: with SPACING < 2 RADIUS every sphere
overlaps its six neighbours by 2 RADIUS - SPACING, so a box of walls at 0 and N SPACING holds
a dense packing with six contacts per sphere from the first step (demhpc's `Lattice` refuses
overlapping spheres; a `TextFile` takes them).
"""
import sys

n, s, r = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
out = sys.stdout
c = [repr((k + 0.5) * s) for k in range(n)]
for k in range(n):
    for j in range(n):
        row = f" {c[j]} {c[k]} {r!r}\n"
        out.write("".join(f"{x}{row}" for x in c))
