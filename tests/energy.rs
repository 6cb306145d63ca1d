//! The energy budget (issue 23, scene `energy: true`; Yade `O.energy`): kinetic + elastic +
//! dissipated (friction, dashpots, damping) − work done (gravity, the deforming cell's
//! boundary) stays constant.

mod common;

use common::*;

/// The triaxial test of tests/cell.rs (300 spheres, iso compression frictionless, then shear
/// with tan φ = 0.5 at constant lateral stress to 2 % axial strain), with energy tracking.
fn triax() -> String {
    periodic_packing(
        0.35,
        "energy: true,\n    output: Output(series_every: 0),",
        &triax_stages(1e-2, 1e-3),
    )
}

/// Over the whole triaxial test (compaction of a granular gas through jamming, then shear), the
/// total kinetic + elastic + dissipated − boundary work changes by less than 1e-3 of the work
/// the boundary put in (measured 5.4e-4 at Δt = 0.35 of the p-wave step; it scales as Δt²,
/// the leapfrog's truncation at the contacts' start and end, see the next test), and over the
/// shear stage alone by less than 2e-4 of that stage's input (measured 4.9e-5). The terms: the
/// boundary's work positive (compression of a stressed packing), friction dissipating only
/// once the friction is on, damping dissipating, no gravity.
#[test]
fn triaxial_energy_budget_closes() {
    let mut s = sim(&triax());
    let b0 = s.energy_budget().unwrap();
    let mut at_shear = None;
    for _ in 0..400 {
        steps(&mut s, 500);
        let c = s.cell.as_ref().unwrap();
        if at_shear.is_none() && c.stage == 1 {
            at_shear = Some(s.energy_budget().unwrap());
        }
        if s.finished() {
            break;
        }
    }
    assert!(s.finished(), "the test did not end");
    let b1 = at_shear.expect("reached the shear stage");
    let b = s.energy_budget().unwrap();
    let whole = (b.total() - b0.total()).abs() / b.boundary;
    let shear = (b.total() - b1.total()).abs() / (b.boundary - b1.boundary);
    eprintln!("{b:?}\nclosure: whole test {whole:e}, shear stage {shear:e}");
    assert!(whole < 1e-3, "whole test: {whole:e} of the input work");
    assert!(shear < 2e-4, "shear stage: {shear:e} of its input work");
    assert!(b.boundary > 0.0 && b.damping > 0.0 && b.gravity == 0.0);
    // (b1 is taken up to 500 steps into the shear stage)
    assert!(
        b1.friction < 1e-3 * b.friction,
        "friction dissipated while frictionless"
    );
    assert!(b.friction > 0.1 * (b.boundary - b1.boundary), "{b:?}");
    assert_eq!(b.viscous, 0.0);
}

/// An undamped, frictionless granular gas (40 spheres, periodic box, elastic collisions): the
/// integrator's bookkeeping is exact — the damping term, the forces' work less the change of
/// kinetic energy, stays at round-off (< 1e-12 of the kinetic energy; measured 1e-20 J of
/// 1e-5 J) — and the total drifts only by the leapfrog's truncation error at the collisions,
/// second order in Δt: max |ΔE|/E = 2.3e-3, 6.7e-4, 1.6e-4 for Δt = 0.3, 0.15, 0.075 of the
/// p-wave step (each halving divides it by 3–5 here; asserted ≥ 2.5), over the same 0.062 s.
/// The physical budget cannot close to round-off with a fixed step: a contact switches on
/// between two steps, and the first step in contact stores ½ k δ² of an overlap the
/// integrator did not pass through.
#[test]
fn elastic_collisions_conserve_energy_to_second_order() {
    let mut drifts = Vec::new();
    for (sf, n) in [(0.3, 5000), (0.15, 10000), (0.075, 20000)] {
        let text = format!(
            "Scene(
    materials: [Frict(name: \"g\", young: 1e8, poisson: 0.3, friction_angle: 0.0, density: 2650.0)],
    spheres: [RandomFill(material: \"g\", lo: (0.0, 0.0, 0.0), hi: (0.006, 0.006, 0.006), count: 40,
                         radius: 0.0005, polydispersity: 0.2, seed: 5)],
    dt: PWave({sf}),
    run: Steps(4000000),
    energy: true,
    domain: Domain(lo: (0.0, 0.0, 0.0), hi: (0.006, 0.006, 0.006), periodic: (true, true, true)),
    output: Output(series_every: 0),
)"
        );
        let mut s = sim(&text);
        for i in 0..s.ps.n_owned {
            let g = s.ps.gid[i] as f64;
            s.ps.vel[i] = demhpc::V3::new((g * 1.3).sin(), (g * 2.1).cos(), (g * 0.7).sin()) * 0.5;
        }
        let b0 = s.energy_budget().unwrap();
        let mut worst: f64 = 0.0;
        for _ in 0..20 {
            steps(&mut s, n);
            let b = s.energy_budget().unwrap();
            worst = worst.max(((b.total() - b0.total()) / b0.total()).abs());
            assert!(b.damping.abs() < 1e-12 * b.kinetic, "{b:?}");
            assert!(b.friction == 0.0 && b.viscous == 0.0 && b.gravity == 0.0);
        }
        eprintln!(
            "Δt = {sf} p-wave: max |ΔE|/E = {worst:e} over {:.4} s",
            s.time
        );
        drifts.push(worst);
    }
    for w in drifts.windows(2) {
        assert!(w[0] / w[1] >= 2.5, "not second order: {drifts:?}");
    }
    assert!(drifts[2] < 3e-4, "{drifts:?}");
}
