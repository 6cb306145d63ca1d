"""Render the contact network of a demhpc snapshot with ParaView: the lines between the
centres coloured by the normal force `fn` (issue 32), as a user would show it.

    xvfb-run -a pvbatch tests/readers/render_contacts.py OUT/snapshots.xmf OUT.png

Reads snapshots.xmf with Xdmf3ReaderT (one block per collection) at its last time, picks the block with the cell array
`fn` (the contacts' Polyline grid), colours it by `fn` (the colour map's range set to the data's)
and saves a screenshot. Prints `lines N`, `range MIN MAX` (the colour map's) and `png PATH`.
Exits 77 when ParaView's Python modules are absent. Run by tests/suite/xdmf_readers.rs.
"""

import sys

try:
    from paraview import servermanager, simple
except ImportError as e:
    print("NO_PARAVIEW_PYTHON", e)
    sys.exit(77)


def main():
    xmf, png = sys.argv[1], sys.argv[2]
    r = simple.Xdmf3ReaderT(FileName=[xmf])
    r.UpdatePipelineInformation()
    t = list(r.TimestepValues)[-1]
    blocks = servermanager.Fetch(r).GetNumberOfBlocks()
    contacts = None
    for b in range(1, blocks + 1):
        e = simple.ExtractBlock(Input=r, Selectors=[f"/Root/*[{b}]"])
        m = simple.MergeBlocks(Input=e)
        m.UpdatePipeline(t)
        d = servermanager.Fetch(m)
        if d.GetCellData().GetArray("fn") is not None:
            contacts, n = m, d.GetNumberOfCells()
    if contacts is None:
        sys.exit("no block with the cell array fn")
    print("lines", n)
    v = simple.CreateView("RenderView")
    v.ViewSize = [600, 500]
    v.ViewTime = t
    v.OrientationAxesVisibility = 0
    s = simple.Show(contacts, v)
    s.SetRepresentationType("Surface")
    s.LineWidth = 3.0
    simple.ColorBy(s, ("CELLS", "fn"))
    s.RescaleTransferFunctionToDataRange(True, False)
    lut = simple.GetColorTransferFunction("fn")
    pts = lut.RGBPoints
    print("range", repr(pts[0]), repr(pts[-4]))
    s.SetScalarBarVisibility(v, True)
    simple.ResetCamera(v)
    simple.SaveScreenshot(png, v, ImageResolution=[600, 500])
    print("png", png)


main()
