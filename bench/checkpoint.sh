#!/usr/bin/env bash
# Checkpoint write and read cost (issue #4): settle-64k and the 32k chute on 1 and 2 ranks, a
# 1M-particle lattice on 1 rank (and 2 with CKPT_LARGE_RANKS="1 2").
#
#   bench/checkpoint.sh
#   SETTLE_STEPS=3000 LATTICE_N=100 CKPT_RANKS="1 2" bench/checkpoint.sh
#
# For each case: run to a dense state and checkpoint; restart from that checkpoint for a few
# steps (timed read), checkpoint again at the end (timed write). The compute cost of a step is
# taken from the restarted run (a dense state, not the cheap free fall of the first steps). All
# figures come from the runs' timing.json. Prints one line per run:
#   MB, write s and MB/s, read s and MB/s, step s, write / step (target < 20).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh

SETTLE_STEPS="${SETTLE_STEPS:-3000}"
LATTICE_N="${LATTICE_N:-100}"
CKPT_RANKS="${CKPT_RANKS:-1 2}"
CKPT_LARGE_RANKS="${CKPT_LARGE_RANKS:-1}"
STEPS_AFTER="${STEPS_AFTER:-100}"
WORK="bench/work/checkpoint"
mkdir -p "$WORK"

cargo build --release --quiet
BIN="$(pwd)/${CARGO_TARGET_DIR:-target}/release/demhpc"

# A 1M-particle block: spheres of radius 1 mm on a 2 mm lattice (touching neighbours), on a
# floor under gravity.
lattice_scene() {
    local n="$1"
    cat <<EOF
Scene(
    name: "lattice_${n}",
    materials: [Frict(name: "g", young: 1e7, poisson: 0.25, friction_angle: 0.4636, density: 2600.0)],
    walls: [Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "g")],
    spheres: [Lattice(material: "g", origin: (1e-3, 1e-3, 1e-3), spacing: 2.0e-3,
                      counts: ($n, $n, $n), radius: 1e-3, seed: 1)],
    gravity: (0.0, 0.0, -9.81), damping: 0.3, dt: Fixed(7e-6), skin: 0.2e-3, run: Steps(1),
    output: Output(series_every: 0, snapshot_every: 0, progress_s: 30.0),
)
EOF
}

# launch RANKS ARGS... : demhpc on RANKS ranks (1 thread each)
launch() {
    local ranks="$1"
    shift
    if [ "$ranks" -eq 1 ]; then
        "$BIN" -q --threads 1 "$@"
    else
        mpirun -n "$ranks" --oversubscribe --bind-to none "$BIN" -q --threads 1 "$@"
    fi
}

# measure NAME SCENE STEPS RANKS STEPS_AFTER
measure() {
    local name="$1" scene="$2" steps="$3" ranks="$4" after="$5" out
    out="$WORK/${name}_r${ranks}"
    rm -rf "$out"
    launch "$ranks" --steps "$steps" --out "$out" "$scene" >/dev/null
    local ck
    ck="$out/checkpoints/$(cat "$out/checkpoints/latest")"
    launch "$ranks" --restart "$ck" --steps "$((steps + after))" --out "$out" >/dev/null
    ck="$out/checkpoints/$(cat "$out/checkpoints/latest")"
    "$DEMHPC_PYTHON" - "$out/timing.json" "$name" "$ranks" "$ck" <<'PY'
import json, sys
import h5py
t = json.load(open(sys.argv[1]))
a = h5py.File(sys.argv[4], "r").attrs
contacts = int(a["n_contacts"]) + int(a["n_wall_contacts"])
c = t["checkpoint"]
# the run's wall time includes its final checkpoint: take it out of the per-step cost
step_s = max(t["wall_s"] - c["write_s"], 1e-12) / max(t["steps"], 1)
mb_w, mb_r = c["write_bytes"] / 1e6, c["read_bytes"] / 1e6
print(f"checkpoint {sys.argv[2]} N={t['particles']} contacts={contacts} ranks={sys.argv[3]} MB={mb_w:.1f} "
      f"write_s={c['write_s']:.3f} write_MBps={mb_w / max(c['write_s'], 1e-9):.0f} "
      f"read_s={c['read_s']:.3f} read_MBps={mb_r / max(c['read_s'], 1e-9):.0f} "
      f"step_s={step_s:.4g} write_in_steps={c['write_s'] / step_s:.1f}")
PY
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) cores), 1 thread per rank"
for r in $CKPT_RANKS; do
    measure settle64k scenes/settle_large.ron "$SETTLE_STEPS" "$r" "$STEPS_AFTER"
done
# the chute: a dense, sliding packing (~15 000 contacts with history from the start)
for r in $CKPT_RANKS; do
    measure chute32k scenes/chute.ron 200 "$r" "$STEPS_AFTER"
done
lattice_scene "$LATTICE_N" >"$WORK/lattice.ron"
for r in $CKPT_LARGE_RANKS; do
    measure "lattice$((LATTICE_N * LATTICE_N * LATTICE_N))" "$WORK/lattice.ron" 20 "$r" 20
done
