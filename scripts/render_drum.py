"""Render a snapshot of a drum run (scenes/drum.ron) to a PNG with ParaView, without a display.

    xvfb-run -a pvbatch scripts/render_drum.py OUT/snapshots.xmf docs/img/drum.png [--time T]

pvbatch is ParaView's batch Python (Debian: paraview, python3-paraview; xvfb-run: xvfb and
xauth; all installed by `scripts/setup.sh --peers`). Debian's ParaView renders through X, hence
xvfb-run; a ParaView built with EGL or OSMesa takes `pvbatch --force-offscreen-rendering`
instead. The snapshot is the last one unless --time picks another (the nearest).

What it shows: the spheres as shaded spheres of their radius (Point Gaussian), coloured by the
velocity magnitude |vel|, and the drum, a semi-transparent surface with its rims (feature edges)
drawn dark, seen along the axis (y) from a little above and to the side. ParaView's
Xdmf3ReaderT reads the file; snapshots.xmf holds one temporal collection per kind of grid: the
domain's box, the meshes' Triangle grids, with `contacts: true` the contacts', and the spheres'
Polyvertex grids last (src/io/snapshot.rs `xdmf`), picked here by position.
"""

import argparse
import sys

from paraview import servermanager, simple


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("xmf", help="snapshots.xmf of a drum run")
    p.add_argument("png", help="image to write")
    p.add_argument("--time", type=float, help="snapshot time [s] (default: the last)")
    p.add_argument("--size", default="1000x800", help="image size WxH (1000x800)")
    a = p.parse_args()
    w, h = (int(x) for x in a.size.split("x"))

    r = simple.Xdmf3ReaderT(FileName=[a.xmf])
    r.UpdatePipelineInformation()
    times = list(r.TimestepValues)
    if not times:
        sys.exit(f"{a.xmf}: no snapshots")
    t = times[-1] if a.time is None else min(times, key=lambda x: abs(x - a.time))
    blocks = servermanager.Fetch(r).GetNumberOfBlocks()
    meshes = simple.ExtractBlock(Input=r, Selectors=["/Root/*[2]"])
    spheres = simple.ExtractBlock(Input=r, Selectors=[f"/Root/*[{blocks}]"])
    surface = simple.ExtractSurface(Input=simple.MergeBlocks(Input=meshes))
    # the triangles share no points in the file (3 vertices each): merge them for the edges
    rims = simple.FeatureEdges(Input=simple.Clean(Input=surface))
    rims.FeatureAngle = 30.0
    rims.BoundaryEdges = 0
    rims.NonManifoldEdges = 0

    v = simple.CreateView("RenderView")
    v.ViewSize = [w, h]
    v.ViewTime = t
    v.OrientationAxesVisibility = 0
    v.Background = [1.0, 1.0, 1.0]
    # ParaView 5.11 takes the background from the colour palette unless told otherwise
    if hasattr(v, "UseColorPaletteForBackground"):
        v.UseColorPaletteForBackground = 0
    v.EnableRenderOnInteraction = 0

    s = simple.Show(spheres, v)
    s.SetRepresentationType("Point Gaussian")
    s.ShaderPreset = "Sphere"
    s.ScaleByArray = 1
    s.SetScaleArray = ["POINTS", "radius"]
    s.UseScaleFunction = 0
    s.GaussianRadius = 1.0
    simple.ColorBy(s, ("POINTS", "vel", "Magnitude"))
    lut = simple.GetColorTransferFunction("vel")
    lut.ApplyPreset("Viridis (matplotlib)", True)
    s.RescaleTransferFunctionToDataRange(False, True)
    bar = simple.GetScalarBar(lut, v)
    bar.Title = "speed [m/s]"
    bar.ComponentTitle = ""
    bar.TitleColor = bar.LabelColor = [0.1, 0.1, 0.1]
    bar.WindowLocation = "Any Location"
    bar.Position = [0.89, 0.25]
    bar.ScalarBarLength = 0.5
    s.SetScalarBarVisibility(v, True)

    d = simple.Show(surface, v)
    d.SetRepresentationType("Surface")
    d.ColorArrayName = ["POINTS", ""]
    d.AmbientColor = d.DiffuseColor = [0.55, 0.6, 0.7]
    d.Opacity = 0.18
    e = simple.Show(rims, v)
    e.ColorArrayName = ["POINTS", ""]
    e.AmbientColor = e.DiffuseColor = [0.15, 0.15, 0.2]
    e.LineWidth = 2.0

    text = simple.Text(Text=f"drum, t = {t:.3f} s")
    tr = simple.Show(text, v)
    tr.Color = [0.1, 0.1, 0.1]
    tr.FontSize = 14
    tr.WindowLocation = "Upper Left Corner"

    v.CameraFocalPoint = [0.0, 0.0, 0.0]
    v.CameraPosition = [0.16, -0.55, 0.12]
    v.CameraViewUp = [0.0, 0.0, 1.0]
    v.CameraViewAngle = 30.0
    simple.Render(v)
    v.ResetCamera(False)
    v.GetActiveCamera().Dolly(1.2)
    simple.SaveScreenshot(a.png, v, ImageResolution=[w, h])
    print(f"{a.png}: t = {t} s of {len(times)} snapshots")


main()
