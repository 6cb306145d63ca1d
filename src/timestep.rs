//! Critical time step (thesis §2.5.6, digest A10).

use crate::material::Material;
use crate::particles::Particles;

/// P-wave estimate Δt = min_i r_i sqrt(ρ_i / E_i) (thesis eq. 2.85–2.86, digest A10.3,
/// Yade `utils.PWaveTimeStep`) over the owned particles; +∞ without particles.
pub fn pwave(ps: &Particles, mats: &[Material]) -> f64 {
    (0..ps.n_owned)
        .map(|i| {
            let m = &mats[ps.material[i] as usize];
            m.pwave_step(ps.radius[i])
        })
        .fold(f64::INFINITY, f64::min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::material::FrictMat;
    use crate::particles::Particle;
    use crate::V3;

    #[test]
    fn pwave_of_settle_material() {
        // r = 0.9 mm, ρ = 2600, E = 1e7: Δt = 0.9e-3 · sqrt(2.6e-4) = 1.4512e-5 s.
        let mats = vec![Material::Frict(FrictMat {
            name: "a".into(),
            young: 1e7,
            poisson: 0.25,
            friction_angle: 0.5,
            friction: None,
            density: 2600.0,
            restitution: None,
        })];
        let mut ps = Particles::default();
        ps.push_owned(&Particle::sphere(0, V3::zeros(), 1e-3, 2600.0, 0));
        ps.push_owned(&Particle::sphere(1, V3::zeros(), 0.9e-3, 2600.0, 0));
        let dt = pwave(&ps, &mats);
        assert!((dt - 0.9e-3 * (2600.0f64 / 1e7).sqrt()).abs() < 1e-18);
    }
}
