"""Load each grid of a demhpc snapshots.xmf with meshio and dump what it read.

    python3 tests/readers/xdmf_meshio.py OUT/snapshots.xmf

meshio reads one uniform grid per file, not our temporal collection of spatial collections: each
uniform grid (particles, meshes) of each time is copied verbatim, with its DataItems naming the
snapshot files, into a one-grid XDMF file beside snapshots.xmf, which meshio then reads. The
time comes from the collection's Time element. Run by tests/xdmf_readers.rs (the cheap reader
check, always on); the dump format is that of tests/readers/xdmf_paraview.py. Exits 77 when
meshio is absent (Debian: python3-meshio).
"""

import copy
import os
import sys
import xml.etree.ElementTree as ET

try:
    import meshio
except ImportError as e:
    print("NO_MESHIO", e)
    sys.exit(77)

VTK = {"vertex": 1, "triangle": 5}


def flat(a):
    return " ".join(repr(x) for x in a.ravel().tolist())


def dump(i, t, m):
    kind = "spheres" if "radius" in m.point_data else "meshes" if "mesh" in m.cell_data else "?"
    blocks = [(c.type, c.data.reshape(len(c.data), -1)) for c in m.cells]
    ncells = sum(len(d) for _, d in blocks)
    print("grid", i, repr(t), kind, len(m.points), ncells)
    print("points", flat(m.points))
    print("celltypes", " ".join(str(VTK.get(ty, -1)) for ty, d in blocks for _ in range(len(d))))
    print("cellsizes", " ".join(str(d.shape[1]) for _, d in blocks for _ in range(len(d))))
    print("conn", " ".join(flat(d) for _, d in blocks))
    for name in ["radius", "vel"]:
        if name in m.point_data:
            a = m.point_data[name]
            print("point", name, 1 if a.ndim == 1 else a.shape[1], flat(a))
    if "mesh" in m.cell_data:
        a = m.cell_data["mesh"][0]
        print("cell", "mesh", 1 if a.ndim == 1 else a.shape[1], flat(a))
    print("end")


def main():
    xmf = os.path.abspath(sys.argv[1])
    one = os.path.join(os.path.dirname(xmf), ".meshio_grid.xmf")
    temporal = ET.parse(xmf).getroot().find("Domain/Grid")
    steps = temporal.findall("Grid")
    times = [float(g.find("Time").get("Value")) for g in steps]
    print("reader meshio")
    print("times", " ".join(repr(t) for t in times))
    for i, (g, t) in enumerate(zip(steps, times)):
        uniform = [g] if g.get("GridType", "Uniform") == "Uniform" else g.findall("Grid")
        for u in uniform:
            doc = ET.Element("Xdmf", Version="3.0")
            ET.SubElement(doc, "Domain").append(copy.deepcopy(u))
            ET.ElementTree(doc).write(one)
            try:
                dump(i, t, meshio.read(one, file_format="xdmf"))
            finally:
                os.remove(one)


main()
