//! The vector width of the two vectorised loops (the contact law in batches,
//! `contact/batch.rs`, and the integrator in blocks, `integrate.rs`), chosen once per loop from
//! the CPU's features: the generic build targets x86-64 (SSE2, 2 lanes), and the same code is
//! compiled a second and third time with AVX2 (4 lanes) and AVX-512 (8 lanes) enabled.
//!
//! Two gather-bound passes of the contact loop (the distance test and the filling of the law's
//! lanes, `contact/batch.rs`) have hand-written AVX-512 versions (gathers, which the compiler
//! does not emit for generic tuning) beside their scalar ones, picked by the same [`Kernel`].
//!
//! All variants give the same bits: the loops use only IEEE operations that are correctly
//! rounded lane by lane (+, −, ×, ÷, √, comparisons and selects), never a fused multiply–add
//! (Rust does not contract) nor a reassociated sum. Tests compare every variant this CPU runs
//! with the scalar code, bit for bit.

/// A compiled variant of the vectorised loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    Generic,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Kernel {
    /// The widest variant this CPU runs (the detection is cached by std).
    pub fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Kernel::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return Kernel::Avx2;
            }
        }
        Kernel::Generic
    }
}
