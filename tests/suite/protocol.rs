//! Protocols (`engines/protocol.rs`, issue 35): a stage's changes act from its first step as
//! the leapfrog's closed form says; a `ke_below` stage ends at the step the series first shows
//! the kinetic energy below its value; the same bits on 1, 2 and 3 ranks and across a restart
//! mid-stage on another rank count; a restart whose scene changed a stage that had ended is
//! refused, one that appends a stage continues.

use crate::common;
use crate::support;
use common::*;
use demhpc::V3;
use support::*;

/// A free sphere, no gravity in the scene: stage 1 gravity −z for 100 steps, stage 2 gravity
/// along x for 50 steps.
const FREE: &str = r#"Scene(
    materials: [Frict(name: "g", young: 1e7, poisson: 0.25, friction_angle: 0.5, density: 2500.0)],
    spheres: [Sphere(pos: (0.0, 0.0, 0.0), radius: 0.01, material: "g")],
    dt: Fixed(1e-5),
    damping: 0.3,
    run: Steps(1000),
    stages: [
        Stage(name: "fall", gravity: (0.0, 0.0, -9.81), damping: 0.0, until: Until(steps: 100)),
        Stage(name: "sideways", gravity: (3.0, 0.0, 0.0), until: Until(steps: 50)),
    ],
)"#;

#[test]
fn each_stage_changes_gravity_and_damping_from_its_first_step() {
    let mut s = sim(FREE);
    let dt = s.dt;
    steps(&mut s, 100);
    let i = idx(&s, 0);
    // stage 1: free fall from rest, undamped: v_N = −g N Δt, z_N = −g Δt² N(N+1)/2
    let (g, n) = (9.81, 100.0);
    assert!(rel(s.ps.vel[i].z, -g * n * dt) < 1e-12, "{}", s.ps.vel[i].z);
    assert!(
        rel(s.ps.pos[i].z, -g * dt * dt * n * (n + 1.0) / 2.0) < 1e-12,
        "{}",
        s.ps.pos[i].z
    );
    assert_eq!(s.gravity, V3::new(0.0, 0.0, -9.81));
    assert_eq!(s.damping, 0.0);
    // stage 2: gravity along x, the damping stays 0 (a stage changes only what it names):
    // each step adds g_x Δt to v_x, v_z stays
    let vz = s.ps.vel[i].z;
    for k in 1..=50 {
        let vx = s.ps.vel[i].x;
        steps(&mut s, 1);
        let dv = s.ps.vel[i].x - vx;
        assert!(rel(dv, 3.0 * dt) < 1e-9, "step {k}: Δv_x {dv}");
        assert_eq!(s.ps.vel[i].z, vz);
    }
    assert!(rel(s.ps.vel[i].x, 3.0 * 50.0 * dt) < 1e-12);
    assert!(s.finished(), "the protocol ended after its last stage");
}

/// 300 spheres in a box periodic along x and y fall on a floor under a strong gravity and
/// damping until their kinetic energy is below 5e-6 J (after at least 3000 steps), then the
/// gravity tilts, the damping stops and the floor slides; then a stage lowers the friction for
/// 1e-4 s.
fn packing(run: u64, ck_every: u64, extra_stage: &str) -> String {
    format!(
        r#"Scene(
    materials: [Frict(name: "g", young: 2e7, poisson: 0.3, friction_angle: 0.5, density: 2650.0)],
    walls: [Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "g")],
    spheres: [RandomFill(material: "g", lo: (0.0, 0.0, 0.0), hi: (0.0095, 0.0095, 0.0095), count: 300,
                         radius: 0.0005, polydispersity: 0.3, seed: 3)],
    damping: 0.5,
    dt: PWave(0.2),
    run: Steps({run}),
    domain: Domain(lo: (0.0, 0.0, -0.001), hi: (0.0095, 0.0095, 0.02), periodic: (true, true, false)),
    reproducible: true,
    output: Output(series_every: 1, snapshot_every: 0),
    checkpoint: (every: {ck_every}, keep: 1000),
    stages: [
        Stage(name: "fill", gravity: (0.0, 0.0, -1000.0),
              until: Until(steps: 3000, ke_below: 5e-6, all: true, max_steps: 20000)),
        Stage(name: "tilt", gravity: (400.0, 0.0, -900.0), damping: 0.0,
              walls: [WallMotion(wall: 0, velocity: (0.001, 0.0, 0.0))], until: Until(steps: 300)),
        Stage(name: "lower friction", friction_angle: 0.3, until: Until(time: 1e-4)),{extra_stage}
    ],
)"#
    )
}

/// The last snapshot of the output directory `out` (the run's final state).
fn final_snapshot(out: &std::path::Path) -> std::path::PathBuf {
    std::fs::read_dir(out.join("snapshots"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "h5"))
        .max()
        .unwrap()
}

/// The rows of a series: (step, kinetic energy, stage).
fn rows(series: &str) -> Vec<(u64, f64, usize)> {
    let mut lines = series.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let (kt, kr, st) = (col("ke_trans_J"), col("ke_rot_J"), col("stage"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let x = |k: usize| f[k].parse::<f64>().unwrap();
            (f[0].parse().unwrap(), x(kt) + x(kr), f[st].parse().unwrap())
        })
        .collect()
}

#[test]
fn stages_end_by_their_conditions_with_the_same_bits_on_any_layout_and_across_a_restart() {
    let tmp = TempDir::new("protocol_layouts");
    std::fs::write(tmp.0.join("scene.ron"), packing(30000, 250, "")).unwrap();
    let run = |r: usize, t: usize, out: &str| {
        let o = demhpc(r, t, &["--out", out, "scene.ron"], &tmp.0);
        assert!(o.status.success(), "{r} × {t}: {}", describe(&o));
        let series = std::fs::read_to_string(tmp.0.join(out).join("series.csv")).unwrap();
        (read_state(&final_snapshot(&tmp.0.join(out))), series)
    };
    let (first, series) = same_bits_on_layouts(&[(1, 1), (2, 1), (3, 1)], run);
    let table = rows(&series);
    // the fill ends at the first step from its 3000th on whose kinetic energy is below 5e-6 J
    let fill_end = table
        .iter()
        .find(|r| r.0 >= 3000 && r.1 < 5e-6)
        .expect("the packing settles")
        .0;
    assert!(
        fill_end > 1000,
        "settled at step {fill_end}: too soon to test"
    );
    for &(step, _, stage) in &table {
        let want = match step {
            s if s <= fill_end => 0,
            s if s <= fill_end + 300 => 1,
            _ => 2,
        };
        assert_eq!(stage, want, "step {step}");
    }
    // the last stage, 1e-4 s, ended the run before its length
    let last = table.last().unwrap().0;
    assert!(last > fill_end + 300 && last < 30000, "{last}");

    // a restart mid-fill (step 1000) on 2 ranks continues with the same bits to the end
    let ck = tmp.0.join("o3_1/checkpoints/ckpt_0000001000.h5");
    let o = demhpc(
        2,
        1,
        &["--restart", ck.to_str().unwrap(), "--out", "restarted"],
        &tmp.0,
    );
    assert!(o.status.success(), "{}", describe(&o));
    let snap = final_snapshot(&tmp.0.join("restarted"));
    assert!(
        snap.ends_with(format!("snap_{last:09}.h5")),
        "{}",
        snap.display()
    );
    assert!(read_state(&snap) == first, "the restart parted");
    let again = std::fs::read_to_string(tmp.0.join("restarted/series.csv")).unwrap();
    let tail: Vec<&str> = series
        .lines()
        .filter(|l| {
            !l.starts_with(|c: char| c.is_ascii_digit())
                || l.split(',').next().unwrap().parse::<u64>().unwrap() > 1000
        })
        .collect();
    assert_eq!(again.lines().collect::<Vec<_>>(), tail);

    // a restart after the fill whose scene changed the fill is refused (exit 2), with why
    let after = (fill_end / 250 + 1) * 250;
    let ck = tmp.0.join(format!("o1_1/checkpoints/ckpt_{after:010}.h5"));
    let changed = packing(30000, 250, "").replace("ke_below: 5e-6", "ke_below: 4e-6");
    std::fs::write(tmp.0.join("changed.ron"), changed).unwrap();
    let o = demhpc(
        1,
        1,
        &[
            "--restart",
            ck.to_str().unwrap(),
            "--out",
            "changed",
            "changed.ron",
        ],
        &tmp.0,
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("stage 1 (`fill`), which has ended, changed"),
        "{}",
        describe(&o)
    );
    // ...and one that appends a stage continues into it
    let more = packing(
        30000,
        250,
        "\n        Stage(name: \"more\", damping: 0.2, until: Until(steps: 100)),",
    );
    std::fs::write(tmp.0.join("more.ron"), more).unwrap();
    let o = demhpc(
        1,
        1,
        &[
            "--restart",
            ck.to_str().unwrap(),
            "--out",
            "more",
            "more.ron",
        ],
        &tmp.0,
    );
    assert!(o.status.success(), "{}", describe(&o));
    let more = std::fs::read_to_string(tmp.0.join("more/series.csv")).unwrap();
    let stages: Vec<usize> = rows(&more).iter().map(|r| r.2).collect();
    assert_eq!(
        stages.iter().filter(|&&k| k == 3).count(),
        100,
        "the appended stage ran"
    );
}

/// A free sphere falling in two stages, the second with twice the time step; the first ends
/// with a snapshot and a checkpoint, the protocol ends the run before its length.
const TWO_STEPS: &str = r#"Scene(
    materials: [Frict(name: "g", young: 1e7, poisson: 0.25, friction_angle: 0.5, density: 2500.0)],
    spheres: [Sphere(pos: (0.0, 0.0, 0.0), radius: 0.01, material: "g")],
    dt: Fixed(1e-5),
    damping: 0.0,
    gravity: (0.0, 0.0, -9.81),
    run: Steps(1000),
    reproducible: true,
    output: Output(series_every: 40, snapshot_every: 0),
    stages: [
        Stage(name: "fine", until: Until(steps: 100), snapshot: true, checkpoint: true),
        Stage(name: "coarse", dt: 2e-5, until: Until(steps: 50)),
    ],
)"#;

#[test]
fn a_stage_changes_the_time_step_and_ends_with_a_snapshot_and_a_checkpoint() {
    // the leapfrog across the change: each step adds g Δt of its own stage to v_z
    let mut s = sim(TWO_STEPS);
    steps(&mut s, 100);
    let i = idx(&s, 0);
    let g = 9.81;
    assert!(rel(s.ps.vel[i].z, -g * 100.0 * 1e-5) < 1e-12);
    steps(&mut s, 50);
    assert_eq!(s.dt, 2e-5);
    let v = -g * (100.0 * 1e-5 + 50.0 * 2e-5);
    assert!(rel(s.ps.vel[i].z, v) < 1e-12, "{} vs {v}", s.ps.vel[i].z);
    assert!(
        rel(s.time, 100.0 * 1e-5 + 50.0 * 2e-5) < 1e-12,
        "{}",
        s.time
    );
    assert!(s.finished());

    // the run: the stage end's snapshot and checkpoint at step 100, the series' last row at
    // the protocol's end (step 150, not a multiple of `series_every`), its `dt` column
    let tmp = TempDir::new("protocol_dt");
    std::fs::write(tmp.0.join("scene.ron"), TWO_STEPS).unwrap();
    let o = demhpc(1, 1, &["--out", "o", "scene.ron"], &tmp.0);
    assert!(o.status.success(), "{}", describe(&o));
    let out = tmp.0.join("o");
    assert!(out.join("snapshots/snap_000000100.h5").exists());
    let ck = out.join("checkpoints/ckpt_0000000100.h5");
    assert!(ck.exists(), "{}", describe(&o));
    let series = std::fs::read_to_string(out.join("series.csv")).unwrap();
    let head: Vec<&str> = series.lines().next().unwrap().split(',').collect();
    let dt_col = head.iter().position(|h| *h == "dt_s").unwrap();
    let last: Vec<&str> = series.lines().last().unwrap().split(',').collect();
    assert_eq!(last[0], "150", "{series}");
    assert_eq!(last[dt_col].parse::<f64>().unwrap(), 2e-5);
    let stages: Vec<usize> = rows(&series).iter().map(|r| r.2).collect();
    assert_eq!(stages, [0, 0, 1, 1], "{series}");
    // a restart from the stage end's checkpoint on 2 ranks: the same final state
    let o = demhpc(
        2,
        1,
        &["--restart", ck.to_str().unwrap(), "--out", "r"],
        &tmp.0,
    );
    assert!(o.status.success(), "{}", describe(&o));
    let a = read_state(&final_snapshot(&out));
    let b = read_state(&final_snapshot(&tmp.0.join("r")));
    assert!(a == b, "the restart from the stage's checkpoint parted");
}

/// 64 spheres fall through a floor-less box into an outlet below: the stage ends when fewer
/// than 40 are left, then a stage of 20 steps.
const DRAIN: &str = r#"Scene(
    materials: [Frict(name: "g", young: 1e7, poisson: 0.25, friction_angle: 0.5, density: 2500.0)],
    spheres: [Lattice(material: "g", origin: (0.002, 0.002, 0.002), spacing: 0.004, counts: (4, 4, 4),
                      radius: 0.0015)],
    dt: Fixed(2e-5),
    damping: 0.0,
    gravity: (0.0, 0.0, -98.1),
    run: Steps(100000),
    domain: Domain(lo: (0.0, 0.0, -0.02), hi: (0.016, 0.016, 0.02), periodic: (true, true, false)),
    reproducible: true,
    outlets: [Outlet(name: "sink", region: HalfSpace(point: (0.0, 0.0, -0.01), normal: (0.0, 0.0, -1.0)),
                     every: 10)],
    stages: [
        Stage(name: "drain", until: Until(particles_below: 40, max_steps: 50000)),
        Stage(name: "after", until: Until(steps: 20)),
    ],
)"#;

#[test]
fn a_stage_ends_when_outlets_leave_fewer_particles_than_its_goal() {
    let mut s = sim(DRAIN);
    let (mut before, mut drained_at) = (s.n_present(), None);
    while !s.finished() {
        assert!(s.step < 50000, "the drain never ended");
        // the stage under way (`st.stage`: the next one once a stage has ended)
        let stage_of = |s: &demhpc::sim::Simulation| {
            s.engines
                .get::<demhpc::engines::protocol::Protocol>()
                .unwrap()
                .st
                .stage
        };
        let stage = stage_of(&s);
        steps(&mut s, 1);
        let now = s.n_present();
        let stage_now = stage_of(&s);
        if stage == 0 && stage_now == 1 {
            // it ended at the first step whose count is below 40, the one before had ≥ 40
            assert!(
                now < 40 && before >= 40,
                "{before} -> {now} at step {}",
                s.step
            );
            drained_at = Some(s.step);
        }
        if stage_now == 0 {
            assert!(now >= 40, "{now} left at step {} in the drain", s.step);
        }
        before = now;
    }
    // the outlet acts every 10 steps (at the start of the step from a multiple of 10: its
    // `pre_exchange`), so the count and the stage change then; the next stage ran its 20
    let at = drained_at.expect("the drain ended");
    assert_eq!((at - 1) % 10, 0, "{at}");
    assert_eq!(s.step, at + 20);
}
