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

/// Read and validate the meshes. `cell`: the broad phase's smallest cell (2 (r_max + skin));
/// `dt`: the time step (a mesh may not move further than the smallest sphere's radius in one).
pub(super) fn build_meshes(
    ctx: &Ctx,
    specs: &[MeshSpec],
    mats: &[Material],
    cell: f64,
    spheres: &Summary,
    dt: f64,
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
        check_speed(ctx, &p, &mesh, spheres.rmin, dt)?;
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

/// A mesh whose fastest point moves more than the smallest sphere's radius in one step would
/// pass through spheres between two steps (and `omega: 1e300` made every pose, and with it
/// the friction of its contacts, meaningless): refused at the motion's field, naming the
/// speed (issue 32). Fixed meshes, and scenes without initial spheres, are not checked.
fn check_speed(ctx: &Ctx, p: &str, mesh: &Mesh, rmin: f64, dt: f64) -> Result<()> {
    let vertices = || mesh.body.iter().flatten();
    let (field, speed, what) = match mesh.motion {
        Motion::Fixed => return Ok(()),
        Motion::Translate { velocity } => (
            "velocity",
            velocity.norm(),
            format!("{:e} m/s", velocity.norm()),
        ),
        Motion::Rotate {
            point, axis, omega, ..
        } => {
            // the vertex farthest from the axis
            let arm = vertices()
                .map(|v| (v - point).cross(&axis).norm())
                .fold(0.0, f64::max);
            let what =
                format!("{omega:e} rad/s at {arm:.4e} m from the axis (its farthest vertex)");
            ("omega", omega.abs() * arm, what)
        }
        Motion::Oscillate {
            amplitude,
            frequency,
            ..
        } => {
            let v = amplitude.norm() * 2.0 * std::f64::consts::PI * frequency;
            ("frequency", v, format!("{v:e} m/s at most"))
        }
        Motion::Table { ref points } => {
            let v = points
                .windows(2)
                .map(|w| (w[1].1 - w[0].1).norm() / (w[1].0 - w[0].0))
                .fold(0.0, f64::max);
            ("points", v, format!("{v:e} m/s at most"))
        }
    };
    let step = speed * dt;
    if !rmin.is_finite() || step <= rmin {
        return Ok(());
    }
    Err(ctx.err(
        &format!("{p}.motion.{field}"),
        format!(
            "{what} moves the mesh {step:.3e} m per step of {dt:.3e} s, more than the smallest \
             sphere's radius {rmin:.3e} m: spheres would pass through it (a unit mistake? \
             omega is in rad/s)"
        ),
    ))
}

/// A mesh that lies wholly outside the domain — beyond it by more than the largest radius on
/// some side, over the whole run (`swept`: the box it sweeps) — can never touch a sphere: most
/// likely a `translate` or a `scale` in other units. Warned (issue 32), naming the mesh.
pub(super) fn warn_outside(ctx: &Ctx, k: usize, swept: (V3, V3), domain: (V3, V3), rmax: f64) {
    let (lo, hi) = swept;
    let (dlo, dhi) = (domain.0.add_scalar(-rmax), domain.1.add_scalar(rmax));
    if (0..3).all(|a| hi[a] >= dlo[a] && lo[a] <= dhi[a]) {
        return;
    }
    let v = |x: &V3| format!("({:.4e}, {:.4e}, {:.4e})", x.x, x.y, x.z);
    let e = ctx.err(
        &format!("meshes[{k}].file"),
        format!(
            "meshes[{k}] lies entirely outside the domain: the mesh spans {} to {} m, the \
             domain {} to {} m — no sphere can touch it (a `translate` or `scale` mistake?)",
            v(&lo),
            v(&hi),
            v(&domain.0),
            v(&domain.1)
        ),
    );
    log::warn!("{e}");
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
