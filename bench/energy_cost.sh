#!/usr/bin/env bash
# The energy budget's cost (issue 33, acceptance 5): one demhpc binary on each scene with and
# without `energy: true`, alternating, in one invocation.
#
#   bench/energy_cost.sh [DEMHPC]                     # chute_hertz settle drum, 1000 steps
#   SCENES="chute_hertz" STEPS=500 REPEAT=7 bench/energy_cost.sh target/release/demhpc
#
# Each scene runs STEPS steps REPEAT times (default 5) each way, the two alternating (ABBA);
# printed: the median of each way's step loop (timing.json wall_s less its output phase,
# which holds the series rows' budget) and their ratio on / off, the ratio of the fastest
# runs (min_r: the least disturbed on a shared machine), the medians of the contact and
# integrator phases.
# Settings: THREADS (1), OUT (bench/work/energy_cost). Target: ratio ≤ 1.2.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
# shellcheck source=scripts/env.sh
source scripts/env.sh
BIN="$(realpath "${1:-target/release/demhpc}")"
STEPS="${STEPS:-1000}"
THREADS="${THREADS:-1}"
REPEAT="${REPEAT:-5}"
OUT="${OUT:-$ROOT/bench/work/energy_cost}"
PY="${DEMHPC_PYTHON:-python3}"
SCENES="${SCENES:-chute_hertz settle drum}"
mkdir -p "$OUT"
trap 'rm -f "$ROOT"/scenes/.energy_*.ron' EXIT

echo "== $BIN: $STEPS steps, $THREADS thread(s), median of $REPEAT alternating runs" >&2
printf '%-12s %8s %8s %7s %7s %9s %9s %9s %9s\n' scene off_s on_s on/off min_r \
    contact_off contact_on integ_off integ_on
for s in $SCENES; do
    # beside the scene, so that its data paths (relative to it) hold
    off="$ROOT/scenes/.energy_off_$s.ron"
    on="$ROOT/scenes/.energy_on_$s.ron"
    grep -v '^ *energy: *true' "scenes/$s.ron" > "$off"
    sed -e "s#^Scene(#Scene(\n    energy: true,#" "$off" > "$on"
    rows=()
    for ((k = 0; k < REPEAT; k++)); do
        # ABBA: which way runs first alternates (a machine that slows the second of two
        # runs, or the first, weighs both alike)
        order="off on"; [ $((k % 2)) = 1 ] && order="on off"
        for way in $order; do
            o="$OUT/$s.$way"
            rm -rf "$o"
            f="$off"; [ "$way" = on ] && f="$on"
            (cd "$ROOT/scenes" && "$BIN" -q --threads "$THREADS" --steps "$STEPS" --out "$o" "$f") \
                > "$o.log" 2>&1 || { echo "$s: $way failed: $(tail -1 "$o.log")" >&2; exit 1; }
            rows+=("$way:$("$PY" -s -c '
import json, sys
d = json.load(open(sys.argv[1])); p = d["phases_s"]
print(d["wall_s"] - p["output"], p["contact"], p["integrate"], sep=",")' "$o/timing.json")")
        done
    done
    "$PY" -s -c '
import statistics, sys
s, rows = sys.argv[1], sys.argv[2:]
val = lambda way, k: [float(r.split(":")[1].split(",")[k]) for r in rows if r.startswith(way + ":")]
col = lambda way, k: statistics.median(val(way, k))
off, on = col("off", 0), col("on", 0)
# the ratio of the fastest runs too: the least disturbed on a shared machine
least = min(val("on", 0)) / min(val("off", 0))
c = [col(w, k) for k in (1, 2) for w in ("off", "on")]
print(f"{s:<12} {off:8.3f} {on:8.3f} {on / off:7.3f} {least:7.3f} " + " ".join(f"{x:9.3f}" for x in c))' "$s" "${rows[@]}"
done
