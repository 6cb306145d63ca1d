//! The frictional laws' pair mixing as one closed enum: each arm a law's [`PairConsts`] (its
//! `<law>/material.rs`), one `match` (`each_mix!`). The law files do not name this enum (they
//! return their own constants, [`LawMaterial::mix`](super::material::LawMaterial::mix)):
//! dependencies run from here to the laws only.

use super::hertz::material::HertzMix;
use super::hooke::material::HookeMix;
use super::linear::material::LinearMix;
use super::material::PairConsts;
use super::FrictPhys;

/// The frictional law's part of a material pair's mixing (`crate::material::PairMix`), one arm
/// per law, each a [`PairConsts`] of its `<law>/material.rs`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MixKind {
    /// Cundall–Strack (`Frict`).
    Linear(LinearMix),
    /// Hertz–Mindlin.
    Hertz(HertzMix),
    /// LAMMPS hooke/history.
    Hooke(HookeMix),
}

/// `$e` with `$k` bound to the [`PairConsts`] of `$x`'s arm: the one `match` over [`MixKind`].
macro_rules! each_mix {
    ($x:expr, $k:ident => $e:expr) => {
        match $x {
            MixKind::Linear($k) => $e,
            MixKind::Hertz($k) => $e,
            MixKind::Hooke($k) => $e,
        }
    };
}

impl MixKind {
    /// [`PairConsts::phys`] of this law.
    #[inline]
    pub fn phys(&self, tan_phi: f64, r1: f64, r2: f64, m_eff: f64) -> FrictPhys {
        each_mix!(self, k => k.phys(tan_phi, r1, r2, m_eff))
    }

    /// [`PairConsts::wall_phys`] of this law.
    #[inline]
    pub fn wall_phys(&self, tan_phi: f64, r: f64, m: f64) -> FrictPhys {
        each_mix!(self, k => k.wall_phys(tan_phi, r, m))
    }

    /// [`PairConsts::gpu_row`] of this law.
    pub fn gpu_row(&self, row: &mut [f64]) {
        each_mix!(self, k => k.gpu_row(row))
    }
}

impl From<LinearMix> for MixKind {
    fn from(k: LinearMix) -> Self {
        MixKind::Linear(k)
    }
}

impl From<HertzMix> for MixKind {
    fn from(k: HertzMix) -> Self {
        MixKind::Hertz(k)
    }
}

impl From<HookeMix> for MixKind {
    fn from(k: HookeMix) -> Self {
        MixKind::Hooke(k)
    }
}

/// A law without pair mixing (CPM) has no value to wrap.
impl From<std::convert::Infallible> for MixKind {
    fn from(k: std::convert::Infallible) -> Self {
        match k {}
    }
}
