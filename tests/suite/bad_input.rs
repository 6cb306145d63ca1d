//! Bad input is rejected before anything is written (CONVENTIONS.md "Errors and logging"):
//! every scene in `tests/bad_scenes/` has exactly one defect, named in its first-line comment.
//! For each, `demhpc --out DIR SCENE` must exit with status 2, print
//! `FILE:LINE:COL: ...` on stderr with FILE the scene (or, for defects inside a data file, the
//! data file) and LINE the line of the defect, name the problem, and write nothing: neither the
//! output directory nor anything else in its working directory.
//! Plus the command line itself: missing scene, `--threads 0`, unknown flag, `--help`.

use crate::support;

use support::limits::run_limited;
use support::{describe, TempDir};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use support::BIN;

/// Every run of this file is refused (or checked) within this wall time...
const MAX_SECS: f64 = 5.0;
/// ...and this peak resident set (hostile inputs used to allocate gigabytes, then abort).
const MAX_RSS: u64 = 200 << 20;
/// Address-space cap of the child: a runaway allocation fails inside the child instead of
/// eating the machine (the peak resident set is what the tests assert on).
const ADDRESS_SPACE: u64 = 1 << 30;

fn bad_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_scenes")
}

/// Run the binary in `cwd` (with `RUST_LOG` removed so that errors are always printed), with
/// bounded memory and time: it must end within [`MAX_SECS`] and [`MAX_RSS`].
fn demhpc(cwd: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args).current_dir(cwd).env_remove("RUST_LOG");
    let r = run_limited(&mut cmd, ADDRESS_SPACE, Duration::from_secs(20));
    let ctx = format!("demhpc {args:?}\n{}", describe(&r.out));
    assert!(!r.timed_out, "killed after 20 s (a hang): {ctx}");
    assert!(r.secs < MAX_SECS, "took {:.1} s: {ctx}", r.secs);
    assert!(
        r.max_rss < MAX_RSS,
        "peak resident set {} MB: {ctx}",
        r.max_rss >> 20
    );
    r.out
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Where the error is expected: the scene itself, or a data file beside it.
enum At {
    Scene,
    Data(&'static str),
}

/// Run `tests/bad_scenes/<scene>` and check exit code 2, `FILE:LINE:COL: ` on stderr with the
/// expected FILE and LINE, `needle` in the message, and nothing written.
fn check_bad(test: &str, scene: &str, at: At, line: usize, needle: &str) {
    let scene_path = bad_dir().join(scene);
    assert!(scene_path.is_file(), "missing {}", scene_path.display());
    // The defect's description is the first line of the file.
    let text = std::fs::read_to_string(&scene_path).unwrap();
    assert!(
        text.starts_with("// DEFECT: "),
        "{scene}: first line must be `// DEFECT: ...`"
    );
    let file = match at {
        At::Scene => scene_path.clone(),
        At::Data(name) => bad_dir().join(name),
    };
    let what = format!("{scene} ({})", text.lines().next().unwrap());
    assert_refused(test, &scene_path, &file, line, needle, &what);
}

/// Run the scene `scene_path` (from an empty working directory) and check exit code 2,
/// `FILE:LINE:COL: ` on stderr with FILE = `file` and the given LINE, `needle` in the message,
/// and nothing written; `what` describes the case.
fn assert_refused(
    test: &str,
    scene_path: &Path,
    file: &Path,
    line: usize,
    needle: &str,
    what: &str,
) {
    let tmp = TempDir::new(test);
    let out = tmp.0.join("out");
    let o = demhpc(
        &tmp.0,
        &["--out", out.to_str().unwrap(), scene_path.to_str().unwrap()],
    );
    let ctx = format!("{what}\n{}", describe(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);

    assert_eq!(o.status.code(), Some(2), "exit code must be 2: {ctx}");

    let prefix = format!("{}:{line}:", file.display());
    let k = stderr.find(&prefix).unwrap_or_else(|| {
        panic!("stderr must contain `{prefix}COL: ` (file and line of the defect): {ctx}")
    });
    // `FILE:LINE:` is followed by `COL: ` and the message.
    let rest = &stderr[k + prefix.len()..];
    let ncol = rest.chars().take_while(|c| c.is_ascii_digit()).count();
    assert!(
        ncol > 0 && rest[ncol..].starts_with(": "),
        "expected `{prefix}COL: message`: {ctx}"
    );
    let msg = rest[ncol + 2..].lines().next().unwrap_or("");
    assert!(
        msg.contains(needle),
        "the message must name the problem (`{needle}`), got `{msg}`: {ctx}"
    );

    assert!(!out.exists(), "the output directory was created: {ctx}");
    let left = entries(&tmp.0);
    assert!(
        left.is_empty(),
        "files written before the error: {left:?}: {ctx}"
    );
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("output:"),
        "reported success: {ctx}"
    );
}

macro_rules! bad {
    ($name:ident, $at:expr, $line:expr, $needle:expr) => {
        #[test]
        fn $name() {
            check_bad(
                stringify!($name),
                concat!(stringify!($name), ".ron"),
                $at,
                $line,
                $needle,
            );
        }
    };
}

// Syntax and schema errors, reported by the RON parser.
bad!(syntax_missing_comma, At::Scene, 9, "comma");
bad!(syntax_missing_paren, At::Scene, 8, "`)`");
bad!(unknown_top_field, At::Scene, 11, "colour");
bad!(unknown_material_field, At::Scene, 11, "hardness");
bad!(wrong_type, At::Scene, 7, "Expected float");
// Materials.
bad!(empty_materials, At::Scene, 4, "materials");
bad!(duplicate_material, At::Scene, 6, "materials[1].name");
bad!(negative_young, At::Scene, 7, "materials[0].young");
bad!(mixed_laws, At::Scene, 4, "cannot be mixed");
bad!(hooke_pair_style, At::Scene, 6, "pair_style");
bad!(hertz_poisson, At::Scene, 5, "Poisson's ratio");
bad!(
    hertz_surface_energy,
    At::Scene,
    8,
    "must share surface_energy"
);
bad!(friction_angle, At::Scene, 9, "materials[0].friction_angle");
bad!(
    friction_twice,
    At::Scene,
    10,
    "materials[0].coefficientFriction: give either"
);
bad!(
    radius_and_diameter,
    At::Scene,
    10,
    "spheres[1].diameter: give either `radius` or `diameter`"
);
bad!(restitution, At::Scene, 11, "materials[0].restitution");
// CPM materials (issue 20: Yade names as aliases, friction as an angle or a tangent).
bad!(cpm_friction_twice, At::Scene, 8, "not both");
bad!(cpm_missing_cohesion, At::Scene, 5, "cohesion: required");
bad!(cpm_alias_twice, At::Scene, 7, "`cohesion` given twice");
bad!(
    cpm_friction_degrees,
    At::Scene,
    7,
    "materials[0].params.friction_angle: 38.66 rad"
);
// Outlets and inlets (issue 22).
bad!(
    outlet_bad_name,
    At::Scene,
    14,
    "outlets[1].name: must be 1 to 64 letters"
);
bad!(
    outlet_duplicate_name,
    At::Scene,
    14,
    "outlet `a` is defined twice"
);
bad!(outlet_zero_normal, At::Scene, 14, "normal must not be zero");
bad!(outlet_inverted_box, At::Scene, 14, "lo < hi");
bad!(
    outlet_cylinder_radius,
    At::Scene,
    14,
    "outlets[1].region: must be positive"
);
bad!(outlet_every_zero, At::Scene, 14, "outlets[1].every");
bad!(outlet_unknown_region, At::Scene, 14, "`Sphere`");
bad!(inlet_unknown_material, At::Scene, 14, "inlets[0].material");
bad!(
    inlet_psd_bounds,
    At::Scene,
    14,
    "inlets[0].psd: min 0.02 > max 0.01"
);
bad!(
    inlet_box_too_small,
    At::Scene,
    14,
    "wider than the largest diameter"
);
bad!(
    inlet_half_space,
    At::Scene,
    14,
    "inlets take a `Box` or `Cylinder` region"
);
bad!(inlet_fill_zero, At::Scene, 14, "Fill needs 1 to 2^40");
bad!(
    inlet_cylinder_thin,
    At::Scene,
    14,
    "inlets[0].region: the cylinder's diameter 0.008 and length 0.5 must exceed"
);
bad!(
    inlet_cylinder_outside_domain,
    At::Scene,
    14,
    "inlets[0].region: the region must lie inside the domain"
);
bad!(
    inlet_cylinder_radius,
    At::Scene,
    14,
    "inlets[0].region: must be positive"
);
bad!(
    inlet_cylinder_axis,
    At::Scene,
    14,
    "inlets[0].region: the axis ends a and b must differ"
);
bad!(inlet_outside_domain, At::Scene, 14, "inside the domain");
bad!(inlet_stop_before_start, At::Scene, 14, "inlets[0].stop");
bad!(
    inlet_tiny_spheres,
    At::Scene,
    14,
    "a diameter in the wrong unit?"
);
// Spheres.
bad!(negative_radius, At::Scene, 9, "spheres[1].radius");
bad!(zero_radius, At::Scene, 8, "spheres[0].radius");
bad!(unknown_sphere_material, At::Scene, 9, "spheres[1].material");
bad!(bad_blocked, At::Scene, 8, "spheres[0].blocked");
bad!(no_spheres, At::Scene, 7, "no spheres");
bad!(
    empty_without_domain,
    At::Scene,
    7,
    "spheres: a scene that starts without spheres needs a `domain`"
);
bad!(lattice_overlap, At::Scene, 11, "spheres[0].spacing");
// Data files.
bad!(missing_text_file, At::Scene, 9, "no_such_spheres.txt");
bad!(
    bad_text_columns,
    At::Data("bad_columns.txt"),
    4,
    "4 columns"
);
bad!(
    bad_text_tag,
    At::Data("bad_tag.txt"),
    3,
    "tag (5th column) `70000`"
);
bad!(
    bad_lammps,
    At::Data("bad_lammps.data"),
    13,
    "expected `id type diameter density x y z`"
);
// Meshes (issue 21): placed at the mesh's `file` field, naming the STL file, the triangle and
// its line in that file.
bad!(
    mesh_degenerate,
    At::Scene,
    9,
    "meshes[0].file: mesh_degenerate.stl: triangle 1 (line 9): zero area"
);
bad!(
    mesh_duplicate,
    At::Scene,
    9,
    "mesh_duplicate.stl: triangle 2 (line 16): duplicate of triangle 0"
);
bad!(
    mesh_nan,
    At::Scene,
    9,
    "mesh_nan.stl: triangle 0 (line 2): vertex 1 is not finite"
);
bad!(mesh_not_stl, At::Scene, 9, "neither ASCII STL");
bad!(
    mesh_syntax,
    At::Scene,
    9,
    "mesh_syntax.stl: triangle 0 (line 6): expected a number, found `vertex`"
);
bad!(mesh_missing_file, At::Scene, 9, "no_such_mesh.stl");
bad!(mesh_zero_axis, At::Scene, 10, "meshes[0].motion.axis");
// Issue 32, defect 9: accepted before.
bad!(
    mesh_omega_huge,
    At::Scene,
    10,
    "meshes[0].motion.omega: 1e300 rad/s at 1.4142e-1 m from the axis"
);
bad!(
    dt_bare_number,
    At::Scene,
    8,
    "dt: `1e-5` is a bare number: write `dt: Fixed(1e-5)`"
);
bad!(
    mesh_table_order,
    At::Scene,
    11,
    "meshes[0].motion.points[2]"
);
// Walls.
bad!(unknown_wall_material, At::Scene, 8, "walls[0].material");
bad!(zero_normal, At::Scene, 10, "walls[0].normal");
bad!(
    walls_same_plane,
    At::Scene,
    9,
    "walls[1]: overlaps walls[0]"
);
bad!(walls_facing, At::Scene, 9, "walls[1]: overlaps walls[0]");
bad!(sphere_behind_wall, At::Scene, 8, "behind");
// Time step, run length, damping, domain.
bad!(zero_dt, At::Scene, 11, "dt");
bad!(pwave_safety, At::Scene, 11, "safety");
bad!(steps_zero, At::Scene, 12, "run");
bad!(negative_time, At::Scene, 12, "run");
bad!(damping, At::Scene, 11, "damping");
bad!(periodic_small, At::Scene, 12, "halo");
// Defects beyond the original list, found while writing these tests (see each file's comment).
bad!(coincident_spheres, At::Scene, 9, "spheres[1]");
bad!(lammps_fixed_type, At::Scene, 11, "fixed_types");
bad!(lattice_count_overflow, At::Scene, 11, "spheres[0].counts");
bad!(
    replicate_zero,
    At::Scene,
    11,
    "replicate: every count must be ≥ 1"
);
bad!(
    replicate_oblique_wall,
    At::Scene,
    9,
    "walls[1]: oblique to the replicated axis x"
);

// Hostile input (issue 18): each of these crashed, aborted, hung or lost particles.
bad!(
    huge_skin,
    At::Scene,
    13,
    "skin: 1e10 m is more than 10 × the largest radius"
);
bad!(
    tiny_fixed_dt,
    At::Scene,
    11,
    "dt: 1e-30 s is less than 1e-6 × the p-wave"
);
bad!(endless_time, At::Scene, 12, "run: 1.6");
bad!(
    infinite_domain,
    At::Scene,
    13,
    "domain: the domain spans inf m along x"
);
bad!(far_spheres, At::Scene, 7, "spans inf m along x");
bad!(
    absurd_radius,
    At::Scene,
    8,
    "spheres[0]: sphere gid 0: absurd radius 1e300"
);
bad!(
    nan_sphere_velocity,
    At::Scene,
    9,
    "spheres[1].vel: components must be finite"
);
bad!(
    scene_name_dotdot,
    At::Scene,
    3,
    "name: must not be `.` or `..`"
);
bad!(
    missing_field,
    At::Scene,
    5,
    "materials[0]: missing field `name`"
);
bad!(
    duplicate_field,
    At::Scene,
    7,
    "materials[0].young: field given twice"
);
bad!(
    unclosed_comment,
    At::Scene,
    9,
    "block comment `/*` is never closed"
);
bad!(
    dense_pack_huge,
    At::Scene,
    8,
    "a dense packing has 1 to 2147483647"
);
bad!(
    random_fill_jammed,
    At::Scene,
    8,
    "spheres[0].count: 1000000 spheres"
);
bad!(
    random_fill_count,
    At::Scene,
    8,
    "spheres[0].count: too many spheres (at most 2147483647 per scene)"
);
bad!(
    lammps_huge_header,
    At::Data("lammps_huge_header.data"),
    3,
    "1000000000000 atoms: too many spheres"
);
bad!(
    lammps_short_file,
    At::Data("lammps_short_file.data"),
    3,
    "100000 atoms: a file of"
);
bad!(
    lammps_inf_coordinate,
    At::Data("lammps_inf_coordinate.data"),
    13,
    "values must be finite, got inf"
);
bad!(
    lammps_nan_coordinate,
    At::Data("lammps_nan_coordinate.data"),
    13,
    "values must be finite, got NaN"
);
bad!(
    lammps_inf_box,
    At::Data("lammps_inf_box.data"),
    7,
    "box bounds must be two finite numbers"
);
bad!(
    lammps_nan_velocity,
    At::Data("lammps_nan_velocity.data"),
    18,
    "velocities must be finite"
);

// The deforming periodic cell and the energy budget (issue 23).
bad!(cell_not_periodic, At::Scene, 13, "needs a periodic domain");
bad!(
    cell_gradient_open_axis,
    At::Scene,
    13,
    "moves a non-periodic axis (z)"
);
bad!(
    cell_stage_rate,
    At::Scene,
    13,
    "max_strain_rate: must be positive"
);
bad!(
    cell_grow_damping,
    At::Scene,
    13,
    "grow_damping: must be in [0, 1)"
);
bad!(
    cell_with_walls,
    At::Scene,
    13,
    "a wall's normal must lie along the non-periodic axes"
);
bad!(
    cell_shear_goal_servo,
    At::Scene,
    14,
    "shear stress goals need `servo: Affine`"
);
bad!(cell_shear_goal_rate, At::Scene, 13, "takes no shear_rate");
bad!(
    servo_walls_open_axis,
    At::Scene,
    12,
    "axis z needs one wall of normal +z"
);
bad!(
    servo_walls_moving_wall,
    At::Scene,
    12,
    "the servo sets the velocity of the box's walls"
);
bad!(
    energy_cpm,
    At::Scene,
    8,
    "visco-damage overstress and confinement are not split"
);
bad!(
    energy_position_mode,
    At::Scene,
    14,
    "the boundary's work needs `Velocity`"
);

/// A scene written by the test into `tmp/in/` (with its data files), run from `tmp/run/`.
struct Written {
    _tmp: TempDir,
    dir: PathBuf,
}

impl Written {
    fn new(test: &str, files: &[(&str, &[u8])]) -> Self {
        let tmp = TempDir::new(test);
        let dir = tmp.0.join("in");
        std::fs::create_dir(&dir).unwrap();
        for (name, bytes) in files {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
        Written { _tmp: tmp, dir }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// Two spheres, with `extra` top-level fields (a valid scene when `extra` is).
fn two_spheres(extra: &str) -> String {
    format!(
        "Scene(\n    materials: [Frict(name: \"s\", young: 2e8, friction_angle: 0.5, density: 7800.0)],\n    \
         spheres: [\n        Sphere(pos: (0.0, 0.0, 0.0), radius: 0.01, material: \"s\"),\n        \
         Sphere(pos: (0.0205, 0.0, 0.0), radius: 0.01, material: \"s\"),\n    ],\n    \
         dt: PWave(0.1),\n    run: Steps(10),{extra}\n)\n"
    )
}

/// `demhpc check SCENE` from an empty directory: exit 0, within the limits, nothing written.
fn assert_checks(test: &str, scene: &Path) {
    let tmp = TempDir::new(test);
    let o = demhpc(&tmp.0, &["check", scene.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("valid"),
        "{}",
        describe(&o)
    );
    assert!(entries(&tmp.0).is_empty(), "wrote {:?}", entries(&tmp.0));
}

/// 100 000 opening brackets overflowed the stack of the position scanner (exit 139).
#[test]
fn deeply_nested_brackets() {
    for (k, open) in ["[", "(", "{"].iter().enumerate() {
        let text = format!("Scene(\n  materials: {}", open.repeat(100_000));
        let w = Written::new("deeply_nested_brackets", &[("deep.ron", text.as_bytes())]);
        let scene = w.path("deep.ron");
        // the 128th bracket below `Scene(` opens at column 14 + 127 of line 2
        assert_refused(
            &format!("deeply_nested_brackets_{k}"),
            &scene,
            &scene,
            2,
            "brackets nested more than 128 deep",
            &format!("100 000 × `{open}`"),
        );
    }
}

/// Invalid UTF-8 is reported at its line and column (it had no position).
#[test]
fn invalid_utf8() {
    let mut text = two_spheres("").into_bytes();
    let k = text.windows(9).position(|w| w == b"name: \"s\"").unwrap();
    text[k + 7] = 0xff; // the `s` of `name: "s"` on line 2
    let w = Written::new("invalid_utf8", &[("utf.ron", &text)]);
    let scene = w.path("utf.ron");
    assert_refused(
        "invalid_utf8",
        &scene,
        &scene,
        2,
        "invalid UTF-8 (byte 0xff)",
        "0xff",
    );
}

/// A leading byte-order mark is skipped (it gave "Expected opening `(`").
#[test]
fn byte_order_mark_is_accepted() {
    let text = [b"\xEF\xBB\xBF".as_slice(), two_spheres("").as_bytes()].concat();
    let w = Written::new("byte_order_mark", &[("bom.ron", &text)]);
    assert_checks("byte_order_mark", &w.path("bom.ron"));
}

/// A scene file over 16 MiB is refused before it is read.
#[test]
fn oversized_scene() {
    let mut text = two_spheres("");
    text.push_str(&" ".repeat(17 << 20));
    let w = Written::new("oversized_scene", &[("big.ron", text.as_bytes())]);
    let scene = w.path("big.ron");
    assert_refused(
        "oversized_scene",
        &scene,
        &scene,
        1,
        "larger than the 16777216 bytes",
        "17 MiB",
    );
}

/// A FIFO as the scene or as a data file blocked the set-up for ever (`read_to_string`).
#[test]
fn fifo_inputs_are_refused() {
    let text = two_spheres("").replace(
        "spheres: [",
        "spheres: [\n        TextFile(path: \"fifo.txt\", material: \"s\"),",
    );
    let w = Written::new("fifo_inputs", &[("data.ron", text.as_bytes())]);
    for name in ["fifo.ron", "fifo.txt"] {
        let c = std::ffi::CString::new(w.path(name).to_str().unwrap()).unwrap();
        // SAFETY: plain FFI with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    }
    let scene = w.path("fifo.ron");
    assert_refused(
        "fifo_scene",
        &scene,
        &scene,
        1,
        "not a regular file",
        "FIFO scene",
    );
    let scene = w.path("data.ron");
    assert_refused(
        "fifo_data",
        &scene,
        &scene,
        4,
        "is not a regular file",
        "FIFO data file",
    );
}

/// A 2 GB data file without a newline is not read whole into memory (a sparse file: no disk).
#[test]
fn endless_data_line() {
    let text = two_spheres("").replace(
        "spheres: [",
        "spheres: [\n        TextFile(path: \"zeros.txt\", material: \"s\"),",
    );
    let w = Written::new("endless_data_line", &[("scene.ron", text.as_bytes())]);
    let f = std::fs::File::create(w.path("zeros.txt")).unwrap();
    f.set_len(2 << 30).unwrap();
    let data = w.path("zeros.txt");
    assert_refused(
        "endless_data_line",
        &w.path("scene.ron"),
        &data,
        1,
        "line longer than 65536 bytes",
        "2 GB without newline",
    );
}

/// A random fill of a few spheres of 1 µm in a 1 m box: its cell grid was sized (2e17 cells)
/// from the box and the radius; now the grid has at most about two cells per sphere.
#[test]
fn random_fill_tiny_radius_in_large_box() {
    let text = two_spheres("").replace(
        "spheres: [",
        "spheres: [\n        RandomFill(material: \"s\", lo: (1.0, 1.0, 1.0), hi: (2.0, 2.0, 2.0), \
         count: 1000, radius: 1e-6),",
    );
    let w = Written::new("random_fill_tiny", &[("fill.ron", text.as_bytes())]);
    assert_checks("random_fill_tiny", &w.path("fill.ron"));
}

// Protocols (issue 35).
bad!(stages_empty, At::Scene, 11, "stages: empty");
bad!(stage_no_end, At::Scene, 12, "no end condition");
bad!(stage_unknown_wall, At::Scene, 12, "no wall 3");
bad!(stage_negative_damping, At::Scene, 13, "must be in [0, 1)");
bad!(
    stage_zero_dt,
    At::Scene,
    13,
    "stages[1].dt: must be positive"
);
bad!(
    stage_particles_below_zero,
    At::Scene,
    13,
    "0 can never hold"
);
bad!(stage_omega_plane, At::Scene, 12, "only for a Cylinder wall");

/// Every scene in `tests/bad_scenes/` has a test above (a new file without one fails here).
#[test]
fn every_bad_scene_is_tested() {
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite/bad_input.rs"),
    )
    .unwrap()
    .split_whitespace()
    .collect::<String>();
    let mut n = 0;
    for f in entries(&bad_dir()) {
        if let Some(stem) = f.strip_suffix(".ron") {
            n += 1;
            assert!(
                src.contains(&format!("bad!({stem},")),
                "tests/bad_scenes/{f} has no `bad!({stem}, ...)` line"
            );
        }
    }
    assert!(n >= 18, "only {n} bad scenes");
}

#[test]
fn nonexistent_scene() {
    let tmp = TempDir::new("nonexistent_scene");
    let scene = tmp.0.join("no_such_scene.ron");
    let out = tmp.0.join("out");
    let o = demhpc(
        &tmp.0,
        &["--out", out.to_str().unwrap(), scene.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(scene.to_str().unwrap()),
        "the message must name the missing file: {}",
        describe(&o)
    );
    assert!(entries(&tmp.0).is_empty(), "wrote {:?}", entries(&tmp.0));
}

#[test]
fn scene_is_a_directory() {
    let tmp = TempDir::new("scene_is_a_directory");
    let out = tmp.0.join("out");
    let o = demhpc(
        &tmp.0,
        &["--out", out.to_str().unwrap(), bad_dir().to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(entries(&tmp.0).is_empty(), "wrote {:?}", entries(&tmp.0));
}

#[test]
fn threads_zero() {
    let tmp = TempDir::new("threads_zero");
    let out = tmp.0.join("out");
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/two_spheres.ron");
    let o = demhpc(
        &tmp.0,
        &[
            "--threads",
            "0",
            "--out",
            out.to_str().unwrap(),
            scene.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--threads"),
        "the message must name --threads: {}",
        describe(&o)
    );
    assert!(entries(&tmp.0).is_empty(), "wrote {:?}", entries(&tmp.0));
}

#[test]
fn unknown_flag() {
    let tmp = TempDir::new("unknown_flag");
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/two_spheres.ron");
    let o = demhpc(&tmp.0, &["--frobnicate", scene.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--frobnicate"),
        "{}",
        describe(&o)
    );
    assert!(entries(&tmp.0).is_empty(), "wrote {:?}", entries(&tmp.0));
}

#[test]
fn bad_flag_values() {
    let tmp = TempDir::new("bad_flag_values");
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/two_spheres.ron");
    let scene = scene.to_str().unwrap();
    for args in [
        &["--steps", "ten", scene][..],
        &["--threads", "-1", scene][..],
        &[][..], // no scene
    ] {
        let o = demhpc(&tmp.0, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", describe(&o));
    }
    assert!(entries(&tmp.0).is_empty(), "wrote {:?}", entries(&tmp.0));
}

/// `-q` keeps errors: the positioned message is still printed.
#[test]
fn quiet_still_reports_errors() {
    let tmp = TempDir::new("quiet_still_reports_errors");
    let scene = bad_dir().join("negative_radius.ron");
    let out = tmp.0.join("out");
    let o = demhpc(
        &tmp.0,
        &[
            "-q",
            "--out",
            out.to_str().unwrap(),
            scene.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!("{}:9:", scene.display())),
        "{}",
        describe(&o)
    );
    assert!(entries(&tmp.0).is_empty(), "wrote {:?}", entries(&tmp.0));
}

#[test]
fn help() {
    let tmp = TempDir::new("help");
    let o = demhpc(&tmp.0, &["--help"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    for flag in ["--steps", "--out", "--threads", "-q"] {
        assert!(
            text.contains(flag),
            "--help must mention {flag}: {}",
            describe(&o)
        );
    }
    assert!(entries(&tmp.0).is_empty(), "wrote {:?}", entries(&tmp.0));
}

/// Issue 32, defect 9: a mesh that lies wholly outside the domain (no sphere can ever touch
/// it: a misplaced `translate`, or other units) is warned about, naming the mesh.
#[test]
fn mesh_outside_the_domain_is_warned() {
    let stl = std::fs::read(bad_dir().join("mesh_square.stl")).unwrap();
    let scene = two_spheres(
        "\n    domain: Domain(lo: (-0.05, -0.05, -0.05), hi: (0.1, 0.05, 0.05)),\n    \
         meshes: [Mesh(file: \"square.stl\", material: \"s\", translate: (0.0, 0.0, 0.5))],",
    );
    let w = Written::new(
        "mesh_outside",
        &[("scene.ron", scene.as_bytes()), ("square.stl", &stl)],
    );
    let tmp = TempDir::new("mesh_outside_run");
    let o = demhpc(&tmp.0, &["check", w.path("scene.ron").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.lines().any(|l| l.contains("WARN")
            && l.contains("meshes[0]")
            && l.contains("outside the domain")),
        "{}",
        describe(&o)
    );
    // inside: no such warning
    let scene = scene.replace("translate: (0.0, 0.0, 0.5)", "translate: (0.0, 0.0, -0.02)");
    let w = Written::new(
        "mesh_inside",
        &[("scene.ron", scene.as_bytes()), ("square.stl", &stl)],
    );
    let o = demhpc(&tmp.0, &["check", w.path("scene.ron").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("outside the domain"),
        "{}",
        describe(&o)
    );
}

/// Significant digits of a number as printed (`2.890e-1` → 4, `6.324555320336759e-5` → 16).
fn significant_digits(num: &str) -> usize {
    let mantissa = num.split(['e', 'E']).next().unwrap();
    mantissa
        .chars()
        .filter(char::is_ascii_digit)
        .skip_while(|&c| c == '0')
        .count()
}

/// Issue 32, defect 9: times in warnings carry 4 significant digits (`6.325e-5 s`), not the
/// 16 of a full f64 (`6.324555320336759e-5 s`).
#[test]
fn times_in_warnings_have_four_significant_digits() {
    let scene = two_spheres("").replace("dt: PWave(0.1)", "dt: Fixed(3.3333333e-4)");
    let w = Written::new("dt_digits", &[("scene.ron", scene.as_bytes())]);
    let tmp = TempDir::new("dt_digits_run");
    let o = demhpc(&tmp.0, &["check", w.path("scene.ron").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let warn: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("dt"))
        .collect();
    assert!(!warn.is_empty(), "no dt warning: {}", describe(&o));
    for l in warn {
        let words: Vec<&str> = l.split_whitespace().collect();
        for pair in words
            .windows(2)
            .filter(|p| p[1].trim_end_matches([',', ':', ')']) == "s")
        {
            let n = pair[0];
            if n.parse::<f64>().is_ok() {
                assert!(significant_digits(n) <= 4, "`{n} s` in `{l}`");
            }
        }
        assert!(l.contains("3.333e-4 s"), "{l}");
    }
}
