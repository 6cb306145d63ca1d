//! Property tests of the scene parser, in process (issue 18): arbitrary text and mutated
//! shipped scenes never make `Scene::parse` panic, and every error it returns is bad input
//! (`Error::Scene` with a position, or `Error::Input`) — never a runtime, I/O or stop error.
//! The binary-level fuzzing (exit codes, hangs, memory) is `tests/suite/fuzz_scenes.rs`.

use demhpc::scene::Scene;
use demhpc::Error;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Small scenes that parse in milliseconds (the CPM scenes' dense packings take seconds), each
/// with the file that anchors its relative data paths.
fn corpus() -> Vec<(String, PathBuf)> {
    let scene = |n: &str| {
        let p = root().join("scenes").join(n);
        (std::fs::read_to_string(&p).unwrap(), p)
    };
    let lammps = r#"Scene(
    materials: [Frict(name: "steel", young: 2e8, poisson: 0.3, friction_angle: 0.5, density: 7800.0)],
    spheres: [LammpsData(path: "good_lammps.data", materials: ["steel"], fixed_types: [1])],
    dt: PWave(0.1),
    run: Time(0.01),
)"#;
    vec![
        scene("two_spheres.ron"),
        scene("settle.ron"),
        (lammps.into(), root().join("tests/bad_scenes/props.ron")),
    ]
}

/// Parse `text` as `file`: Ok, or an error of bad input (a panic fails the test by itself).
fn parses_or_refuses(text: &str, file: &Path) -> Result<(), TestCaseError> {
    match Scene::parse(text, file) {
        Ok(_) | Err(Error::Input(_)) => Ok(()),
        Err(Error::Scene { line, col, .. }) if line >= 1 && col >= 1 => Ok(()),
        Err(e) => Err(TestCaseError::fail(format!("not a bad-input error: {e:?}"))),
    }
}

/// The nearest char boundary at or before `k`.
fn floor_boundary(s: &str, k: usize) -> usize {
    let mut k = k.min(s.len());
    while !s.is_char_boundary(k) {
        k -= 1;
    }
    k
}

/// Numbers that break things, plus arbitrary ones.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<f64>().prop_map(|x| format!("{x:e}")),
        any::<f64>().prop_map(|x| format!("{x}")),
        any::<u64>().prop_map(|x| x.to_string()),
        any::<i64>().prop_map(|x| x.to_string()),
        Just("NaN".to_string()),
        Just("inf".to_string()),
        Just("-inf".to_string()),
        Just("1e308".to_string()),
        Just("5e-324".to_string()),
        Just("18446744073709551616".to_string()),
    ]
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(512))]

    /// Any text at all.
    #[test]
    fn arbitrary_text(s in any::<String>()) {
        parses_or_refuses(&s, Path::new("arbitrary.ron"))?;
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// A shipped scene with a span deleted and arbitrary text inserted in its place.
    #[test]
    fn scene_with_a_span_replaced(
        which in 0usize..3,
        at in any::<usize>(),
        del in 0usize..48,
        ins in any::<String>(),
    ) {
        let (text, file) = corpus().swap_remove(which);
        let a = floor_boundary(&text, at % (text.len() + 1));
        let b = floor_boundary(&text, a + del);
        let t = format!("{}{ins}{}", &text[..a], &text[b..]);
        parses_or_refuses(&t, &file)?;
    }

    /// A shipped scene with one of its numbers replaced by an extreme or arbitrary one.
    #[test]
    fn scene_with_a_number_replaced(which in 0usize..3, pick in any::<usize>(), v in number()) {
        let (text, file) = corpus().swap_remove(which);
        let nums: Vec<(usize, usize)> = numbers(&text);
        prop_assume!(!nums.is_empty());
        let (a, b) = nums[pick % nums.len()];
        let t = format!("{}{v}{}", &text[..a], &text[b..]);
        parses_or_refuses(&t, &file)?;
    }
}

/// Byte ranges of the number tokens of `t` (ASCII: char boundaries).
fn numbers(t: &str) -> Vec<(usize, usize)> {
    let b = t.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let after_ident = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if (b[i].is_ascii_digit() || b[i] == b'-') && !after_ident {
            let s = i;
            i += 1;
            while i < b.len() && (b[i].is_ascii_digit() || b".eE+-".contains(&b[i])) {
                i += 1;
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}
