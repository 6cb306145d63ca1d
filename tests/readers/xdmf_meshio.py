"""Load a demhpc snapshots.xmf with meshio and dump what it read, two ways.

    python3 -s tests/readers/xdmf_meshio.py OUT/snapshots.xmf

1. `reader meshio-series`: meshio's own time-series reader, `meshio.xdmf.TimeSeriesReader`, on
   snapshots.xmf itself. It reads the last temporal collection of the domain, the particles,
   at every time; it takes the points and cells of the first time for all (a meshio
   limitation), so the points dumped are each time's point attribute `pos` (the positions,
   written for this), and the cells those it gives.
2. `reader meshio`: each uniform grid (meshes, particles, contacts) of each time copied
   verbatim, with its DataItems naming the snapshot files, into a one-grid XDMF file beside
   snapshots.xmf, which `meshio.read` then reads (it reads one grid per file); the time comes
   from the grid's Time element.

Run by tests/suite/xdmf_readers.rs (the cheap reader check, always on); the dump format is that of
tests/readers/xdmf_paraview.py. Exits 77 when meshio is absent (Debian: python3-meshio).
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

VTK = {"vertex": 1, "line": 3, "triangle": 5, "hexahedron": 12}


def flat(a):
    return " ".join(repr(x) for x in a.ravel().tolist())


def kind(point_data, cell_data, cells=()):
    if [c.type for c in cells] == ["hexahedron"]:
        return "domain"
    if "radius" in point_data:
        return "spheres"
    if "mesh" in cell_data:
        return "meshes"
    if "fn" in cell_data:
        return "contacts"
    return "?"


def dump(i, t, points, cells, point_data, cell_data):
    blocks = [(c.type, c.data.reshape(len(c.data), -1)) for c in cells]
    ncells = sum(len(d) for _, d in blocks)
    print("grid", i, repr(t), kind(point_data, cell_data, cells), len(points), ncells)
    print("points", flat(points))
    print("celltypes", " ".join(str(VTK.get(ty, -1)) for ty, d in blocks for _ in range(len(d))))
    print("cellsizes", " ".join(str(d.shape[1]) for _, d in blocks for _ in range(len(d))))
    print("conn", " ".join(flat(d) for _, d in blocks))
    for name, a in sorted(point_data.items()):
        print("point", name, 1 if a.ndim == 1 else a.shape[1], flat(a))
    for name, a in sorted(cell_data.items()):
        a = a[0]
        print("cell", name, 1 if a.ndim == 1 else a.shape[1], flat(a))
    print("end")


def series(xmf):
    print("reader meshio-series")
    with meshio.xdmf.TimeSeriesReader(xmf) as r:
        _, cells = r.read_points_cells()
        data = [r.read_data(k) for k in range(r.num_steps)]
    print("times", " ".join(repr(t) for t, _, _ in data))
    for i, (t, pd, cd) in enumerate(data):
        dump(i, t, pd["pos"], cells, pd, cd)


def grid_by_grid(xmf):
    one = os.path.join(os.path.dirname(xmf), ".meshio_grid.xmf")
    grids = []
    for coll in ET.parse(xmf).getroot().find("Domain").findall("Grid"):
        for g in coll.findall("Grid"):
            grids.append((float(g.find("Time").get("Value")), g))
    times = sorted({t for t, _ in grids})
    print("reader meshio")
    print("times", " ".join(repr(t) for t in times))
    for t, g in sorted(grids, key=lambda x: x[0]):
        u = copy.deepcopy(g)
        u.remove(u.find("Time"))
        doc = ET.Element("Xdmf", Version="3.0")
        ET.SubElement(doc, "Domain").append(u)
        ET.ElementTree(doc).write(one)
        try:
            m = meshio.read(one, file_format="xdmf")
        finally:
            os.remove(one)
        dump(times.index(t), t, m.points, m.cells, m.point_data, m.cell_data)


def main():
    xmf = os.path.abspath(sys.argv[1])
    series(xmf)
    grid_by_grid(xmf)


main()
