//! Constitutive laws: pure functions of (geometry, pair parameters, history) → force.
pub mod linear;
