"""Load a demhpc snapshots.xmf with ParaView's own XDMF readers and dump what they read.

    pvbatch tests/readers/xdmf_paraview.py OUT/snapshots.xmf [READER ...]

READER: the paraview.simple names of the readers ParaView's "Open" offers for .xmf files:
Xdmf3ReaderS ("Xdmf3 Reader"), Xdmf3ReaderT (top-level partition) and XDMFReader
(the XDMF 2 reader); all three by default. Run by tests/suite/xdmf_readers.rs, which checks the
numbers; the dump format is that of tests/readers/xdmf_meshio.py:

    reader NAME
    times T...                        the reader's time steps
    grid I TIME KIND NPOINTS NCELLS   one per dataset of time step I (KIND: domain if it is one
                                      hexahedron, spheres if it has the point array radius,
                                      meshes if the cell array mesh, contacts if the cell
                                      array fn)
    points X Y Z ...                  flattened
    celltypes VTK_TYPE ...            one per cell
    cellsizes N ...                   points per cell
    conn ID ...                       flattened connectivity
    point NAME NCOMP V ...            point arrays radius, vel
    cell NAME NCOMP V ...             cell arrays mesh, fn
    end

Exits 77 when ParaView's Python modules are absent (Debian: python3-paraview).
"""

import sys

try:
    from paraview import servermanager
    from paraview import simple
    from vtkmodules.util.numpy_support import vtk_to_numpy
except ImportError as e:
    print("NO_PARAVIEW_PYTHON", e)
    sys.exit(77)


def flat(a):
    return " ".join(repr(x) for x in a.ravel().tolist())


def leaves(d):
    if not d.IsA("vtkCompositeDataSet"):
        # one grid in the file (particles alone): the dataset itself
        yield d
        return
    it = d.NewIterator()
    it.InitTraversal()
    while not it.IsDoneWithTraversal():
        yield it.GetCurrentDataObject()
        it.GoToNextItem()


def dump(i, t, ds):
    pd, cd = ds.GetPointData(), ds.GetCellData()
    if ds.GetNumberOfCells() == 1 and ds.GetCellType(0) == 12:  # VTK_HEXAHEDRON
        kind = "domain"
    elif pd.GetArray("radius"):
        kind = "spheres"
    else:
        kind = "meshes" if cd.GetArray("mesh") else "contacts" if cd.GetArray("fn") else "?"
    print("grid", i, repr(t), kind, ds.GetNumberOfPoints(), ds.GetNumberOfCells())
    print("points", flat(vtk_to_numpy(ds.GetPoints().GetData())))
    cells = ds.GetCells()
    offsets = vtk_to_numpy(cells.GetOffsetsArray())
    print("celltypes", flat(vtk_to_numpy(ds.GetCellTypesArray())))
    print("cellsizes", flat(offsets[1:] - offsets[:-1]))
    print("conn", flat(vtk_to_numpy(cells.GetConnectivityArray())))
    for data, kw, names in [(pd, "point", ["radius", "vel"]), (cd, "cell", ["mesh", "fn"])]:
        for name in names:
            a = data.GetArray(name)
            if a is not None:
                print(kw, name, a.GetNumberOfComponents(), flat(vtk_to_numpy(a)))
    print("end")


def main():
    xmf = sys.argv[1]
    names = sys.argv[2:] or ["Xdmf3ReaderS", "Xdmf3ReaderT", "XDMFReader"]
    for name in names:
        cls = getattr(simple, name)
        # the XDMF 2 reader's file property is FileNames, the Xdmf3 readers' FileName
        r = cls(FileNames=[xmf]) if name == "XDMFReader" else cls(FileName=[xmf])
        r.UpdatePipelineInformation()
        times = list(r.TimestepValues)
        print("reader", name)
        print("times", " ".join(repr(t) for t in times))
        for i, t in enumerate(times):
            r.UpdatePipeline(t)
            for ds in leaves(servermanager.Fetch(r)):
                dump(i, t, ds)
        simple.Delete(r)


main()
