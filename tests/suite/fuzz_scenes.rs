//! Scene fuzzing (issue 18): malformed scenes made by mutating the shipped ones run through the
//! real binary (`demhpc check`, which does everything a run does before its first output).
//! Every case must end with exit 0 (a valid scene) or 2 (bad input, with `FILE:LINE:COL:` of
//! the scene or of its data file on stderr) — never a panic (101), an abort (134), a stack
//! overflow (139) or another signal —, write nothing into its working directory, and stay
//! within 5 s and a 2 GiB address space (a runaway allocation fails inside the child).
//!
//! A mutation may also make a *valid* scene whose set-up is long (a digit of a `DensePack`
//! radius changed: 8× the spheres at a millisecond each). Such a case gets SIGTERM at 3.5 s
//! and must then stop within the 5 s with exit 1 and "stopped by SIGTERM during the set-up":
//! that is how a long set-up is interrupted (signals::SetupWatch), so a case that neither
//! ends nor stops is a hang. These cases are counted and printed; a real hang (no stop) fails.
//!
//! Deterministic: the cases follow from a seed (printed; `DEMHPC_FUZZ_SEED` overrides it,
//! `DEMHPC_FUZZ_CASES` the count), and a failing case's scene is kept and its path printed.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::limits::{run_limited_term, Limited};
use support::{TempDir, BIN};

const DEFAULT_SEED: u64 = 0x5eed_0018;
const DEFAULT_CASES: usize = 320;
/// Address space of a case (a valid 64 000-sphere scene needs ~40 MB resident).
const ADDRESS_SPACE: u64 = 2 << 30;
const TERM_AT: Duration = Duration::from_millis(3500);
const DEADLINE: Duration = Duration::from_secs(5);

/// SplitMix64 (as `scene::gen::splitmix`): a counter-based generator, no crate needed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

/// Numbers that break things: zero, negatives, overflow, underflow, NaN, ∞, huge integers.
const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "0.0",
    "-0.0",
    "1e308",
    "-1e308",
    "1.7976931348623157e308",
    "1e-308",
    "5e-324",
    "1e-30",
    "1e30",
    "1e12",
    "NaN",
    "inf",
    "-inf",
    "4294967296",
    "2147483648",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "-9223372036854775808",
    "1e",
    "0x10",
];

/// Fields and fragments worth inserting anywhere.
const SNIPPETS: &[&str] = &[
    "name: \"..\",",
    "name: \"\",",
    "name: \"a/b\",",
    "skin: 1e10,",
    "skin: 1e-300,",
    "run: Time(1e300),",
    "run: Steps(18446744073709551615),",
    "dt: Fixed(1e-30),",
    "dt: PWave(1e-300),",
    "replicate: (1000, 1000, 1000),",
    "replicate: (4294967296, 1, 1),",
    "domain: Domain(lo: (-1.7e308, -1.7e308, -1.7e308), hi: (1.7e308, 1.7e308, 1.7e308)),",
    "domain: Domain(lo: (0, 0, 0), hi: (1e-9, 1e-9, 1e-9), periodic: (true, true, true)),",
    "Sphere(pos: (1e308, 0, 0), radius: 1e300, material: \"grain\"),",
    "Sphere(pos: (NaN, 0, 0), radius: 0.001, material: \"grain\"),",
    "RandomFill(material: \"grain\", lo: (0, 0, 0), hi: (1, 1, 1), count: 1000000, radius: 1e-9),",
    "RandomFill(material: \"grain\", lo: (0, 0, 0), hi: (0.01, 0.01, 0.01), count: 5000, radius: 0.001),",
    "DensePack(material: \"grain\", shape: Box(lo: (0, 0, 0), hi: (1, 1, 1)), radius: 1e-5),",
    "DensePack(material: \"grain\", shape: Cylinder(base: (0, 0, 0), radius: -1, height: NaN), radius: 1e-3),",
    "Lattice(material: \"grain\", spacing: 1e-300, counts: (2000, 2000, 500), radius: 1e-301),",
    "TextFile(path: \"/dev/zero\", material: \"grain\"),",
    "TextFile(path: \".\", material: \"grain\"),",
    "LammpsData(path: \"/dev/null\", materials: [\"grain\"]),",
    "/*",
    "*/",
    "//",
    "\"",
    "r#\"",
    "\u{feff}",
    "\u{0}",
    "Scene(",
    "materials: [],",
    "walls: [Wall(point: (0, 0, 0), normal: (0, 0, 0), material: \"grain\")],",
    "strainer: Strainer(axis: 7, strain_rate: NaN),",
    "cpm: Cpm(interaction_radius: 1e308),",
    "checkpoint: (every: 0, keep: 0, dir: \"../..\"),",
    "output: Output(series_every: 0, progress_s: NaN),",
];

/// The shipped scenes, runnable from anywhere (data paths made absolute). The CPM scenes'
/// dense packings are shrunk to an eighth (~290 spheres): the shipped ones take ~3 s to
/// generate (about a millisecond a sphere) and are not what the fuzzing is after.
fn corpus() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut v: Vec<(String, String)> = std::fs::read_dir(root.join("scenes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ron"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let data = root.join("bench/data/data.chute");
            let text = text
                .replace("../bench/data/data.chute", data.to_str().unwrap())
                .replace("hi: (0.04, 0.04, 0.08)", "hi: (0.02, 0.02, 0.04)");
            (p.file_name().unwrap().to_string_lossy().into_owned(), text)
        })
        .collect();
    v.sort();
    assert!(v.len() >= 5, "scenes/*.ron: {}", v.len());
    v
}

/// Byte ranges of the number tokens of `t` (not inside identifiers).
fn numbers(t: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < t.len() {
        let starts = t[i].is_ascii_digit()
            || (matches!(t[i], b'-' | b'+' | b'.') && t.get(i + 1).is_some_and(u8::is_ascii_digit));
        let after_ident = i > 0 && (t[i - 1].is_ascii_alphanumeric() || t[i - 1] == b'_');
        if starts && !after_ident {
            let s = i;
            i += 1;
            while i < t.len() && (t[i].is_ascii_digit() || b".eE+-_".contains(&t[i])) {
                i += 1;
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}

/// The top-level fields of a scene (`name: value` directly inside `Scene(...)`), as byte
/// ranges of the whole `name: value` text. Strings and line comments are skipped.
fn fields(t: &[u8]) -> Vec<(String, usize, usize)> {
    let (mut out, mut depth, mut i) = (Vec::new(), 0i32, 0);
    let mut start: Option<(String, usize)> = None;
    while i < t.len() {
        match t[i] {
            b'"' => {
                i += 1;
                while i < t.len() && t[i] != b'"' {
                    i += if t[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if t.get(i + 1) == Some(&b'/') => {
                while i < t.len() && t[i] != b'\n' {
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' | b',' if depth == 1 => {
                if let Some((n, s)) = start.take() {
                    out.push((n, s, i));
                }
                if t[i] != b',' {
                    depth -= 1;
                }
            }
            b')' | b']' | b'}' => depth -= 1,
            c if depth == 1 && start.is_none() && (c.is_ascii_alphabetic() || c == b'_') => {
                let s = i;
                while i < t.len() && (t[i].is_ascii_alphanumeric() || t[i] == b'_') {
                    i += 1;
                }
                if t.get(i) == Some(&b':') {
                    start = Some((String::from_utf8_lossy(&t[s..i]).into_owned(), s));
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// One mutation of `t`.
fn mutate(rng: &mut Rng, t: &mut Vec<u8>, corpus: &[(String, String)]) {
    let n = t.len();
    let at = rng.below(n + 1);
    match rng.below(9) {
        0 => {
            // byte flip: a random byte, or one of the grammar's characters
            if n > 0 {
                let k = rng.below(n);
                t[k] = if rng.below(2) == 0 {
                    rng.next() as u8
                } else {
                    *rng.pick(b"()[]{},:\"'/*#.-+eE0123456789 \n_x")
                };
            }
        }
        1 => {
            let len = 1 + rng.below(64);
            t.drain(at..(at + len).min(n));
        }
        2 => {
            let len = 1 + rng.below(64);
            let span = t[at..(at + len).min(n)].to_vec();
            let k = at + span.len();
            t.splice(k..k, span);
        }
        3 | 4 => {
            // a number replaced by an extreme value (twice as likely: it finds the limits)
            let nums = numbers(t);
            if !nums.is_empty() {
                let (s, e) = *rng.pick(&nums);
                t.splice(s..e, rng.pick(EXTREMES).bytes());
            }
        }
        5 => {
            let open = *rng.pick(&["[", "(", "{", ")", "]", "Frict(", "(("]);
            let k = *rng.pick(&[1, 3, 127, 129, 5000]);
            t.splice(at..at, open.repeat(k).bytes());
        }
        6 => t.truncate(at),
        7 => {
            // a top-level field of another scene replaces ours (or is added)
            let (_, donor) = rng.pick(corpus);
            let df = fields(donor.as_bytes());
            if df.is_empty() {
                return;
            }
            let (name, s, e) = rng.pick(&df).clone();
            let piece = donor.as_bytes()[s..e].to_vec();
            match fields(t).into_iter().find(|f| f.0 == name) {
                Some((_, s2, e2)) => {
                    t.splice(s2..e2, piece);
                }
                None => {
                    let k = t
                        .windows(6)
                        .position(|w| w == b"Scene(")
                        .map_or(0, |k| k + 6);
                    t.splice(k..k, [b"\n", piece.as_slice(), b","].concat());
                }
            }
        }
        _ => {
            t.splice(at..at, rng.pick(SNIPPETS).bytes());
        }
    }
}

/// Case `k` of `seed`: 1 to 3 mutations of one corpus scene.
fn case(seed: u64, k: usize, corpus: &[(String, String)]) -> (String, Vec<u8>) {
    let mut rng = Rng(seed ^ (k as u64).wrapping_mul(0xd1b54a32d192ed03));
    let (name, text) = rng.pick(corpus).clone();
    let mut t = text.into_bytes();
    for _ in 0..1 + rng.below(3) {
        mutate(&mut rng, &mut t, corpus);
    }
    (name, t)
}

#[derive(Default)]
struct Tally {
    valid: usize,
    refused: usize,
    stopped: usize,
    max_rss: u64,
    slowest: f64,
    failures: Vec<String>,
}

/// Judge one finished case: `None` if it behaved.
fn judge(r: &Limited, dir: &Path, data: &Path) -> Result<u8, String> {
    let stderr = String::from_utf8_lossy(&r.out.stderr);
    if r.timed_out {
        return Err("hang: still running 5 s after start (SIGTERM did not stop it)".into());
    }
    let left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "scene.ron")
        .collect();
    if !left.is_empty() {
        return Err(format!("wrote {left:?}"));
    }
    match r.code() {
        Some(0) if !r.signalled => Ok(0),
        Some(2) => {
            let positioned = stderr.lines().any(|l| {
                ["scene.ron:", &format!("{}:", data.display())]
                    .iter()
                    .filter_map(|f| l.find(f).map(|k| &l[k + f.len()..]))
                    .any(|rest| {
                        let mut it = rest.splitn(3, ':');
                        let line = it.next().unwrap_or("");
                        let col = it.next().unwrap_or("");
                        !line.is_empty()
                            && line.bytes().all(|b| b.is_ascii_digit())
                            && !col.is_empty()
                            && col.bytes().all(|b| b.is_ascii_digit())
                            && it.next().is_some_and(|m| m.starts_with(' '))
                    })
            });
            if positioned {
                Ok(2)
            } else {
                Err("exit 2 without `scene.ron:LINE:COL: ` (or the data file's)".into())
            }
        }
        Some(1) if r.signalled && stderr.contains("stopped by SIGTERM during the set-up") => Ok(1),
        c => Err(format!(
            "exit {c:?} (signalled by us: {}), expected 0 or 2",
            r.signalled
        )),
    }
}

#[test]
fn mutated_scenes_never_crash_hang_or_write() {
    let seed = std::env::var("DEMHPC_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let cases = std::env::var("DEMHPC_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    let corpus = corpus();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/data/data.chute");
    let tmp = TempDir::new("fuzz_scenes");
    let next = AtomicUsize::new(0);
    let tally = Mutex::new(Tally::default());
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::SeqCst);
                if k >= cases {
                    return;
                }
                run_case(seed, k, &corpus, &tmp.0, &data, &tally);
            });
        }
    });
    let t = tally.into_inner().unwrap();
    eprintln!(
        "fuzz_scenes: seed {seed}, {cases} cases in {:.1} s: {} valid, {} refused (exit 2), {} \
         slow valid set-ups stopped by SIGTERM; slowest {:.2} s, largest peak RSS {} MB",
        start.elapsed().as_secs_f64(),
        t.valid,
        t.refused,
        t.stopped,
        t.slowest,
        t.max_rss >> 20
    );
    assert!(
        t.failures.is_empty(),
        "seed {seed} (DEMHPC_FUZZ_SEED={seed} reproduces): {} of {cases} cases failed:\n{}",
        t.failures.len(),
        t.failures.join("\n")
    );
    assert!(t.valid + t.refused + t.stopped == cases);
}

fn run_case(
    seed: u64,
    k: usize,
    corpus: &[(String, String)],
    root: &Path,
    data: &Path,
    tally: &Mutex<Tally>,
) {
    let (from, text) = case(seed, k, corpus);
    let dir: PathBuf = root.join(format!("case{k}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("scene.ron"), &text).unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["check", "scene.ron"])
        .current_dir(&dir)
        .env_remove("RUST_LOG")
        .env("RAYON_NUM_THREADS", "1");
    let r = run_limited_term(&mut cmd, ADDRESS_SPACE, Some(TERM_AT), DEADLINE);
    let verdict = judge(&r, &dir, data);
    let mut t = tally.lock().unwrap();
    t.max_rss = t.max_rss.max(r.max_rss);
    t.slowest = t.slowest.max(r.secs);
    match verdict {
        Ok(0) => t.valid += 1,
        Ok(2) => t.refused += 1,
        Ok(_) => t.stopped += 1,
        Err(why) => {
            let kept = root.with_extension(format!("case{k}.ron"));
            let _ = std::fs::write(&kept, &text);
            t.failures.push(format!(
                "case {k} (mutated {from}, kept in {}): {why} after {:.2} s\n  stderr: {}",
                kept.display(),
                r.secs,
                String::from_utf8_lossy(&r.out.stderr)
                    .lines()
                    .take(6)
                    .collect::<Vec<_>>()
                    .join("\n          ")
            ));
        }
    }
    drop(t);
    let _ = std::fs::remove_dir_all(&dir);
}
