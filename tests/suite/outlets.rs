//! Outlets (issue 22): particles whose centre enters an outlet's region are deleted at the
//! `pre_exchange` hook; `series.csv` counts them (count and mass per outlet, particle count);
//! their contacts vanish; reproducible runs stay bitwise on any rank count and across a
//! restart mid-discharge. Scene: `SETTLE`'s 512 spheres (radius 1 mm ± 10 %, ρ 2600 kg/m³)
//! falling under 10 g onto a floor whose central disc (radius 4 mm) is an outlet.

use crate::support;

use support::*;

const RHO: f64 = 2600.0;
const N0: u64 = 512;
const STEPS: u64 = 6000;

fn drain() -> String {
    let s = SETTLE
        .replace("gravity: (0.0, 0.0, -9.81)", "gravity: (0.0, 0.0, -98.1)")
        .replace(
            "output: Output(series_every: 100),",
            "output: Output(series_every: 100, snapshot_every: 1000),\n    \
             checkpoint: (every: 3000, keep: 3),\n    \
             outlets: [Outlet(name: \"orifice\", region: Cylinder(a: (0.0096, 0.0096, -0.001), \
             b: (0.0096, 0.0096, 0.0012), radius: 0.004), every: 20)],",
        );
    assert!(s.contains("outlets"));
    s
}

/// (step, n_particles, outlet count, outlet mass) of each series row.
fn rows(series: &str) -> Vec<(u64, u64, u64, f64)> {
    let mut lines = series.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let (n, c, m) = (
        col("n_particles"),
        col("outlet_orifice_count"),
        col("outlet_orifice_mass_kg"),
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].parse().unwrap(),
                f[n].parse().unwrap(),
                f[c].parse().unwrap(),
                f[m].parse().unwrap(),
            )
        })
        .collect()
}

fn run(tmp: &TempDir, ranks: usize, threads: usize, out: &str, extra: &[&str]) -> String {
    let s = STEPS.to_string();
    let dir = tmp.0.join(out);
    let mut args = vec!["--steps", &s, "--out", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push("drain.ron");
    let o = demhpc(ranks, threads, &args, &tmp.0);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    std::fs::read_to_string(dir.join("series.csv")).unwrap()
}

fn sphere_mass(radius_bits: u64) -> f64 {
    4.0 / 3.0 * std::f64::consts::PI * f64::from_bits(radius_bits).powi(3) * RHO
}

/// Count and mass: at every series row, particles + removed = 512; the count grows; the mass
/// removed between the snapshots at steps 1000 and 6000 equals the mass of the particles that
/// disappeared between them (relative 1e-12); the gids left are unique and a subset of the
/// earlier ones (no id reused or resurrected); the snapshot holds `n_particles` particles.
#[test]
fn outlet_deletes_and_counts_particles() {
    let tmp = TempDir::new("outlet_count");
    std::fs::write(tmp.0.join("drain.ron"), drain()).unwrap();
    let series = run(&tmp, 1, 1, "o", &[]);
    let r = rows(&series);
    assert_eq!(r.len() as u64, STEPS / 100);
    for w in r.windows(2) {
        assert!(w[1].2 >= w[0].2 && w[1].3 >= w[0].3, "{w:?}");
    }
    for &(step, n, c, m) in &r {
        assert_eq!(n + c, N0, "step {step}: {n} particles + {c} removed");
        // every sphere weighs between (0.9 r)³ and (1.1 r)³ times 4/3 π (1 mm)³ ρ
        let m1 = sphere_mass(1e-3f64.to_bits());
        assert!(m >= c as f64 * m1 * 0.729 * 0.999 && m <= c as f64 * m1 * 1.331 * 1.001);
    }
    let last = r.last().unwrap();
    eprintln!("removed {} particles, {:.6e} kg", last.2, last.3);
    assert!(last.2 >= 60, "the outlet removed only {} particles", last.2);
    let snap = |s: u64| read_state(&tmp.0.join(format!("o/snapshots/snap_{s:09}.h5")));
    let (a, b) = (snap(1000), snap(STEPS));
    assert_eq!(b.gid.len() as u64, last.1);
    assert!(b.gid.windows(2).all(|w| w[0] < w[1]), "gids not unique");
    let mut gone = 0.0;
    let mut k = 0;
    for (i, g) in a.gid.iter().enumerate() {
        if k < b.gid.len() && b.gid[k] == *g {
            k += 1;
        } else {
            gone += sphere_mass(a.radius[i]);
        }
    }
    assert_eq!(k, b.gid.len(), "a gid appeared that was not there before");
    let row = |s: u64| r.iter().find(|x| x.0 == s).unwrap().3;
    let series_gone = row(STEPS) - row(1000);
    assert!(
        ((series_gone - gone) / gone).abs() < 1e-12,
        "series: {series_gone:e} kg removed, snapshots: {gone:e} kg"
    );
    // the contacts of deleted particles vanished while the pile stayed in contact
    assert!(b.ncontacts.iter().any(|&c| c > 0));
}

/// Reproducible mode with the outlet active: final state and series bit-identical on 1, 2,
/// 3, 4, 8 ranks (1 thread) and 2 ranks × 2 threads; a restart from the checkpoint at step
/// 3000 (mid-discharge) on 3 ranks continues bitwise.
#[test]
fn outlet_is_bitwise_on_any_rank_count_and_across_restart() {
    let tmp = TempDir::new("outlet_bitwise");
    std::fs::write(tmp.0.join("drain.ron"), drain()).unwrap();
    let layouts = [(1, 1), (2, 1), (3, 1), (4, 1), (8, 1), (2, 2)];
    let (s0, c0) = same_bits_on_layouts(&layouts, |r, t, out| {
        let series = run(&tmp, r, t, out, &["--reproducible"]);
        let st = read_state(&tmp.0.join(format!("{out}/snapshots/snap_{STEPS:09}.h5")));
        (st, series)
    });
    let removed_at = |c: &str, s: u64| rows(c).iter().find(|x| x.0 == s).unwrap().2;
    assert!(removed_at(&c0, 3000) > 0 && removed_at(&c0, STEPS) > removed_at(&c0, 3000));
    let ck = tmp.0.join("o1_1/checkpoints/ckpt_0000003000.h5");
    let s = STEPS.to_string();
    let o = demhpc(
        3,
        1,
        &[
            "--restart",
            ck.to_str().unwrap(),
            "--steps",
            &s,
            "--reproducible",
        ],
        &tmp.0,
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let st = read_state(&tmp.0.join(format!("o1_1/snapshots/snap_{STEPS:09}.h5")));
    assert!(
        st == s0,
        "restart on 3 ranks differs from the uninterrupted run"
    );
    let c = std::fs::read_to_string(tmp.0.join("o1_1/series.csv")).unwrap();
    assert_eq!(c, c0, "restart: series differs");
}

/// Wall pairs are keyed (gid, wall index): deleting the particle whose gid equals a wall's
/// index must not touch the other spheres' contacts with that wall. Sphere 1 sticks on the
/// floor (wall 0) under a tilted gravity, its tangential spring loading; sphere 0, far from
/// it, flies into an outlet (at 20 m/s) and is deleted at step 20. Sphere 1's spring after
/// the deletion is the bits of a run whose outlet lies elsewhere (it was reset to zero when
/// the deletion switched its floor contact off).
#[test]
fn deleting_gid_0_keeps_the_contacts_of_wall_0() {
    let text = |outlet_x: f64| {
        format!(
            r#"Scene(
    materials: [Frict(name: "g", young: 1e7, poisson: 0.3, friction_angle: 0.8, density: 2600.0)],
    walls: [Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "g")],
    spheres: [Sphere(pos: (0.066, 0.05, 0.02), radius: 0.005, material: "g", vel: (20.0, 0.0, 0.0)),
              Sphere(pos: (0.02, 0.05, 0.004995), radius: 0.005, material: "g")],
    gravity: (2.0, 0.0, -9.81), damping: 0.5,
    dt: PWave(0.2), run: Steps(100000),
    domain: Domain(lo: (0.0, 0.0, -0.01), hi: (0.1, 0.1, 0.1)),
    outlets: [Outlet(name: "o", region: HalfSpace(point: ({outlet_x}, 0.0, 0.0), normal: (1.0, 0.0, 0.0)), every: 20)],
)"#
        )
    };
    let spring = |outlet_x: f64| {
        let t = text(outlet_x);
        let scene = demhpc::scene::Scene::parse(&t, std::path::Path::new("t.ron")).unwrap();
        let mut s = demhpc::Simulation::new(scene).unwrap();
        for _ in 0..22 {
            s.step().unwrap();
        }
        let w = &s.wall_pairs;
        let k = (0..w.len()).find(|&k| w.key[k] == (1, 0) && w.active[k]);
        (k.map(|k| w.state[k].fs), s.find(0).is_none())
    };
    let (deleted, gone) = spring(0.07);
    let (kept, stays) = spring(0.09);
    assert!(gone && !stays, "sphere 0 deleted: {gone}, {stays}");
    assert!(kept.is_some_and(|f| f.norm() > 0.0), "{kept:?}");
    assert_eq!(deleted, kept, "sphere 1's floor spring changed");
}
