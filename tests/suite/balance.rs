//! Dynamic load balancing (issue 19, acceptance 3), with real `mpirun` (oversubscribed): the
//! cuts move on a settling bed at 4 and 8 ranks and even out the load; nothing is lost (the
//! run checks particle count and exact total mass at every rebuild, and the bits below need
//! every contact history); the reproducible mode stays bitwise equal to one rank with cuts
//! moving; a restart from a balanced checkpoint continues bitwise on the same rank count
//! (default mode: the stored cuts) and on other rank counts (reproducible mode).

use crate::support;

use std::path::Path;
use support::*;

/// The small settle (512 spheres falling into a walled box) with checkpoints every 3000 steps;
/// balancing on (the default) or off.
fn scene(balance: bool) -> String {
    let s = settle_with_checkpoints(3000, 5);
    if balance {
        s
    } else {
        s.replace(
            "checkpoint: (every:",
            "balance: Balance(enabled: false),\n    checkpoint: (every:",
        )
    }
}

fn ok(o: &std::process::Output, what: &str) {
    assert_eq!(o.status.code(), Some(0), "{what}: {}", describe(o));
}

/// `timing.json` of a run: (cut moves, [max/avg of particles, contacts, cost per rank]).
fn balance_of(out: &Path) -> (u64, [f64; 3]) {
    let t = std::fs::read_to_string(out.join("timing.json")).unwrap();
    let num = |key: &str, from: usize| json_num(&t, key, from);
    let moves = num("\"cut_moves\"", 0) as u64;
    let load = t.find("\"load_per_rank\"").unwrap();
    let ratio = |name: &str| {
        let at = t[load..].find(name).unwrap() + load;
        num("\"max\"", at) / num("\"avg\"", at)
    };
    (
        moves,
        [ratio("particles"), ratio("contacts"), ratio("cost")],
    )
}

fn run(tmp: &TempDir, ranks: usize, threads: usize, steps: u64, out: &str, extra: &[&str]) {
    let s = steps.to_string();
    let mut args = vec!["--steps", &s, "--out", out];
    args.extend_from_slice(extra);
    args.push("scene.ron");
    ok(
        &demhpc(ranks, threads, &args, &tmp.0),
        &format!("{ranks}×{threads} {out}"),
    );
}

fn snap(tmp: &TempDir, out: &str, step: u64) -> State {
    read_state(&tmp.0.join(out).join(format!("snapshots/snap_{step:09}.h5")))
}

/// Acceptance 19.3: the cuts move on settle at 4 and 8 ranks, and the modelled cost and the
/// contacts per rank are more even than with the cuts left where they were.
#[test]
fn balancing_moves_the_cuts_and_evens_the_load() {
    let tmp = TempDir::new("bal-even");
    for ranks in [4, 8] {
        let mut got = Vec::new();
        for on in [true, false] {
            std::fs::write(tmp.0.join("scene.ron"), scene(on)).unwrap();
            let out = format!("r{ranks}_{on}");
            run(&tmp, ranks, 1, 6000, &out, &[]);
            got.push(balance_of(&tmp.0.join(&out)));
        }
        let ((moves, on), (moves_off, off)) = (got[0], got[1]);
        eprintln!("{ranks} ranks: {moves} cut moves; max/avg particles, contacts, cost: {on:.3?} balanced, {off:.3?} not");
        assert!(moves > 0, "{ranks} ranks: the cuts never moved");
        assert_eq!(moves_off, 0);
        assert!(on[2] < off[2] && on[2] < 1.25, "cost: {on:?} vs {off:?}");
        assert!(on[1] < off[1], "contacts: {on:?} vs {off:?}");
    }
}

/// Acceptance 19.3: with the cuts moving, the reproducible mode gives the bits of one rank on
/// 2, 3, 4 and 8 ranks and with 2 threads.
#[test]
fn reproducible_mode_is_bitwise_with_moving_cuts() {
    let tmp = TempDir::new("bal-repro");
    std::fs::write(tmp.0.join("scene.ron"), scene(true)).unwrap();
    let layouts = [(1, 1), (1, 2), (2, 1), (3, 1), (4, 1), (8, 1), (4, 2)];
    let mut reference = None;
    for (r, t) in layouts {
        let out = format!("r{r}t{t}");
        run(&tmp, r, t, 6000, &out, &["--reproducible"]);
        let s = snap(&tmp, &out, 6000);
        if r >= 4 {
            let (moves, load) = balance_of(&tmp.0.join(&out));
            eprintln!("{r}×{t}: {moves} cut moves, {load:.3?}");
            assert!(moves > 0, "{r} ranks: the cuts never moved");
        }
        match &reference {
            None => {
                assert!(s.ncontacts.iter().any(|&c| c > 0));
                reference = Some(s);
            }
            Some(a) => assert!(
                *a == s,
                "{r} ranks × {t} threads differ from 1 rank (hash {:016x} vs {:016x})",
                hash(a),
                hash(&s)
            ),
        }
    }
}

/// Acceptance 19.3: a restart from a balanced checkpoint continues bitwise — on the same rank
/// count in the default mode (the checkpoint's cuts are taken), and on 3 and 8 ranks in the
/// reproducible mode (new cuts, balanced on the checkpoint's positions).
#[test]
fn restarts_from_balanced_checkpoints_continue_bitwise() {
    let tmp = TempDir::new("bal-restart");
    std::fs::write(tmp.0.join("scene.ron"), scene(true)).unwrap();
    // default mode, 4 ranks: 6000 steps straight, and from the checkpoint of step 3000
    run(&tmp, 4, 1, 6000, "d4", &[]);
    let ck = tmp.0.join("d4/checkpoints/ckpt_0000003000.h5");
    assert!(
        balance_of(&tmp.0.join("d4")).0 > 0,
        "no cut moved before the checkpoint"
    );
    let c = ck.to_str().unwrap();
    ok(
        &demhpc(
            4,
            1,
            &["--restart", c, "--steps", "6000", "--out", "d4r"],
            &tmp.0,
        ),
        "default restart",
    );
    assert!(
        snap(&tmp, "d4", 6000) == snap(&tmp, "d4r", 6000),
        "default-mode restart on the same ranks differs"
    );
    // reproducible: written on 4 ranks, continued on 3 and 8, against one rank
    run(&tmp, 4, 1, 6000, "p4", &["--reproducible"]);
    run(&tmp, 1, 1, 6000, "p1", &["--reproducible"]);
    let ck = tmp.0.join("p4/checkpoints/ckpt_0000003000.h5");
    let c = ck.to_str().unwrap();
    let reference = snap(&tmp, "p1", 6000);
    for ranks in [3, 8] {
        let out = format!("p{ranks}r");
        ok(
            &demhpc(
                ranks,
                1,
                &["--restart", c, "--steps", "6000", "--out", &out],
                &tmp.0,
            ),
            "reproducible restart",
        );
        assert!(
            snap(&tmp, &out, 6000) == reference,
            "restart on {ranks} ranks differs from one uninterrupted rank"
        );
    }
}
