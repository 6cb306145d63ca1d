//! The deforming periodic cell (issue 23), driven through the library (one process):
//! homothetic motion of a lattice, the Love–Weber stress of a simple cubic lattice, cell
//! flipping, and the stress servo on a small packing.

use crate::common;

use common::*;
use demhpc::{Simulation, M3, V3};
use std::collections::HashMap;

/// A simple cubic lattice of 4³ spheres of radius `r` (± `jitter` m of deterministic noise per
/// coordinate, radius × (1 ± 5 % noise) with jitter), spacing a = 2 mm, in the fully periodic
/// cell 8 mm wide (the lattice fills it: every sphere has 6 neighbours at a, across the faces
/// too), written to a text file; Cundall–Strack E = 1e8 Pa, kt/kn = 0.3, tan φ = 0.5, no
/// damping; `cell` is the scene's `cell` field.
fn lattice(r: f64, jitter: f64, cell: &str) -> String {
    static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let path = std::env::temp_dir().join(format!("demhpc-cell-{}-{n}.txt", std::process::id()));
    let mut t = String::new();
    let mut seed = 12345u64;
    let mut u = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    for k in 0..4 {
        for j in 0..4 {
            for i in 0..4 {
                let c = |m: usize| 1e-3 + 2e-3 * m as f64;
                let (x, y, z) = (
                    c(i) + jitter * u(),
                    c(j) + jitter * u(),
                    c(k) + jitter * u(),
                );
                let rr = if jitter > 0.0 {
                    r * (1.0 + 0.1 * u())
                } else {
                    r
                };
                t += &format!("{x:?} {y:?} {z:?} {rr:?}\n");
            }
        }
    }
    std::fs::write(&path, t).unwrap();
    format!(
        "Scene(
    materials: [Frict(name: \"g\", young: 1e8, poisson: 0.3, friction_angle: 0.4636476090008061, density: 2650.0)],
    spheres: [TextFile(path: {path:?}, material: \"g\")],
    dt: Fixed(2e-6),
    skin: 0.0002,
    run: Steps(1000000),
    domain: Domain(lo: (0.0, 0.0, 0.0), hi: (0.008, 0.008, 0.008), periodic: (true, true, true)),
    output: Output(series_every: 0),
    cell: {cell},
)"
    )
}

/// A general velocity gradient: compression on all axes (the lattice's contacts stay closed),
/// shear in three planes and a spin.
fn gradient() -> M3 {
    M3::new(-0.8, 0.3, 0.5, -0.2, -0.4, -0.3, 0.1, 0.6, -0.5)
}

fn gradient_ron(l: &M3) -> String {
    let row = |r: usize| format!("({:?}, {:?}, {:?})", l[(r, 0)], l[(r, 1)], l[(r, 2)]);
    format!(
        "Cell(homothetic: HOMO, velocity_gradient: ({}, {}, {}))",
        row(0),
        row(1),
        row(2)
    )
}

/// Homothetic deformation: a simple cubic lattice in contact (overlap 2 µm) under a general
/// gradient L (compression, shear, spin) for 2 000 steps (t = 4 ms, the cell strained by
/// ~0.3 %, the contacts compressed and sheared) moves with the cell: every particle at
/// o + F (x₀ − o) with F = H H₀⁻¹, its fluctuation velocity zero, so every pair's relative
/// velocity is the mean field's L l — to round-off (the lattice's contact forces cancel on
/// every particle by symmetry, to the last bits of the forces). Bounds: |x − F x₀| ≤ 1e-12 a
/// (measured 5e-17 m), |v′| ≤ 1e-8 |L| a (measured ~4e-12 m/s), for both homothetic modes.
/// (With a stretching axis the lattice loses those contacts and, undamped, buckles: the
/// rotations grow from round-off, a physical instability, not tested here.)
#[test]
fn lattice_follows_the_cell_with_zero_fluctuation() {
    let l = gradient();
    for mode in ["Velocity", "Position"] {
        let cell = gradient_ron(&l).replace("HOMO", mode);
        let mut s = sim(&lattice(1.001e-3, 0.0, &cell));
        let x0: HashMap<u64, V3> = (0..s.ps.n_owned)
            .map(|i| (s.ps.gid[i], s.ps.pos[i]))
            .collect();
        let h0 = s.domain.cell.h;
        steps(&mut s, 2000);
        let f = s.domain.cell.h * h0.try_inverse().unwrap();
        assert!(
            (f - M3::identity()).norm() > 1e-3,
            "the cell did not deform"
        );
        let o = s.domain.cell.origin;
        let (a, ln) = (2e-3, l.norm());
        let (mut dx, mut dv): (f64, f64) = (0.0, 0.0);
        for i in 0..s.ps.n_owned {
            let want = o + f * (x0[&s.ps.gid[i]] - o);
            dx = dx.max((s.ps.pos[i] - want).norm());
            dv = dv.max(s.ps.vel[i].norm());
        }
        let n_contacts = s.pairs.active.iter().filter(|&&a| a).count();
        eprintln!("{mode}: |x − F x₀| ≤ {dx:e} m, |v′| ≤ {dv:e} m/s, {n_contacts} contacts");
        assert_eq!(n_contacts, 3 * 64, "the lattice lost contacts");
        assert!(
            dx <= 1e-12 * a,
            "{mode}: positions off the affine map by {dx:e} m"
        );
        assert!(
            dv <= 1e-8 * ln * a,
            "{mode}: fluctuation velocity {dv:e} m/s"
        );
    }
}

/// Love–Weber stress of a simple cubic lattice compressed by δ per contact (radius a/2 + δ/2,
/// a = 2 mm, δ = 4 µm): each sphere has three contacts of its own, one per axis, each pushing
/// with k_N δ (k_N = 2 E r₁r₂/(r₁+r₂) = E r, Yade's FrictPhys), so σ_ii = −k_N δ a / a³ =
/// −k_N δ / a² on every axis and no shear — to 1e-12 relative (the servo's measurement and the
/// series' p = k_N δ / a²).
#[test]
fn simple_cubic_lattice_stress_is_kn_delta_over_area() {
    let (a, delta) = (2e-3, 4e-6);
    let r = 0.5 * (a + delta);
    let mut s = sim(&lattice(r, 0.0, "Cell()"));
    s.record_forces = true;
    steps(&mut s, 1);
    let m = s.cell_measure(true, false);
    let kn = 1e8 * r;
    let want = -kn * delta / (a * a);
    assert_eq!(m.n_contacts, 3 * 64);
    for i in 0..3 {
        for j in 0..3 {
            let got = m.stress[(i, j)];
            match i == j {
                true => assert!(rel(got, want) < 1e-12, "σ{i}{j} = {got:e}, want {want:e}"),
                false => assert!(got.abs() < 1e-12 * want.abs(), "σ{i}{j} = {got:e}"),
            }
        }
    }
    let row = s.stats().cell.expect("cell columns");
    let (p, q) = row.p_q();
    assert!(
        rel(p, -want) < 1e-12 && q.abs() < 1e-9 * p,
        "p {p:e} q {q:e}"
    );
    // the kinetic part: nothing moved yet beyond one step of forces that cancel
    assert!(row.kinetic.norm() < 1e-12 * p);
}

/// A packing in simple shear (the z edge tilting along x) whose tilt passed half the x edge:
/// the rebuild flips the cell to H (I − e_x e_zᵀ) and every interaction keeps its bits —
/// shear and normal force of every contact, and in reproducible mode every particle's total
/// force too (the canonical order depends on the particles, not on the basis); in the default
/// mode the per-particle sums follow the pair list's order, which the new basis changes, so
/// only the pair forces are compared there. The positions after the step are the same bits.
#[test]
fn flipping_the_cell_leaves_every_force_bitwise() {
    // jittered, overlapping spheres: contacts in every direction
    let scene = lattice(
        1.05e-3,
        0.2e-3,
        "Cell(velocity_gradient: ((0.0, 0.0, 5.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))",
    );
    for reproducible in [true, false] {
        let text = scene.replace(
            "skin: 0.0002,",
            &format!("skin: 0.0002, reproducible: {reproducible},"),
        );
        let mut s = sim(&text);
        steps(&mut s, 20);
        // the cell sheared past the flip: tilt 0.6 of the x edge
        let mut h = s.domain.cell.h;
        h[(0, 2)] = 0.6 * h[(0, 0)];
        s.domain.cell.set_h(h);
        s.cell_mut().unwrap().h_ref = h;
        s.invalidate();
        let mut a = s.clone();
        let mut b = s;
        b.cell_mut().unwrap().flip = false;
        steps(&mut a, 1);
        steps(&mut b, 1);
        assert_eq!(a.cell().unwrap().flips, 1);
        assert_eq!(b.cell().unwrap().flips, 0);
        assert!(a.domain.cell.h[(0, 2)] < 0.0 && b.domain.cell.h[(0, 2)] > 0.0);
        let pair_forces = |s: &Simulation| -> HashMap<(u64, u64), [u64; 3]> {
            (0..s.pairs.len())
                .filter(|&k| s.pairs.active[k])
                .map(|k| {
                    let f = s.slots.pair_force(k);
                    (
                        s.pairs.key[k],
                        [f.x.to_bits(), f.y.to_bits(), f.z.to_bits()],
                    )
                })
                .collect()
        };
        let (fa, fb) = (pair_forces(&a), pair_forces(&b));
        assert!(fa.len() > 100, "{} contacts", fa.len());
        assert_eq!(fa, fb, "pair forces differ after the flip");
        let by_gid = |s: &Simulation, what: &dyn Fn(usize) -> V3| -> HashMap<u64, [u64; 3]> {
            (0..s.ps.n_owned)
                .map(|i| {
                    let v = what(i);
                    (s.ps.gid[i], [v.x.to_bits(), v.y.to_bits(), v.z.to_bits()])
                })
                .collect()
        };
        if reproducible {
            assert_eq!(
                by_gid(&a, &|i| a.ps.force[i]),
                by_gid(&b, &|i| b.ps.force[i]),
                "particle forces differ after the flip"
            );
            assert_eq!(by_gid(&a, &|i| a.ps.pos[i]), by_gid(&b, &|i| b.ps.pos[i]));
            assert_eq!(by_gid(&a, &|i| a.ps.vel[i]), by_gid(&b, &|i| b.ps.vel[i]));
        }
    }
}

/// The servo on a small frictional packing (300 spheres, r = 0.5 mm ± 30 %, E = 2e7 Pa):
/// isotropic compression to 50 kPa, frictionless (the dense recipe), ends with every stress
/// within 1e-3 of the goal and the unbalanced force below 0.01; then with friction tan φ = 0.5
/// a drained triaxial step to 2 % axial strain keeps the lateral stresses at 50 kPa within
/// 3 % while the axial stress rises (σ_zz/σ_xx > 1.5; measured 2.97).
#[test]
fn servo_compresses_then_shears_at_constant_lateral_stress() {
    let text = periodic_packing(
        0.5,
        "output: Output(series_every: 0),",
        &triax_stages(1e-2, 1e-3),
    );
    let mut s = sim(&text);
    let mut iso_end = None;
    for _ in 0..200_000 {
        s.step().unwrap();
        let c = s.cell().unwrap();
        if iso_end.is_none() && c.stage == 1 {
            iso_end = Some((s.step, c.stress));
        }
        if s.finished() {
            break;
        }
    }
    let (at, sig) = iso_end.expect("the isotropic stage ended");
    eprintln!("iso done at step {at}: σ = {sig:?}");
    for a in 0..3 {
        assert!(rel(sig[a], -5e4) < 1e-3, "{sig:?}");
    }
    assert!(
        s.finished(),
        "the triaxial stage did not end by step {}",
        s.step
    );
    s.record_forces = true;
    steps(&mut s, 1);
    let row = s.stats().cell.unwrap();
    eprintln!(
        "triax end: strain {:?} σ diag {:?}",
        row.strain,
        row.stress.diagonal()
    );
    assert!((row.strain.z + 0.02).abs() < 1e-4, "{}", row.strain.z);
    for a in 0..2 {
        assert!(rel(row.stress[(a, a)], -5e4) < 0.03, "{}", row.stress);
    }
    assert!(
        row.stress[(2, 2)] / row.stress[(0, 0)] > 1.5,
        "{}",
        row.stress
    );
}

/// Stress-controlled shear (Yade `Peri3dController`'s mixed control; `shear_mask`): after the
/// isotropic compression to 50 kPa, with tan φ = 0.5 and every normal stress held at 50 kPa,
/// the servo drives L_xy until σ_xy = 10 kPa (τ/p = 0.2, below the packing's strength) and the
/// stage ends there with the unbalanced force below 0.05: σ_xy within 2 % of the goal, the
/// normal stresses within 3 %, and the cell has sheared (γ_xy > 0). A goal above the
/// strength (τ/p = 0.8) cannot be held: the servo runs L_xy at `max_shear_rate` (2 /s), the
/// packing flows and σ_xy stays below the goal.
#[test]
fn servo_reaches_and_holds_a_shear_stress_goal() {
    let stages = format!(
        "{}
        Stage(name: \"tau\", goal: (-5e4, -5e4, -5e4), max_strain_rate: (5.0, 5.0, 5.0),
              shear_goal: (1e4, 0.0, 0.0), shear_mask: (true, false, false),
              max_shear_rate: (2.0, 1.0, 1.0), max_unbalanced: 0.05, rel_stress_tol: 1e-2,
              friction_angle: Some(0.4636476090008061), reset_strain: true),
        Stage(name: \"flow\", goal: (-5e4, -5e4, -5e4), max_strain_rate: (5.0, 5.0, 5.0),
              shear_goal: (4e4, 0.0, 0.0), shear_mask: (true, false, false),
              max_shear_rate: (2.0, 1.0, 1.0), steps: Some(6000)),",
        triax_stages(1e-2, 1e-3)
            .split("Stage(name: \"triax\"")
            .next()
            .unwrap()
    );
    let mut s = sim(&periodic_packing(
        0.5,
        "output: Output(series_every: 0),",
        &stages,
    ));
    let (mut at_tau, mut flow) = (None, None);
    for _ in 0..400_000 {
        s.step().unwrap();
        let c = s.cell().unwrap();
        if c.stage == 2 {
            // the flow stage: its rate, shear strain and (servo's) shear stress
            flow = Some((c.grad[(0, 1)], c.trsf[(0, 1)], c.stress_tensor[(0, 1)]));
        }
        if at_tau.is_none() && s.cell().unwrap().stage == 2 {
            s.record_forces = true;
            steps(&mut s, 1);
            let c = s.cell().unwrap();
            at_tau = Some((s.stats().cell.unwrap(), c.trsf[(0, 1)], s.step));
            s.record_forces = false;
        }
        if s.finished() {
            break;
        }
    }
    let (row, gamma, at) = at_tau.expect("the shear stress stage ended");
    eprintln!(
        "τ stage done at step {at}: γ_xy {gamma:e}, σ {}",
        row.stress
    );
    assert!(
        rel(row.stress[(0, 1)], 1e4) < 0.02,
        "σ_xy {}",
        row.stress[(0, 1)]
    );
    for a in 0..3 {
        assert!(rel(row.stress[(a, a)], -5e4) < 0.03, "{}", row.stress);
    }
    assert!(gamma > 0.0, "the cell sheared: γ_xy {gamma}");
    assert!(
        s.finished(),
        "the flow stage did not end by step {}",
        s.step
    );
    let (g, gamma_end, tau) = flow.unwrap();
    eprintln!("flow: L_xy {g}, γ_xy {gamma_end:e}, σ_xy {tau}");
    assert!(g == 2.0, "the servo at its cap: L_xy {g}");
    assert!(tau < 0.8 * 4e4, "σ_xy {tau}");
    assert!(
        gamma_end > gamma + 0.5 * 2.0 * 6000.0 * s.dt,
        "the packing flows"
    );
}

/// A plane wall across the open axis of a deforming cell (walls are allowed when the cell
/// does not shear): a sphere resting on the floor of a cell stretching along x (L_xx = 0.5 /s,
/// periodic x and y, the floor z = 0 not moving with the cell; rotation blocked, so it slides
/// rather than rolls) moves with the mean field, so it slides on the floor — friction at the
/// Coulomb limit, |F_x| = tan φ F_z to 1e-9 — and stops in the floor's frame after
/// V₀/(tan φ g) ≈ 0.8 ms (V₀ = 4 mm/s): from then on it stays within ±3e-8 m of where it
/// stopped (measured ±1.6e-8 m; the mean field would have carried it 2e-5 m further in those
/// 4 ms). It rocks there on the contact's tangential spring (lab speed ≤ 3e-4 m/s, measured
/// 2.7e-4), undamped: Cundall damping acts on the fluctuation velocity v′ (Yade's rule, right
/// inside a periodic packing), which for a sphere at rest on a fixed wall is −L (x − o), of one
/// sign, so it does not damp the rocking. (Before the wall saw the mean field, the sphere rode
/// on with it and felt no friction at all.)
#[test]
fn sphere_on_a_floor_of_a_stretching_cell_slides_to_rest() {
    let (r, e, rho, g) = (1e-3f64, 1e7, 2650.0, 9.81);
    let m = 4.0 / 3.0 * std::f64::consts::PI * r.powi(3) * rho;
    let z = r - m * g / (e * r);
    let text = format!(
        "Scene(
    materials: [Frict(name: \"g\", young: {e:?}, poisson: 0.3, friction_angle: 0.4636476090008061, density: {rho:?})],
    walls: [Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: \"g\")],
    spheres: [Sphere(pos: (0.008, 0.005, {z:?}), radius: {r:?}, material: \"g\", blocked: \"XYZ\")],
    gravity: (0.0, 0.0, -{g:?}),
    damping: 0.2,
    dt: Fixed(1e-6),
    run: Steps(1000000),
    domain: Domain(lo: (0.0, 0.0, -0.001), hi: (0.01, 0.01, 0.01), periodic: (true, true, false)),
    output: Output(series_every: 0),
    cell: Cell(velocity_gradient: ((0.5, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))),
)"
    );
    let mut s = sim(&text);
    s.record_forces = true;
    let lab = |s: &Simulation| {
        let c = &s.domain.cell;
        s.ps.vel[0] + s.cell().unwrap().grad_prev * (s.ps.pos[0] - c.origin)
    };
    steps(&mut s, 100);
    for _ in 0..5 {
        steps(&mut s, 50);
        let f = s.stats().wall_force[0];
        assert!(rel(f.x.abs(), 0.5 * f.z.abs()) < 1e-9, "sliding: {f:?}");
        assert!(lab(&s).x > 1e-3, "{:?}", lab(&s));
    }
    steps(&mut s, 1500);
    let (mut lo, mut hi, mut vmax): (f64, f64, f64) = (f64::INFINITY, f64::NEG_INFINITY, 0.0);
    for _ in 0..4000 {
        steps(&mut s, 1);
        lo = lo.min(s.ps.pos[0].x);
        hi = hi.max(s.ps.pos[0].x);
        vmax = vmax.max(lab(&s).norm());
    }
    eprintln!("stopped: x in {lo:e}..{hi:e}, lab speed ≤ {vmax:e}");
    assert!(hi - lo < 6e-8, "the sphere moved on: {lo:e}..{hi:e}");
    assert!(vmax < 3e-4, "{vmax:e}");
    assert!(
        s.domain.cell.h[(0, 0)] > 0.01 * (1.0 + 0.5 * 0.005),
        "the cell did not stretch"
    );
}
