//! Constitutive laws: pure functions of (geometry, pair parameters, history) → force.
pub mod cpm;
pub mod linear;
