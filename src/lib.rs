//! demhpc — Discrete Element Method solver for HPC clusters.
//!
//! The DEM loop of Yade/Woo (thesis ch. 2, seed 001) in plain Rust: one module per concept of the
//! loop. MPI is touched only in [`domain`], HDF5 only in [`io`], so the physics can be driven by unit
//! tests without `mpirun`. See `docs/ARCHITECTURE.md`.

pub mod cell;
pub mod collide;
pub mod contact;
pub mod domain;
pub mod engines;
pub mod error;
pub mod forces;
pub mod gpu;
pub mod integrate;
pub mod io;
pub mod kernel;
pub mod material;
pub mod mesh;
pub mod particles;
pub mod run;
pub mod scene;
pub mod sched;
pub mod signals;
pub mod sim;
pub mod timestep;
pub mod usage;

pub use error::Error;
pub use sim::Simulation;

/// 3-vector of `f64`, the one vector type of the code.
pub type V3 = nalgebra::Vector3<f64>;
/// Orientation of a body (local → global).
pub type Quat = nalgebra::UnitQuaternion<f64>;
/// 3×3 matrix of `f64` (cell matrices, velocity gradients, stress tensors).
pub type M3 = nalgebra::Matrix3<f64>;
