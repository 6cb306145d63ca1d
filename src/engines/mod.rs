//! Boundary controllers that act between steps (thesis §1.1 step 4, "other force engines").

pub mod strainer;
