//! Walls: rigid boundaries of a shape, replicated on every rank (ARCHITECTURE.md "Walls").
//!
//! A wall is a reference point moving at a constant velocity, a material and a shape; every
//! place that needs a wall's geometry asks the shape through [`Wall`]: the gap of a sphere
//! (contacts, candidates, the Verlet bound, placement checks, inlets), the contact's normal and
//! the wall's own velocity and spin at the contact point (the contact loop), a direction
//! identifying it (checkpoint rows). A contact with a wall is the scene's law with the wall as
//! particle 1, a sphere of infinite radius and mass (`PairMix::wall_phys`).
//!
//! Adding a shape: a file with its type (an impl of [`ShapeOf`]), its spec (the RON variant's
//! fields) and `from_spec`, and one arm of the `shapes!` list below.

pub mod cylinder;
pub mod plane;

use crate::error::Result;
use crate::material::Material;
use crate::scene::ctx::Ctx;
use crate::V3;
use serde::{Deserialize, Serialize};

/// A wall, replicated on every rank.
#[derive(Clone, Debug, PartialEq)]
pub struct Wall {
    /// The shape's reference point at the current time (a point of a plane, a point of a
    /// cylinder's axis).
    pub point: V3,
    /// Constant prescribed velocity of the reference point.
    pub vel: V3,
    pub material: u16,
    pub shape: Shape,
}

/// A sphere's contact with a wall at a step (wall = particle 1).
#[derive(Clone, Copy, Debug)]
pub struct WallGeom {
    /// Normal displacement, negative in penetration.
    pub u_n: f64,
    /// Unit normal from the wall to the sphere.
    pub n: V3,
    /// The wall's velocity at the contact point.
    pub v: V3,
    /// The wall's angular velocity.
    pub w: V3,
}

/// What a wall shape answers (each shape's file).
pub trait ShapeOf {
    /// u_N of a sphere at `c` of radius `r` against the shape placed at `point`.
    fn gap(&self, point: V3, c: V3, r: f64) -> f64;
    /// The contact of that sphere with the shape moving at `vel`.
    fn geom(&self, point: V3, vel: V3, c: V3, r: f64) -> WallGeom;
    /// A unit direction that identifies the shape's orientation (checkpoint rows; a plane's
    /// normal, a cylinder's axis).
    fn direction(&self) -> V3;
    /// The unit normal of a plane (servo walls, the default domain); `None` for other shapes.
    fn plane_normal(&self) -> Option<V3> {
        None
    }
}

/// The closed set of wall shapes: one arm each, `RonName(Type, Spec)` (the scene writes
/// `RonName(...)` in `walls`).
macro_rules! shapes {
    ($($v:ident($t:ty, $spec:ty)),* $(,)?) => {
        /// A wall's shape (closed enum).
        #[derive(Clone, Debug, PartialEq)]
        pub enum Shape {
            $($v($t)),*
        }

        /// A wall as a scene gives it: the shape's name and fields.
        #[derive(Clone, Debug, Serialize, Deserialize)]
        pub enum WallSpec {
            $($v($spec)),*
        }

        impl Shape {
            #[inline(always)]
            fn get(&self) -> &dyn ShapeOf {
                match self {
                    $(Shape::$v(s) => s),*
                }
            }
        }

        impl Wall {
            /// The wall of `spec` (`path`: its field path), checked against the walls before it.
            pub fn from_spec(
                ctx: &Ctx,
                path: &str,
                spec: &WallSpec,
                mats: &[Material],
                others: &[Wall],
            ) -> Result<Wall> {
                match spec {
                    $(WallSpec::$v(s) => <$t>::from_spec(ctx, path, s, mats, others)),*
                }
            }

            /// u_N of a sphere at `c` of radius `r`: negative in penetration.
            #[inline(always)]
            pub fn gap(&self, c: V3, r: f64) -> f64 {
                match &self.shape {
                    $(Shape::$v(s) => s.gap(self.point, c, r)),*
                }
            }

            /// The contact geometry of a sphere at `c` of radius `r`.
            #[inline(always)]
            pub fn geom(&self, c: V3, r: f64) -> WallGeom {
                match &self.shape {
                    $(Shape::$v(s) => s.geom(self.point, self.vel, c, r)),*
                }
            }
        }
    };
}

shapes! {
    Wall(plane::Plane, plane::PlaneSpec),
    Cylinder(cylinder::Cylinder, cylinder::CylinderSpec),
}

impl Wall {
    /// A direction identifying the wall's orientation (checkpoint rows).
    pub fn direction(&self) -> V3 {
        self.shape.get().direction()
    }

    /// The unit normal of a plane wall (towards the spheres); `None` for other shapes.
    pub fn plane_normal(&self) -> Option<V3> {
        self.shape.get().plane_normal()
    }

    /// A plane wall through `point` with unit `normal` (tests, tools).
    pub fn plane(point: V3, normal: V3, vel: V3, material: u16) -> Wall {
        Wall {
            point,
            vel,
            material,
            shape: Shape::Wall(plane::Plane { normal }),
        }
    }
}
