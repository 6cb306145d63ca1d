//! The GPU step (issue 34) against the CPU path, the physics' source of truth.
//!
//! Everywhere: the GPU kernels compiled for the host (`gpu::device::HostDevice`), so that CI
//! checks the kernels' logic without a GPU. With the `gpu` feature: the kernels compiled to
//! PTX by NVRTC (no GPU needed; `DEMHPC_REQUIRE_NVRTC=1`, set by scripts/test.sh, makes a
//! missing NVRTC a failure), and on a machine with a GPU the same comparisons on it (skipped,
//! and said so, without one).
//!
//! Tolerances. A pair's force has the CPU path's bits (the same IEEE operations in the same
//! order, no fused multiply–add): a body with one contact at a time follows the CPU path bit
//! for bit (two spheres, a sphere on a wall, each law). With several contacts per particle
//! the GPU sums them in its neighbour order, not in the CPU's pair order: the two runs part
//! at round-off (1e-16 relative) and, a granular packing being chaotic, the gap grows; over
//! a few hundred steps it stays below 1e-9 of a radius (measured: 1e-13 to 1e-11).

use crate::common;
use common::*;
use demhpc::gpu::device::{Device, HostDevice};
use demhpc::gpu::GpuStep;
use demhpc::{Simulation, V3};
use std::path::Path;
use std::process::Command;

/// Opens a device.
type Opener = Box<dyn Fn() -> Box<dyn Device>>;

/// The devices to compare with the CPU path: the host always, a CUDA GPU when there is one.
fn devices() -> Vec<(&'static str, Opener)> {
    #[allow(unused_mut)]
    let mut v: Vec<(&'static str, Opener)> =
        vec![("host", Box::new(|| Box::new(HostDevice::new())))];
    #[cfg(feature = "gpu")]
    match demhpc::gpu::cuda::driver_present() {
        Ok(()) => v.push((
            "cuda",
            Box::new(|| {
                Box::new(demhpc::gpu::cuda::CudaDevice::new(0).unwrap_or_else(|e| panic!("{e}")))
            }),
        )),
        Err(e) => eprintln!("NOTICE: GPU comparisons skipped (no GPU here): {e}"),
    }
    #[cfg(not(feature = "gpu"))]
    eprintln!("NOTICE: GPU comparisons skipped: built without the `gpu` feature");
    v
}

/// The state of `sim` by gid: (position, velocity, angular velocity, orientation coords).
fn state(sim: &Simulation) -> Vec<(u64, [V3; 3], [f64; 4])> {
    let ps = &sim.ps;
    let mut v: Vec<_> = (0..ps.n_owned)
        .map(|i| {
            let c = ps.ori[i].quaternion().coords;
            (
                ps.gid[i],
                [ps.unwrapped(i, &sim.domain.size()), ps.vel[i], ps.angvel[i]],
                [c.x, c.y, c.z, c.w],
            )
        })
        .collect();
    v.sort_by_key(|s| s.0);
    v
}

/// Run `scene` `n` steps on the CPU path and on device `dev`; the two final states by gid.
#[allow(clippy::type_complexity)]
fn both(
    scene: &str,
    n: u64,
    dev: Box<dyn Device>,
) -> (
    Vec<(u64, [V3; 3], [f64; 4])>,
    Vec<(u64, [V3; 3], [f64; 4])>,
    Simulation,
) {
    let mut cpu = sim(scene);
    steps(&mut cpu, n);
    let mut on = sim(scene);
    let mut g = GpuStep::new(&on, dev).unwrap_or_else(|e| panic!("{e}"));
    for _ in 0..n {
        g.advance(false).unwrap_or_else(|e| panic!("{e}"));
    }
    g.sync_host(&mut on).unwrap_or_else(|e| panic!("{e}"));
    (state(&cpu), state(&on), on)
}

/// Largest difference of position (over `scale`), velocity and angular velocity.
fn max_diff(a: &[(u64, [V3; 3], [f64; 4])], b: &[(u64, [V3; 3], [f64; 4])]) -> [f64; 3] {
    assert_eq!(a.len(), b.len());
    let mut d = [0.0f64; 3];
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.0, y.0);
        for (k, dk) in d.iter_mut().enumerate() {
            *dk = dk.max((x.1[k] - y.1[k]).norm());
        }
    }
    d
}

fn frict(extra: &str) -> String {
    format!(
        r#"Frict(name: "m", young: 2e8, poisson: 0.3, friction_angle: 0.5, density: 7800.0{extra})"#
    )
}

/// The three laws in a material of stiffness ~`young` (Hooke: kn ~ E r).
fn laws_of(young: f64) -> [(&'static str, String); 3] {
    let kn = young * 0.01;
    [
        (
            "Frict",
            format!(
                r#"Frict(name: "m", young: {young:e}, poisson: 0.3, friction_angle: 0.5, density: 7800.0, restitution: 0.7)"#
            ),
        ),
        (
            "Hertz",
            format!(
                r#"Hertz(name: "m", young: {young:e}, poisson: 0.3, friction_angle: 0.5, density: 7800.0, restitution: 0.7)"#
            ),
        ),
        (
            "Hooke",
            format!(
                r#"Hooke(name: "m", kn: {kn:e}, kt: {:e}, gamma_n: 50.0, xmu: 0.5, density: 7800.0)"#,
                kn * 2.0 / 7.0
            ),
        ),
    ]
}

/// Two spheres in an oblique, spinning collision, and a third hitting a moving wall while
/// spinning: one contact per body at a time, so every bit must be the CPU path's.
fn one_contact_scene(material: &str) -> String {
    format!(
        r#"Scene(
    materials: [{material}],
    walls: [Wall(point: (0.0, 0.0, -0.012), normal: (0.0, 0.0, 1.0), material: "m",
                 velocity: (0.01, 0.0, 0.02))],
    spheres: [
        Sphere(pos: (0.0, 0.0, 0.05), radius: 0.01, material: "m", vel: (0.5, 0.1, 0.0),
               angvel: (0.0, 3.0, 40.0)),
        Sphere(pos: (0.0215, 0.004, 0.05), radius: 0.011, material: "m", vel: (-0.5, 0.0, 0.0),
               angvel: (-20.0, 0.0, 0.0)),
        Sphere(pos: (0.1, 0.0, 0.0), radius: 0.01, material: "m", vel: (0.0, 0.3, -0.5),
               angvel: (5.0, 0.0, 0.0)),
    ],
    gravity: (0.0, 0.0, -9.81),
    damping: 0.1,
    dt: Fixed(6e-6),
    run: Steps(3000),
)"#
    )
}

fn laws() -> [(&'static str, String); 3] {
    laws_of(2e8)
}

#[test]
fn one_contact_at_a_time_follows_the_cpu_path_bit_for_bit() {
    for (name, dev) in devices() {
        for (law, mat) in laws() {
            let scene = one_contact_scene(&mat);
            let (cpu, gpu, on) = both(&scene, 3000, dev());
            // the collisions happened: the spheres spin and move otherwise than they started
            assert!(
                cpu[0].1[1].x < 0.45,
                "{law}: no collision? {:?}",
                cpu[0].1[1]
            );
            assert!(
                cpu[2].1[1].z > -0.4,
                "{law}: no wall impact? {:?}",
                cpu[2].1[1]
            );
            for (c, g) in cpu.iter().zip(&gpu) {
                assert_eq!(c, g, "{name} {law}: gid {} differs", c.0);
            }
            assert!(on.n_rebuilds > 1, "{name} {law}: the lists were rebuilt");
        }
    }
}

/// A box of `n` spheres settling under gravity between five walls, law `mat`.
fn settle_scene(mat: &str, n: u64, seed: u64) -> String {
    format!(
        r#"Scene(
    materials: [{mat}],
    walls: [
        Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "m"),
        Wall(point: (0.0, 0.0, 0.0), normal: (1.0, 0.0, 0.0), material: "m"),
        Wall(point: (0.1, 0.0, 0.0), normal: (-1.0, 0.0, 0.0), material: "m"),
        Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 1.0, 0.0), material: "m"),
        Wall(point: (0.0, 0.1, 0.0), normal: (0.0, -1.0, 0.0), material: "m"),
    ],
    spheres: [RandomFill(material: "m", lo: (0.0, 0.0, 0.0), hi: (0.1, 0.1, 0.08), count: {n},
                         radius: 0.005, polydispersity: 0.2, seed: {seed})],
    gravity: (0.0, 0.0, -9.81),
    damping: 0.2,
    dt: Fixed(4e-5),
    run: Steps(100000),
    domain: Domain(lo: (-0.01, -0.01, -0.01), hi: (0.11, 0.11, 0.2)),
)"#
    )
}

#[test]
fn a_settling_packing_follows_the_cpu_path_within_round_off_growth() {
    for (name, dev) in devices() {
        for (law, mat) in laws_of(2e6) {
            let scene = settle_scene(&mat, 300, 7);
            // 3000 steps (0.12 s): the spheres fall onto the floor and each other
            let (cpu, gpu, on) = both(&scene, 3000, dev());
            let [dx, dv, dw] = max_diff(&cpu, &gpu);
            eprintln!("{name} {law}: |dx| {dx:.3e} m, |dv| {dv:.3e} m/s, |dw| {dw:.3e} 1/s");
            // round-off of the force sums (1e-16) grown by the packing's chaos: 1e-9 radius
            assert!(dx < 5e-12, "{name} {law}: positions part by {dx:e} m");
            assert!(
                dv < 1e-8 && dw < 1e-5,
                "{name} {law}: {dv:e} m/s, {dw:e} 1/s"
            );
            let n_c = on.pairs.active.iter().filter(|&&a| a).count();
            assert!(n_c > 50, "{name} {law}: only {n_c} contacts: not a packing");
        }
    }
}

/// The LAMMPS chute in miniature: periodic in x and y, a frozen rough bed (blocked spheres),
/// gravity tilted by 26°, Hooke's law with history (LAMMPS gran/hooke/history).
fn chute_scene(law: &str) -> String {
    let mut bed = String::new();
    for k in 0..96 {
        let (x, y) = ((k % 12) as f64 + 0.5, (k / 12) as f64 + 0.5);
        bed += &format!(
            "        Sphere(pos: ({x:?}, {y:?}, 0.5), radius: 0.5, material: \"m\", blocked: \"xyzXYZ\"),\n"
        );
    }
    format!(
        r#"Scene(
    materials: [{law}],
    spheres: [
{bed}        RandomFill(material: "m", lo: (0.0, 0.0, 1.1), hi: (12.0, 8.0, 14.0), count: 500,
                   radius: 0.5, polydispersity: 0.1, seed: 5),
    ],
    gravity: (0.4383711467890774, 0.0, -0.898794046299167),
    dt: Fixed(2e-4),
    skin: 0.1,
    run: Steps(100000),
    domain: Domain(lo: (0.0, 0.0, -1.0), hi: (12.0, 8.0, 40.0), periodic: (true, true, false)),
)"#
    )
}

#[test]
fn a_periodic_chute_follows_the_cpu_path() {
    let hooke = r#"Hooke(name: "m", kn: 2e5, kt: 57142.857142857145, xmu: 0.5, density: 1.0,
                         gamma_n: 50.0, gamma_t: 0.0)"#;
    let scene = chute_scene(hooke);
    for (name, dev) in devices() {
        let mut cpu = sim(&scene);
        let mut on = sim(&scene);
        let mut g = GpuStep::new(&on, dev()).unwrap_or_else(|e| panic!("{e}"));
        let mut run = |n: u64, on: &mut Simulation| {
            steps(&mut cpu, n);
            for _ in 0..n {
                g.advance(false).unwrap_or_else(|e| panic!("{e}"));
            }
            g.sync_host(on).unwrap_or_else(|e| panic!("{e}"));
            (state(&cpu), state(on))
        };
        // the first impacts on the bed: the trajectories part at round-off only
        let (a, b) = run(5000, &mut on);
        let [dx, dv, _] = max_diff(&a, &b);
        eprintln!("{name}: chute at 5000 steps |dx| {dx:.3e}, |dv| {dv:.3e}");
        assert!(dx < 1e-10 && dv < 1e-8, "{name}: {dx:e} {dv:e}");
        // a flowing layer is chaotic: after 15 000 steps compare what a user plots, the
        // mean downhill velocity and the kinetic energy (within 3 %: measured 0.3–1 %)
        let (a, b) = run(10000, &mut on);
        let mean_vx = |s: &[(u64, [V3; 3], [f64; 4])]| {
            s.iter().map(|r| r.1[1].x).sum::<f64>() / s.len() as f64
        };
        let ke =
            |s: &[(u64, [V3; 3], [f64; 4])]| s.iter().map(|r| r.1[1].norm_squared()).sum::<f64>();
        let (va, vb) = (mean_vx(&a), mean_vx(&b));
        eprintln!(
            "{name}: chute at 15000 steps: mean v_x {va:.6} vs {vb:.6}, Σv² {:.6} vs {:.6}",
            ke(&a),
            ke(&b)
        );
        assert!(va > 0.1, "{name}: the layer flows downhill: {va}");
        assert!(rel(vb, va) < 0.03 && rel(ke(&b), ke(&a)) < 0.03, "{name}");
        // the flow crossed the periodic faces: wraps counted as on the CPU path
        assert!(
            on.ps.wrap.iter().any(|w| w[0] != 0),
            "{name}: nothing crossed x"
        );
        // the frozen bed did not move
        for s in b.iter().filter(|s| s.0 < 96) {
            assert_eq!(s.1[1], V3::zeros());
        }
    }
}

#[test]
fn series_statistics_match_the_cpu_path() {
    for (name, dev) in devices() {
        let scene = one_contact_scene(&laws()[1].1);
        let mut cpu = sim(&scene);
        let mut on = sim(&scene);
        let mut g = GpuStep::new(&on, dev()).unwrap_or_else(|e| panic!("{e}"));
        for k in 0..1500u64 {
            let record = k % 100 == 99;
            cpu.record_forces = record;
            steps(&mut cpu, 1);
            g.advance(record).unwrap_or_else(|e| panic!("{e}"));
            if record {
                let (a, b) = (cpu.stats(), g.stats().unwrap_or_else(|e| panic!("{e}")));
                let close = |x: f64, y: f64| (x - y).abs() <= 1e-14 * x.abs().max(y.abs());
                assert!(
                    close(a.ke_trans, b.ke_trans) && close(a.ke_rot, b.ke_rot),
                    "{name}"
                );
                assert_eq!(a.n_contacts, b.n_contacts, "{name} step {k}");
                assert!(close(a.unbalanced, b.unbalanced), "{name}: {a:?} {b:?}");
                assert!(
                    close(a.max_overlap_rel, b.max_overlap_rel),
                    "{name}: {a:?} {b:?}"
                );
                for (u, v) in a.wall_force.iter().zip(&b.wall_force) {
                    assert!((u - v).norm() <= 1e-14 * u.norm(), "{name}: {u} {v}");
                }
            }
        }
        g.sync_host(&mut on).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(state(&cpu), state(&on), "{name}");
    }
}

fn demhpc() -> Command {
    let mut c = Command::new(
        std::env::var("DEMHPC_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_demhpc").into()),
    );
    c.env("RUST_LOG", "info");
    c
}

fn run_ok(c: &mut Command) -> String {
    let out = c.output().expect("demhpc runs");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{c:?} failed:\n{err}");
    err
}

/// Positions (unwrapped), velocities and angular velocities by gid in a run's last snapshot.
fn snapshot_state(dir: &Path) -> Vec<(u64, [V3; 3], [f64; 4])> {
    let mut snaps: Vec<_> = std::fs::read_dir(dir.join("snapshots"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    snaps.sort();
    let f = hdf5::File::open(snaps.last().unwrap()).unwrap();
    let gid: Vec<u64> = f.dataset("gid").unwrap().read_raw().unwrap();
    let rows = |name: &str| -> Vec<V3> {
        let v: Vec<f64> = f.dataset(name).unwrap().read_raw().unwrap();
        v.chunks_exact(3)
            .map(|c| V3::new(c[0], c[1], c[2]))
            .collect()
    };
    let (x, v, w) = (rows("pos"), rows("vel"), rows("angvel"));
    let mut s: Vec<_> = (0..gid.len())
        .map(|i| (gid[i], [x[i], v[i], w[i]], [0.0; 4]))
        .collect();
    s.sort_by_key(|r| r.0);
    s
}

/// The device argument of the CLI runs: `host`, or `0` with a GPU (the `gpu` feature).
fn cli_devices() -> Vec<&'static str> {
    #[allow(unused_mut)]
    let mut v = vec!["host"];
    #[cfg(feature = "gpu")]
    if demhpc::gpu::cuda::driver_present().is_ok() {
        v.push("0");
    }
    v
}

#[test]
fn checkpoints_pass_between_the_gpu_and_the_cpu_path() {
    let dir = std::env::temp_dir().join(format!("demhpc_gpu_ck_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scene = dir.join("settle.ron");
    std::fs::write(&scene, settle_scene(&laws_of(2e6)[0].1, 300, 3)).unwrap();
    for dev in cli_devices() {
        let d = |name: &str| dir.join(format!("{name}_{dev}"));
        let run = |out: &Path, steps: u64, gpu: bool, restart: Option<&Path>| {
            let mut c = demhpc();
            c.args(["--steps", &steps.to_string(), "--out"]).arg(out);
            if gpu {
                c.args(["--gpu", dev]);
            }
            match restart {
                Some(ck) => c.arg("--restart").arg(ck),
                None => c.arg(&scene),
            };
            run_ok(&mut c)
        };
        let ck = |out: &Path| out.join("checkpoints/ckpt_0000000800.h5");
        // GPU 0 → 800, CPU 800 → 1600, against the CPU path all the way
        run(&d("gpu_first"), 800, true, None);
        run(&d("gpu_first"), 1600, false, Some(&ck(&d("gpu_first"))));
        run(&d("cpu_all"), 1600, false, None);
        // CPU 0 → 800, GPU 800 → 1600, against the GPU all the way
        run(&d("cpu_first"), 800, false, None);
        let log = run(&d("cpu_first"), 1600, true, Some(&ck(&d("cpu_first"))));
        assert!(log.contains("GPU step on"), "{log}");
        run(&d("gpu_all"), 1600, true, None);
        for (a, b) in [("gpu_first", "cpu_all"), ("cpu_first", "gpu_all")] {
            let [dx, dv, dw] = max_diff(&snapshot_state(&d(a)), &snapshot_state(&d(b)));
            eprintln!("{dev}: {a} vs {b}: |dx| {dx:.3e} |dv| {dv:.3e} |dw| {dw:.3e}");
            assert!(dx < 5e-12 && dv < 1e-8 && dw < 1e-5, "{dev}: {a} vs {b}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn what_the_gpu_step_cannot_run_is_refused_at_its_field() {
    let dir = std::env::temp_dir().join(format!("demhpc_gpu_bad_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = one_contact_scene(&frict("")).replace(
        "    damping: 0.1,",
        "    damping: 0.1,\n    rolling: (mu_r: 0.1, mu_t: 0.0),",
    );
    let scene = dir.join("rolling.ron");
    std::fs::write(&scene, &text).unwrap();
    let line = text.lines().position(|l| l.contains("rolling:")).unwrap() + 1;
    for args in [
        vec!["check", "--gpu", "host"],
        vec!["--gpu", "host", "--out"],
    ] {
        let mut c = demhpc();
        c.args(&args);
        if args.last() == Some(&"--out") {
            c.arg(dir.join("out"));
        }
        let out = c.arg(&scene).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("not supported on GPU yet"), "{err}");
        assert!(err.contains(&format!("rolling.ron:{line}:")), "{err}");
    }
    assert!(
        !dir.join("out").exists(),
        "nothing written before the refusal"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Two runs on a device: the same bits (atomics order only what is sorted afterwards).
#[test]
fn the_gpu_step_is_deterministic() {
    for (name, dev) in devices() {
        let scene = settle_scene(&laws_of(2e6)[1].1, 300, 11);
        let run = || {
            let mut on = sim(&scene);
            let mut g = GpuStep::new(&on, dev()).unwrap_or_else(|e| panic!("{e}"));
            for _ in 0..1000 {
                g.advance(false).unwrap();
            }
            g.sync_host(&mut on).unwrap();
            state(&on)
        };
        assert_eq!(run(), run(), "{name}");
    }
}

#[cfg(feature = "gpu")]
#[test]
fn kernels_compile_to_ptx() {
    if let Err(e) = demhpc::gpu::cuda::nvrtc_present() {
        if std::env::var("DEMHPC_REQUIRE_NVRTC").as_deref() == Ok("1") {
            panic!("{e}");
        }
        eprintln!("NOTICE: the PTX compile check is skipped: {e}");
        return;
    }
    for cc in [(7, 5), (8, 0), (9, 0)] {
        let ptx = demhpc::gpu::cuda::compile_ptx(cc).unwrap_or_else(|e| panic!("{e}"));
        let src = ptx.to_src();
        for k in demhpc::gpu::params::Kernel::ALL {
            assert!(
                src.contains(&format!(".entry {}(", k.name())),
                "{cc:?}: {} missing",
                k.name()
            );
        }
        // no fused multiply–add in the physics (--fmad=false: the CPU path's bits); the only
        // ones left are libdevice's sin/cos (a spin faster than 1e-3 rad per step, whose
        // bits the CPU's libm does not share anyway)
        let entries: Vec<&str> = src.split(".entry ").skip(1).collect();
        for e in entries {
            let name = e.split('(').next().unwrap_or("");
            let fma = e.matches("fma.rn.f64").count();
            let trig = e.contains("__cudart_sin_cos_coeffs");
            assert!(
                fma == 0 || trig,
                "{cc:?}: {fma} fused multiply–adds in {name}"
            );
        }
    }
}

#[test]
fn a_blow_up_on_the_gpu_stops_the_run_naming_the_particle() {
    let dir = std::env::temp_dir().join(format!("demhpc_gpu_blow_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scene = dir.join("shot.ron");
    std::fs::write(
        &scene,
        r#"Scene(
    materials: [Frict(name: "m", young: 2e8, poisson: 0.3, friction_angle: 0.5, density: 7800.0)],
    spheres: [
        Sphere(pos: (0.0, 0.0, 0.0), radius: 0.01, material: "m"),
        Sphere(pos: (0.1, 0.0, 0.0), radius: 0.01, material: "m", vel: (0.0, 0.0, 3.0e4)),
    ],
    dt: Fixed(1e-6),
    run: Steps(100),
    domain: Domain(lo: (-0.2, -0.2, -0.2), hi: (0.2, 0.2, 0.2)),
)"#,
    )
    .unwrap();
    for dev in cli_devices() {
        let out = demhpc()
            .args(["--gpu", dev, "--out"])
            .arg(dir.join(format!("out_{dev}")))
            .arg(&scene)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{dev}: {err}");
        assert!(
            err.contains("particle gid 1 ") && err.contains("(GPU)"),
            "{dev}: {err}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
