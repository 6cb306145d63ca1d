//! The infinite cylinder wall (Woo `InfCylinder`; a drum without an STL): an axis through a
//! point with a unit direction e, a radius R, the spheres inside it (a drum) or outside it (a
//! pipe, a roller), turning about its axis at ω (rad/s, right-handed about e).
//!
//! For a sphere at c of radius r, with d = (c − p) − e ((c − p)·e) its offset from the axis and
//! ρ = |d|: inside, u_N = R − ρ − r and the normal from the wall to the sphere is −d/ρ;
//! outside, u_N = ρ − R − r and the normal d/ρ. The contact point on the wall is p + e(...) +
//! R d/ρ, where the wall moves at v_wall + ω e × (R d/ρ) (its translation and its turning
//! surface); its spin is ω e. On the axis (ρ = 0) the normal is any direction across it.

use super::{ShapeOf, Wall, WallGeom};
use crate::error::Result;
use crate::material::Material;
use crate::scene::ctx::Ctx;
use crate::V3;
use serde::{Deserialize, Serialize};

/// A cylinder as a scene gives it: `Cylinder(point, axis, radius, inside, material, velocity,
/// omega)`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Cylinder")]
pub struct CylinderSpec {
    /// A point of the axis [m].
    pub point: [f64; 3],
    /// The axis' direction (normalised on read).
    pub axis: [f64; 3],
    /// Radius [m].
    pub radius: f64,
    /// The spheres are inside (a drum, default) or outside (a pipe).
    #[serde(default = "yes")]
    pub inside: bool,
    pub material: String,
    /// Constant prescribed velocity of the axis [m/s] (default fixed).
    #[serde(default)]
    pub velocity: [f64; 3],
    /// Angular velocity about the axis [rad/s], right-handed about `axis` (default 0).
    #[serde(default)]
    pub omega: f64,
}

fn yes() -> bool {
    true
}

/// An infinite cylinder (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct Cylinder {
    /// Unit axis e.
    pub axis: V3,
    pub radius: f64,
    pub inside: bool,
    pub omega: f64,
}

impl Cylinder {
    /// The offset d of `c` from the axis through `point`, and the unit radial direction d/ρ
    /// (a fixed direction across the axis when ρ = 0).
    #[inline(always)]
    fn radial(&self, point: V3, c: V3) -> (f64, V3) {
        let x = c - point;
        let d = x - self.axis * x.dot(&self.axis);
        let rho = d.norm();
        let across = match self.axis.x.abs() < 0.9 {
            true => self.axis.cross(&V3::x()).normalize(),
            false => self.axis.cross(&V3::y()).normalize(),
        };
        (rho, if rho > 0.0 { d / rho } else { across })
    }
}

impl ShapeOf for Cylinder {
    #[inline(always)]
    fn gap(&self, point: V3, c: V3, r: f64) -> f64 {
        let (rho, _) = self.radial(point, c);
        match self.inside {
            true => self.radius - rho - r,
            false => rho - self.radius - r,
        }
    }

    #[inline(always)]
    fn geom(&self, point: V3, vel: V3, c: V3, r: f64) -> WallGeom {
        let (rho, out) = self.radial(point, c);
        let (u_n, n) = match self.inside {
            true => (self.radius - rho - r, -out),
            false => (rho - self.radius - r, out),
        };
        let w = self.axis * self.omega;
        WallGeom {
            u_n,
            n,
            v: vel + w.cross(&(out * self.radius)),
            w,
        }
    }

    fn direction(&self) -> V3 {
        self.axis
    }
}

impl Cylinder {
    /// The wall of `spec`: finite numbers, an axis that normalises, a positive radius.
    pub fn from_spec(
        ctx: &Ctx,
        p: &str,
        s: &CylinderSpec,
        mats: &[Material],
        _others: &[Wall],
    ) -> Result<Wall> {
        let point = ctx.finite3(&format!("{p}.point"), s.point)?;
        let axis = ctx.finite3(&format!("{p}.axis"), s.axis)?;
        let vel = ctx.finite3(&format!("{p}.velocity"), s.velocity)?;
        let radius = ctx.positive(&format!("{p}.radius"), s.radius)?;
        if !s.omega.is_finite() {
            return Err(ctx.err(&format!("{p}.omega"), "must be finite"));
        }
        let axis = axis.normalize();
        let unit = (axis.norm() - 1.0).abs() < 1e-9; // false for 0 or NaN (a zero axis)
        if !unit {
            return Err(ctx.err(
                &format!("{p}.axis"),
                "must not be zero (and a unit vector if its components are huge)",
            ));
        }
        let material = ctx.material(&format!("{p}.material"), &s.material, mats)?;
        Ok(Wall {
            point,
            vel,
            material,
            shape: super::Shape::Cylinder(Cylinder {
                axis,
                radius,
                inside: s.inside,
                omega: s.omega,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_normals_and_surface_velocity_inside_and_outside() {
        let (p, e) = (V3::new(1.0, 0.0, 0.0), V3::y());
        let mut cyl = Cylinder {
            axis: e,
            radius: 2.0,
            inside: true,
            omega: 3.0,
        };
        // a sphere below the axis, 0.5 from the wall inside
        let c = V3::new(1.0, 7.0, -1.2);
        let g = cyl.geom(p, V3::zeros(), c, 0.3);
        assert!((g.u_n - 0.5).abs() < 1e-15);
        assert!((g.n - V3::z()).norm() < 1e-15, "towards the axis: {}", g.n);
        // the surface below the axis moves at ω e × (−R z) = 3 y × (−2 z) = −6 x
        assert!((g.v - V3::new(-6.0, 0.0, 0.0)).norm() < 1e-14, "{}", g.v);
        assert_eq!(g.w, e * 3.0);
        assert!((cyl.gap(p, c, 0.3) - g.u_n).abs() == 0.0);
        cyl.inside = false;
        let c = V3::new(4.5, -2.0, 0.0);
        let g = cyl.geom(p, V3::zeros(), c, 1.0);
        assert!((g.u_n - 0.5).abs() < 1e-15 && (g.n - V3::x()).norm() < 1e-15);
        // on the axis: some unit normal across it, no NaN
        let g = cyl.geom(p, V3::zeros(), p + e, 0.1);
        assert!((g.n.norm() - 1.0).abs() < 1e-15 && g.n.dot(&e).abs() < 1e-15);
    }
}
