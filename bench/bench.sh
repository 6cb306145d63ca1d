#!/usr/bin/env bash
# Side-by-side benchmark of demhpc and LAMMPS on the same inputs, same machine, same invocation.
#
#   bench/bench.sh                 # settle-8k, settle-64k, chute; demhpc at 1 and 2 threads
#   SETTLE_STEPS=20000 SETTLE_LARGE_STEPS=4000 CHUTE_STEPS=1000 CPM_STEPS=5000 bench/bench.sh
#   CASES=cpm bench/bench.sh       # only the CPM tension test (no LAMMPS counterpart)
#   CASES="chute cpm" bench/bench.sh   # a selection of settle8k, settle64k, chute, cpm
#
# Prints one line per run with particle-steps/s (psps) and psps per core, then the ratio
# demhpc/LAMMPS per core: against LAMMPS on one core, and for T > 1 threads also against
# LAMMPS on T MPI ranks (the same core count; its per-core rate falls with the ranks too). Both codes run the same step range from the same initial state
# (the first steps of settle are mostly free fall and cheap: compare like with like).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh

SETTLE_STEPS="${SETTLE_STEPS:-20000}"
SETTLE_LARGE_STEPS="${SETTLE_LARGE_STEPS:-4000}"
CHUTE_STEPS="${CHUTE_STEPS:-1000}"
CPM_STEPS="${CPM_STEPS:-5000}"
THREADS_LIST="${THREADS_LIST:-1 2}"
WORK="bench/work"
mkdir -p "$WORK"

cargo build --release --quiet
BIN="${CARGO_TARGET_DIR:-target}/release/demhpc"

# demhpc_run NAME SCENE STEPS THREADS -> prints a result line, returns psps per core
demhpc_run() {
    local name="$1" scene="$2" steps="$3" threads="$4" out
    out="$WORK/demhpc_${name}_t${threads}"
    rm -rf "$out"
    "$BIN" -q --threads "$threads" --steps "$steps" --out "$out" "$scene" >/dev/null
    "$DEMHPC_PYTHON" - "$out/timing.json" "$name" "$threads" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
psps = t["particle_steps_per_s"]
cores = t["threads"] * t["ranks"]
print(f"demhpc {sys.argv[2]} N={t['particles']} steps={t['steps']} threads={t['threads']} "
      f"wall_s={t['wall_s']:.3f} psps={psps:.4g} psps_per_core={psps / cores:.4g}")
PY
}

per_core() { sed -n 's/.*psps_per_core=\([0-9.eE+-]*\).*/\1/p'; }

# lammps_line CASE RANKS: LAMMPS on CASE with RANKS MPI ranks (one thread each)
lammps_line() {
    case "$1" in
        settle8k) RANKS="$2" bench/lammps.sh settle 8000 "$SETTLE_STEPS" ;;
        settle64k) RANKS="$2" bench/lammps.sh settle 64000 "$SETTLE_LARGE_STEPS" ;;
        chute) RANKS="$2" bench/lammps.sh chute "$CHUTE_STEPS" ;;
    esac
}

declare -A LMP
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) cores)"
LMP_CASES="settle8k settle64k chute"
if [[ "${CASES:-all}" != "all" ]]; then
    LMP_CASES="$(for c in $LMP_CASES; do if [[ " $CASES " == *" $c "* ]]; then echo "$c"; fi; done)"
fi
for case in $LMP_CASES; do
    case "$case" in
        settle8k) scene=scenes/settle.ron; steps=$SETTLE_STEPS ;;
        settle64k) scene=scenes/settle_large.ron; steps=$SETTLE_LARGE_STEPS ;;
        chute) scene=scenes/chute.ron; steps=$CHUTE_STEPS ;;
    esac
    lline="$(lammps_line "$case" 1)"
    echo "$lline"
    LMP[$case]="$(echo "$lline" | per_core)"
    for t in $THREADS_LIST; do
        dline="$(demhpc_run "$case" "$scene" "$steps" "$t")"
        echo "$dline"
        d="$(echo "$dline" | per_core)"
        # The strict ratio: against LAMMPS' best per-core figure (one rank).
        awk -v c="$case" -v t="$t" -v d="$d" -v l="${LMP[$case]}" \
            'BEGIN { printf "ratio %s threads=%s demhpc/lammps per core = %.2f\n", c, t, d / l }'
        if [[ "$t" -gt 1 ]]; then
            # Same core count: LAMMPS parallelises by MPI ranks (its usual way), t ranks.
            lline_t="$(lammps_line "$case" "$t")"
            echo "$lline_t"
            awk -v c="$case" -v t="$t" -v d="$d" -v l="$(echo "$lline_t" | per_core)" \
                'BEGIN { printf "ratio %s threads=%s demhpc/lammps(%s ranks) per core = %.2f\n", c, t, t, d / l }'
        fi
    done
done

# CPM uniaxial tension (scenes/cpm_tension.ron, ~2300 spheres, ~13 links per sphere): demhpc
# only (LAMMPS has no CPM). The first CPM_STEPS steps: elastic loading and damage onset.
if [[ " ${CASES:-all} " == *" all "* || " ${CASES:-all} " == *" cpm "* ]]; then
    for t in $THREADS_LIST; do
        demhpc_run cpm_tension scenes/cpm_tension.ron "$CPM_STEPS" "$t"
    done
fi
