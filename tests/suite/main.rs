//! The integration tests in one binary (one link instead of one per file; the test threads
//! interleave the files' tests). Each file is a module; `alloc.rs` (its own global allocator)
//! and `physics.rs` (also run in the debug build by scripts/test.sh) stay binaries of their own.
//! `cargo test --test suite energy::` runs one file's tests.

#[path = "../common.rs"]
mod common;
#[path = "../support/mod.rs"]
mod support;

mod analysis;
mod bad_input;
mod balance;
mod cell;
mod cell_mpi;
mod checkpoint;
mod chung_ooi;
mod cli;
mod corrupt;
mod cpm;
mod cpm_mpi;
mod cylinder_wall;
mod determinism;
mod distributed_setup;
mod energy;
mod faults;
mod force_engine;
mod fuzz_scenes;
mod gpu;
mod inlets;
mod lammps_hooke;
mod mesh;
mod mesh_mpi;
mod mpi;
mod out_lock;
mod outlets;
mod outputs;
mod protocol;
mod rolling;
mod scaling_memory;
mod scene_props;
mod servo_walls;
mod settle;
mod setup_signals;
mod silo;
mod slurm;
mod strainer;
mod xdmf_readers;
