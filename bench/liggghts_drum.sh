#!/usr/bin/env bash
# Drum validation (issue 21, acceptance 3): the dynamic angle of repose of a half-filled
# rotating drum in demhpc and LIGGGHTS on the same set-up, and their speed per core, the same
# input in the same invocation:
#
#   bench/liggghts_drum.sh                          # both codes, 2 revolutions (640 000 steps)
#   REPEATS=3 bench/liggghts_drum.sh                # + 3 timing-only runs of each code
#   LONG=0 REPEATS=3 TIME_STEPS=100000 bench/liggghts_drum.sh   # timing runs only
#   STEPS=100000 LONG_T0=1.0 bench/liggghts_drum.sh # a quick look (average from t = 1 s)
#
# The drum: scenes/drum_hertz.stl (scenes/make_drum_stl.py --radius 0.05 --length 0.03, 384
# triangles) turning about +y at omega = 0.99045 rad/s (Fr = omega^2 R / g = 5e-3), 4 720
# glass beads (d = 3 mm +-10 %, bench/data/gen_drum.py, the same data file for both codes),
# Hertz-Mindlin E = 1e7 Pa, nu = 0.25, e = 0.9, mu = 0.4, dt = 2e-5 s, skin 0.3 mm.
# LIGGGHTS: bench/liggghts/in.drum_hertz (fix mesh/surface + move/mesh rotate + wall/gran
# model hertz tangential history); demhpc: scenes/drum_hertz.ron on one thread.
#
# Steps: (1) the settled bed's fill, demhpc with the drum at rest (STATIC=0 skips it);
# (2) the long runs (LONG=0 skips them), LIGGGHTS dumping and demhpc writing a snapshot every
# DUMP_EVERY steps, each timed alone (user CPU seconds, /usr/bin/time), then
# bench/drum_angle.py measures both angles the same way (average from one revolution on) and
# draws PLOT; (3) REPEATS timing-only runs of TIME_STEPS steps of each code (no output),
# alternating, one process at a time, and the ratio LIGGGHTS / demhpc user CPU time per run
# with its min and median. Needs `liggghts` (Debian package liggghts, `scripts/setup.sh
# --peers`), GNU time and a release build.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/env.sh
source "$root/scripts/env.sh"
PY="$DEMHPC_PYTHON"
STEPS="${STEPS:-640000}"
DUMP_EVERY="${DUMP_EVERY:-5000}"
REPEATS="${REPEATS:-0}"
TIME_STEPS="${TIME_STEPS:-100000}"
STATIC="${STATIC:-1}"
LONG="${LONG:-1}"
LONG_T0="${LONG_T0:-}"
PLOT="${PLOT:-$root/bench/drum_angle.png}"
NICE="${NICE:-5}"
LIGGGHTS="${LIGGGHTS:-liggghts}"
OMEGA=0.99045
DT=2e-5
work="${BENCH_WORK:-$root/bench/work}/liggghts_drum"
mkdir -p "$work"
bin="$root/target/release/demhpc"
[ -x "$bin" ] || (cd "$root" && cargo build --release -q)

# the inputs, regenerated and checked against the committed copies
python3 "$root/bench/data/gen_drum.py" 4720 "$work/drum_hertz.data" >/dev/null
python3 "$root/scenes/make_drum_stl.py" --radius 0.05 --length 0.03 --out "$work/drum_hertz.stl" \
    >/dev/null
cmp -s "$work/drum_hertz.data" "$root/bench/data/drum_hertz.data" ||
    { echo "bench/data/drum_hertz.data differs from gen_drum.py's output" >&2; exit 1; }
cmp -s "$work/drum_hertz.stl" "$root/scenes/drum_hertz.stl" ||
    { echo "scenes/drum_hertz.stl differs from make_drum_stl.py's output" >&2; exit 1; }
# demhpc scenes in the work directory: the run as committed, without output (timing), at rest
sed -e "s|\"drum_hertz.stl\"|\"$root/scenes/drum_hertz.stl\"|" \
    -e "s|\"../bench/data/drum_hertz.data\"|\"$root/bench/data/drum_hertz.data\"|" \
    -e "s|snapshot_every: 5000|snapshot_every: $DUMP_EVERY|" \
    "$root/scenes/drum_hertz.ron" > "$work/drum_hertz.ron"
sed -e "s|series_every: 5000, snapshot_every: $DUMP_EVERY|series_every: 0, snapshot_every: 0|" \
    "$work/drum_hertz.ron" > "$work/drum_hertz_time.ron"
sed -e "s|motion: Rotate(.*omega: [0-9.e+-]*)|motion: Fixed|" "$work/drum_hertz.ron" > "$work/drum_hertz_static.ron"
grep -q "series_every: 0, snapshot_every: 0" "$work/drum_hertz_time.ron"
grep -q "motion: Fixed" "$work/drum_hertz_static.ron"

# user CPU seconds of one command (GNU time; stdout/stderr of the command to FILE.out)
user_s() {
    local out="$1"; shift
    /usr/bin/time -f "%U %S %e" -o "$out.time" nice -n "$NICE" "$@" >"$out.out" 2>&1 ||
        { echo "failed: $* (see $out.out)" >&2; tail -5 "$out.out" >&2; exit 1; }
    awk '{print $1}' "$out.time"
}
run_lig() {  # steps dump_every tag
    (cd "$work" && user_s "$work/lig_$3" "$LIGGGHTS" -in "$root/bench/liggghts/in.drum_hertz" \
        -var data "$root/bench/data/drum_hertz.data" -var stl "$root/scenes/drum_hertz.stl" \
        -var steps "$1" -var omega "$OMEGA" -var dump_every "$2" -var thermo_every 5000 \
        -var dumpfile "dump.$3" -log "log.$3" -screen "$work/lig_$3.screen")
}
run_dem() {  # steps scene tag
    user_s "$work/dem_$3" "$bin" -q --threads 1 --steps "$1" --out "$work/demhpc_$3" "$2"
}
loop_lig() { sed -n 's/^Loop time of \([0-9.e+-]*\) on.*/\1/p' "$work/log.$1" | tail -1; }
wall_dem() { "$PY" -c "import json; print(json.load(open('$work/demhpc_$1/timing.json'))['wall_s'])"; }

echo "machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$(cd "$work" && "$LIGGGHTS" -log none -h 2>/dev/null | sed -n 's/^\(LIGGGHTS (Version [^)]*)\).*/\1/p' | head -1); demhpc $(cd "$root" && git rev-parse --short HEAD)"

if [ "$STATIC" != 0 ]; then
    run_dem 40000 "$work/drum_hertz_static.ron" static >/dev/null
    "$PY" "$root/bench/drum_angle.py" --static "$work/demhpc_static"
fi

if [ "$LONG" != 0 ]; then
    rm -rf "$work/demhpc_long" "$work/dump.long"
    tl=$(run_lig "$STEPS" "$DUMP_EVERY" long)
    td=$(run_dem "$STEPS" "$work/drum_hertz.ron" long)
    echo "long runs, $STEPS steps ($("$PY" -c "print(f'{$STEPS * $DT:.2f} s, {$STEPS * $DT * $OMEGA / 6.283185307179586:.2f} revolutions')")), output every $DUMP_EVERY steps:"
    echo "  liggghts user_s=$tl loop_s=$(loop_lig long)"
    echo "  demhpc   user_s=$td wall_s=$(wall_dem long)"
    "$PY" -c "print(f'  ratio demhpc/liggghts per core (user CPU): {$tl / $td:.2f}')"
    "$PY" "$root/bench/drum_angle.py" --demhpc "$work/demhpc_long" --liggghts "$work/dump.long" \
        --dt "$DT" --omega "$OMEGA" ${LONG_T0:+--t0 "$LONG_T0"} --plot "$PLOT" \
        --json "$work/angles.json"
fi

if [ "$REPEATS" -gt 0 ]; then
    ratios=()
    for k in $(seq "$REPEATS"); do
        tl=$(run_lig "$TIME_STEPS" 0 "time$k")
        td=$(run_dem "$TIME_STEPS" "$work/drum_hertz_time.ron" "time$k")
        r=$("$PY" -c "print(f'{$tl / $td:.3f}')")
        ratios+=("$r")
        echo "timing $k/$REPEATS, $TIME_STEPS steps: liggghts user_s=$tl (loop $(loop_lig "time$k")), demhpc user_s=$td (wall $(wall_dem "time$k")), ratio $r"
    done
    "$PY" -c "import statistics, sys; r = [float(x) for x in sys.argv[1:]]; print(f'ratio demhpc/liggghts per core (user CPU, {len(r)} runs): min {min(r):.2f} median {statistics.median(r):.2f} max {max(r):.2f}')" "${ratios[@]}"
fi
