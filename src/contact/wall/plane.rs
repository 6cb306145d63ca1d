//! The plane wall: one-sided and infinite, its normal towards the spheres (digest A5.1): a
//! sphere's gap is (c − p)·n − r, the contact normal the plane's, the wall's velocity its
//! translation.

use super::{ShapeOf, Wall, WallGeom};
use crate::error::Result;
use crate::material::Material;
use crate::scene::ctx::Ctx;
use crate::V3;
use serde::{Deserialize, Serialize};

/// A plane as a scene gives it: `Wall(point, normal, material, velocity)`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Wall")]
pub struct PlaneSpec {
    /// A point of the plane [m].
    pub point: [f64; 3],
    /// Normal pointing towards the spheres (normalised on read).
    pub normal: [f64; 3],
    pub material: String,
    /// Constant prescribed velocity [m/s] (default fixed).
    #[serde(default)]
    pub velocity: [f64; 3],
}

/// A plane with its unit normal (towards the spheres).
#[derive(Clone, Debug, PartialEq)]
pub struct Plane {
    pub normal: V3,
}

impl ShapeOf for Plane {
    /// u_N = (c − p) · n − r (digest A5.1).
    #[inline(always)]
    fn gap(&self, point: V3, c: V3, r: f64) -> f64 {
        (c - point).dot(&self.normal) - r
    }

    #[inline(always)]
    fn geom(&self, point: V3, vel: V3, c: V3, r: f64) -> WallGeom {
        WallGeom {
            u_n: self.gap(point, c, r),
            n: self.normal,
            v: vel,
            w: V3::zeros(),
        }
    }

    fn direction(&self) -> V3 {
        self.normal
    }

    fn plane_normal(&self) -> Option<V3> {
        Some(self.normal)
    }
}

impl Plane {
    /// The wall of `spec`: finite numbers, a normal that normalises, and not the same plane
    /// and side as an earlier plane, nor facing one with no room between them.
    pub fn from_spec(
        ctx: &Ctx,
        p: &str,
        w: &PlaneSpec,
        mats: &[Material],
        others: &[Wall],
    ) -> Result<Wall> {
        let point = ctx.finite3(&format!("{p}.point"), w.point)?;
        let normal = ctx.finite3(&format!("{p}.normal"), w.normal)?;
        let vel = ctx.finite3(&format!("{p}.velocity"), w.velocity)?;
        if normal.norm() == 0.0 {
            return Err(ctx.err(&format!("{p}.normal"), "must not be zero"));
        }
        let normal = normal.normalize();
        let unit = (normal.norm() - 1.0).abs() < 1e-9;
        if !unit {
            // |n|² overflowed (components ~1e200): normalising gave 0 or NaN
            return Err(ctx.err(
                &format!("{p}.normal"),
                "too large to normalise: give a unit vector",
            ));
        }
        let material = ctx.material(&format!("{p}.material"), &w.material, mats)?;
        for (m, o) in others.iter().enumerate() {
            let Some(on) = o.plane_normal() else {
                continue;
            };
            let c = normal.dot(&on);
            let gap = (point - o.point).dot(&on);
            if c > 1.0 - 1e-12 && gap.abs() <= 1e-12 * (1.0 + point.norm()) {
                return Err(ctx.err(p, format!("overlaps walls[{m}]: same plane and side")));
            }
            if c < -1.0 + 1e-12 && gap <= 0.0 {
                return Err(ctx.err(
                    p,
                    format!("overlaps walls[{m}]: the two facing walls leave no room between them"),
                ));
            }
        }
        Ok(Wall::plane(point, normal, vel, material))
    }
}
