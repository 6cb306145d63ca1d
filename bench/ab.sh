#!/usr/bin/env bash
# Same bits, same speed: two demhpc binaries on every scene of scenes/ (issue 33, acceptance 1).
#
#   bench/ab.sh OLD_DEMHPC NEW_DEMHPC                 # every scene, 200 steps, then the timings
#   SCENES="chute settle" STEPS=500 bench/ab.sh OLD NEW
#
# Bits: each scene runs STEPS steps with each binary (its final snapshot and checkpoint);
# series.csv must be the same bytes, the snapshots and the checkpoint the same datasets
# (h5diff, attributes included). A scene prints SAME or DIFFERS (then which files).
# Speed: TIME_SCENES (chute settle drum cpm_tension triax_peri) run TIME_STEPS steps, the two
# binaries alternating REPEAT times (default 3); the median of each binary's step loop
# (timing.json wall_s less its output phase) and their ratio new / old. Settings: THREADS (1),
# RANKS (1: no mpirun; R > 1 runs mpirun -n R), OUT (bench/work/ab), ENERGY=1 adds
# `energy: true` to the timed scenes (the energy budget's cost).
#
# Exit status 1 when a scene's bits differ.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
# shellcheck source=scripts/env.sh
source scripts/env.sh
OLD="$(realpath "${1:?usage: bench/ab.sh OLD_DEMHPC NEW_DEMHPC}")"
NEW="$(realpath "${2:?usage: bench/ab.sh OLD_DEMHPC NEW_DEMHPC}")"
STEPS="${STEPS:-200}"
THREADS="${THREADS:-1}"
RANKS="${RANKS:-1}"
REPEAT="${REPEAT:-3}"
TIME_STEPS="${TIME_STEPS:-1000}"
OUT="${OUT:-$ROOT/bench/work/ab}"
PY="${DEMHPC_PYTHON:-python3}"
ALL_SCENES="$(for f in scenes/*.ron; do basename "$f" .ron; done | tr '\n' ' ')"
SCENES="${SCENES:-$ALL_SCENES}"
TIME_SCENES="${TIME_SCENES:-chute settle drum cpm_tension triax_peri}"
mkdir -p "$OUT"

run() { # binary scene-file out steps
    local cmd=("$1" -q --threads "$THREADS" --steps "$4" --out "$3" "$2")
    if [ "$RANKS" -gt 1 ]; then
        mpirun -n "$RANKS" --bind-to none "${cmd[@]}"
    else
        "${cmd[@]}"
    fi
}

same_h5() { h5diff -q "$1" "$2" > /dev/null 2>&1; }

differs=0
echo "== bits: $STEPS steps, $RANKS rank(s) x $THREADS thread(s)" >&2
for s in $SCENES; do
    [ -f "scenes/$s.ron" ] || { echo "$s: no such scene" >&2; continue; }
    f="$ROOT/scenes/$s.ron"
    for who in old new; do
        rm -rf "$OUT/$s.$who"
        bin="$OLD"; [ "$who" = new ] && bin="$NEW"
        (cd "$ROOT/scenes" && run "$bin" "$f" "$OUT/$s.$who" "$STEPS") > "$OUT/$s.$who.log" 2>&1 ||
            { echo "$s: $who failed: $(tail -1 "$OUT/$s.$who.log")"; differs=1; continue 2; }
    done
    why=""
    cmp -s "$OUT/$s.old/series.csv" "$OUT/$s.new/series.csv" || why="$why series.csv"
    for a in "$OUT/$s.old"/snapshots/*.h5 "$OUT/$s.old"/checkpoints/ckpt_*.h5; do
        [ -e "$a" ] || continue
        b="${a/$s.old/$s.new}"
        same_h5 "$a" "$b" || why="$why ${a#"$OUT/$s.old/"}"
    done
    if [ -z "$why" ]; then
        echo "$s: SAME"
    else
        echo "$s: DIFFERS:$why"
        differs=1
    fi
done

[ -n "$TIME_SCENES" ] && [ "$REPEAT" -gt 0 ] || exit "$differs"
echo "== speed: $TIME_STEPS steps, median of $REPEAT alternating runs" >&2
printf '%-14s %10s %10s %8s\n' scene old_s new_s new/old
for s in $TIME_SCENES; do
    # beside the scene, so that its data paths (relative to it) hold
    f="$ROOT/scenes/.ab_$s.time.ron"
    trap 'rm -f "$ROOT"/scenes/.ab_*.time.ron' EXIT
    if [ "${ENERGY:-0}" = 1 ] && ! grep -q '^ *energy: *true' "scenes/$s.ron"; then
        sed -e "s#^Scene(#Scene(\n    energy: true,#" "scenes/$s.ron" > "$f"
    else
        cp "scenes/$s.ron" "$f"
    fi
    declare -a t_old=() t_new=()
    for ((k = 0; k < REPEAT; k++)); do
        for who in old new; do
            bin="$OLD"; [ "$who" = new ] && bin="$NEW"
            o="$OUT/$s.time.$who"
            rm -rf "$o"
            (cd "$ROOT/scenes" && run "$bin" "$f" "$o" "$TIME_STEPS") > "$o.log" 2>&1 ||
                { echo "$s: $who failed" >&2; continue; }
            t=$("$PY" -s -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["wall_s"] - d["phases_s"]["output"])' "$o/timing.json")
            if [ "$who" = old ]; then t_old+=("$t"); else t_new+=("$t"); fi
        done
    done
    # the timed runs too must agree to the bit (with ENERGY=1: the energy columns)
    cmp -s "$OUT/$s.time.old/series.csv" "$OUT/$s.time.new/series.csv" ||
        { echo "$s: timed runs' series.csv DIFFERS" >&2; differs=1; }
    "$PY" -s -c '
import statistics, sys
s, a, b = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
if a and b:
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{s:<14} {ma:10.3f} {mb:10.3f} {mb / ma:8.3f}")' "$s" "${t_old[*]:-}" "${t_new[*]:-}"
    unset t_old t_new
done
exit "$differs"
