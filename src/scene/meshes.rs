//! The scene's meshes: STL files read, transformed, validated (docs/scene-format.md
//! "Meshes"). Errors are placed at the mesh's field in the scene (`file:line:col`) and name
//! the STL file, the triangle and (ASCII) its line: `meshes[0].file: drum.stl: triangle 12
//! (line 87): zero area …`.

use super::schema::{MeshSpec, MotionSpec};
use super::source::Summary;
use super::Ctx;
use crate::error::Result;
use crate::material::Material;
use crate::mesh::{stl, Mesh, Motion, MAX_FACETS};
use crate::V3;
use nalgebra::{Rotation3, Unit};

/// Largest STL file read (bytes): a binary file of [`MAX_FACETS`] triangles is 50 MB, ASCII
/// about five times that.
const MAX_STL_BYTES: u64 = 512 << 20;

/// Read and validate the meshes. `cell`: the broad phase's smallest cell (2 (r_max + skin)).
pub(super) fn build_meshes(
    ctx: &Ctx,
    specs: &[MeshSpec],
    mats: &[Material],
    cell: f64,
    spheres: &Summary,
) -> Result<Vec<Mesh>> {
    let mut out = Vec::new();
    let mut total = 0usize;
    for (k, spec) in specs.iter().enumerate() {
        let p = format!("meshes[{k}]");
        let material = ctx.material(&format!("{p}.material"), &spec.material, mats)?;
        let scale = ctx.positive(&format!("{p}.scale"), spec.scale)?;
        let shift = ctx.finite3(&format!("{p}.translate"), spec.translate)?;
        let rot = match spec.rotate {
            None => Rotation3::identity(),
            Some((axis, angle)) => {
                let a = ctx.finite3(&format!("{p}.rotate"), axis)?;
                if a.norm() == 0.0 || !a.norm().is_finite() || !angle.is_finite() {
                    return Err(ctx.err(
                        &format!("{p}.rotate"),
                        "needs a non-zero finite axis and a finite angle [rad]",
                    ));
                }
                Rotation3::from_axis_angle(&Unit::new_normalize(a), angle)
            }
        };
        let motion = motion(ctx, &p, &spec.motion)?;
        let path = ctx.data_path(&format!("{p}.file"), &spec.file)?;
        let fail = |msg: String| ctx.err(&format!("{p}.file"), format!("{}: {msg}", spec.file));
        let len = std::fs::metadata(&path)
            .map_err(|e| fail(e.to_string()))?
            .len();
        if len > MAX_STL_BYTES {
            return Err(fail(format!("{len} bytes: at most {MAX_STL_BYTES}")));
        }
        let bytes = std::fs::read(&path).map_err(|e| fail(e.to_string()))?;
        let mut s = stl::parse(&bytes, MAX_FACETS - total).map_err(|e| fail(e.to_string()))?;
        if s.tris.is_empty() {
            return Err(fail("no triangles".into()));
        }
        for t in &mut s.tris {
            for v in t.iter_mut() {
                *v = rot * (*v * scale) + shift;
            }
        }
        stl::validate(&s).map_err(|e| fail(e.to_string()))?;
        total += s.tris.len();
        let mesh = Mesh::new(spec.file.clone(), material, s.tris, motion, cell);
        warn_scale(ctx, &p, &mesh, spheres);
        out.push(mesh);
    }
    Ok(out)
}

fn motion(ctx: &Ctx, p: &str, m: &MotionSpec) -> Result<Motion> {
    let at = |f: &str| format!("{p}.motion.{f}");
    Ok(match *m {
        MotionSpec::Fixed => Motion::Fixed,
        MotionSpec::Translate { velocity } => Motion::Translate {
            velocity: ctx.finite3(&at("velocity"), velocity)?,
        },
        MotionSpec::Rotate { point, axis, omega } => {
            let a = ctx.finite3(&at("axis"), axis)?;
            if a.norm() == 0.0 || !a.norm().is_finite() {
                return Err(ctx.err(&at("axis"), "must be non-zero (and not overflow)"));
            }
            if !omega.is_finite() {
                return Err(ctx.err(&at("omega"), format!("must be finite, got {omega}")));
            }
            Motion::Rotate {
                point: ctx.finite3(&at("point"), point)?,
                axis: a.normalize(),
                omega,
            }
        }
        MotionSpec::Table { ref points } => {
            if points.len() < 2 {
                return Err(ctx.err(
                    &at("points"),
                    "needs at least two (time, displacement) points",
                ));
            }
            let mut out: Vec<(f64, V3)> = Vec::with_capacity(points.len());
            for (k, &(t, s)) in points.iter().enumerate() {
                let f = at(&format!("points[{k}]"));
                if !t.is_finite() || out.last().is_some_and(|p| t <= p.0) {
                    return Err(ctx.err(
                        &f,
                        format!("time {t}: times must be finite and strictly increasing"),
                    ));
                }
                out.push((t, ctx.finite3(&f, s)?));
            }
            Motion::Table { points: out }
        }
        MotionSpec::Oscillate {
            amplitude,
            frequency,
            phase,
        } => {
            if !phase.is_finite() {
                return Err(ctx.err(&at("phase"), format!("must be finite, got {phase}")));
            }
            Motion::Oscillate {
                amplitude: ctx.finite3(&at("amplitude"), amplitude)?,
                frequency: ctx.non_negative(&at("frequency"), frequency)?,
                phase,
            }
        }
    })
}

/// A mesh 1000 times larger than the spheres' bounding box is most likely in other units
/// (an STL in mm read as m): warn, naming the `scale` to fix.
fn warn_scale(ctx: &Ctx, p: &str, mesh: &Mesh, spheres: &Summary) {
    let (lo, hi) = mesh.bbox();
    let m = (hi - lo).norm();
    let s = (spheres.ext_hi - spheres.ext_lo).norm();
    if s > 0.0 && m >= 1000.0 * s {
        let e = ctx.err(
            &format!("{p}.scale"),
            format!(
            "the mesh ({m:.3e} m across) is {:.0} times the spheres' bounding box ({s:.3e} m): \
             a unit mistake? (an STL in mm needs scale: 0.001)",
            m / s
        ),
        );
        log::warn!("{e}");
    }
}

/// The box a mesh may reach during the run (its motion swept over `t_end` seconds), for the
/// default domain.
pub(super) fn swept_box(mesh: &Mesh, t_end: f64) -> (V3, V3) {
    let (lo, hi) = mesh.bbox();
    match mesh.motion {
        Motion::Fixed => (lo, hi),
        Motion::Translate { velocity } => {
            let d = velocity * t_end;
            (lo.inf(&(lo + d)), hi.sup(&(hi + d)))
        }
        Motion::Rotate { point, .. } => (
            point - V3::repeat(mesh.reach),
            point + V3::repeat(mesh.reach),
        ),
        Motion::Oscillate { amplitude, .. } => {
            let a = amplitude.abs() * 2.0;
            (lo - a, hi + a)
        }
        // s(t) stays in the box of the table's points
        Motion::Table { ref points } => points.iter().fold((lo, hi), |(l, h), (_, s)| {
            (l.inf(&(lo + s)), h.sup(&(hi + s)))
        }),
    }
}
