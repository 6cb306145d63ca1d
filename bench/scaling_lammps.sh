#!/usr/bin/env bash
# Scaling of demhpc against LAMMPS on the same inputs, same machine, one invocation (issue 19,
# acceptance 1): strong scaling of the chute ×4 (128 000 spheres) and of settle_large (64 000
# spheres, long enough for the bed to form), and weak scaling of the chute (32 000 per rank),
# one MPI rank per core, one thread per rank, over RANKS; then a table, a CSV and plots.
#
#   bench/scaling_lammps.sh                              # RANKS="1 2 4 8 16", all cases
#   RANKS="1 2" CHUTE_STEPS=200 SETTLE_STEPS=500 CASES=chute4 bench/scaling_lammps.sh   # a smoke test
#
# From the relocatable bundle on a bare many-core machine (../shared/tools/mpi-bundle/README.md):
#
#   mkdir -p /tmp/b && tar -xJf mpi.tar.xz -C /tmp/b
#   B=/tmp/b DEMHPC=/tmp/b/usr/bin/demhpc bench/scaling_lammps.sh
#
# (with B set the script sources $B/env.sh and runs mpirun, demhpc and lmp with the bundle's
# libraries). Settings: RANKS, CASES ("chute4 settle_large chute_weak"), CHUTE_STEPS (1000),
# SETTLE_STEPS (20000: the bed forms, issue 19 asks for ≥ 20 000), REPEAT (1; the fastest run
# is kept), OUT (bench/work/scaling_lammps), DEMHPC (target/release/demhpc), LMP (lmp),
# MPIRUN_FLAGS ("--map-by core --bind-to core").
#
# Output: OUT/scaling.csv (case, ranks, code, wall_s, psps, psps_per_core, efficiency, ratio),
# OUT/scaling.md and OUT/efficiency.png, OUT/ratio.png; `lscpu` in OUT/lscpu.txt. Efficiency =
# psps per core / psps per core on 1 rank (strong and weak alike); ratio = demhpc psps per core /
# LAMMPS psps per core at the same rank count.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"

if [ -n "${B:-}" ] && [ -f "$B/env.sh" ]; then
    # shellcheck source=/dev/null
    source "$B/env.sh"
    run() { W "$@"; }
else
    # shellcheck source=scripts/env.sh
    source scripts/env.sh
    run() { "$@"; }
fi

RANKS="${RANKS:-1 2 4 8 16}"
CASES="${CASES:-chute4 settle_large chute_weak}"
CHUTE_STEPS="${CHUTE_STEPS:-1000}"
SETTLE_STEPS="${SETTLE_STEPS:-20000}"
REPEAT="${REPEAT:-1}"
OUT="${OUT:-$ROOT/bench/work/scaling_lammps}"
DEMHPC="${DEMHPC:-$ROOT/target/release/demhpc}"
LMP="${LMP:-lmp}"
MPIRUN_FLAGS="${MPIRUN_FLAGS:---map-by core --bind-to core}"
PY="${DEMHPC_PYTHON:-python3}"
mkdir -p "$OUT/scenes" "$OUT/runs"
lscpu > "$OUT/lscpu.txt" 2>/dev/null || true
CSV="$OUT/scaling.csv"
echo "case,ranks,code,particles,steps,wall_s,psps,psps_per_core" > "$CSV"

chute_data="$ROOT/bench/data/data.chute"
settle_data="$OUT/settle_64000.data"
if [[ " $CASES " == *" settle_large "* ]] && [ ! -s "$settle_data" ]; then
    "$PY" "$ROOT/bench/data/gen_settle.py" 64000 "$OUT" >&2
fi

# demhpc scene for a case on R ranks: the chute tiled (replicate), or settle_large as shipped
scene_for() {
    local case="$1" r="$2" f="$OUT/scenes/${1}_r$2.ron" rep
    case "$case" in
        chute4) rep="(2, 2, 1)" ;;
        chute_weak) rep="($(weak_tiles "$r"), 1)" ;;
        settle_large)
            cp "$ROOT/scenes/settle_large.ron" "$f"
            echo "$f"
            return
            ;;
    esac
    sed -e "s#../bench/data/data.chute#$chute_data#" \
        -e "s#^Scene(#Scene(\n    replicate: $rep,#" "$ROOT/scenes/chute.ron" > "$f"
    echo "$f"
}

# weak scaling: R tiles of the chute as PX × PY (PX·PY = R, PX ≥ PY)
weak_tiles() {
    local r="$1" py=1 k
    for ((k = 1; k * k <= r; k++)); do
        if ((r % k == 0)); then py=$k; fi
    done
    echo "$((r / py)), $py"
}

lammps_rep() {
    case "$1" in
        chute4) echo "2 2" ;;
        chute_weak) weak_tiles "$2" | tr -d ',' ;;
        *) echo "1 1" ;;
    esac
}

steps_of() {
    case "$1" in
        settle_large) echo "$SETTLE_STEPS" ;;
        *) echo "$CHUTE_STEPS" ;;
    esac
}

# one demhpc run: prints "wall_s particles"
demhpc_run() {
    local case="$1" r="$2" k="$3" scene out
    scene="$(scene_for "$case" "$r")"
    out="$OUT/runs/demhpc_${case}_r${r}_k${k}"
    rm -rf "$out"
    # shellcheck disable=SC2086
    run mpirun -n "$r" $MPIRUN_FLAGS "$DEMHPC" -q --threads 1 --steps "$(steps_of "$case")" \
        --out "$out" "$scene" > "$out.log" 2>&1 || { cat "$out.log" >&2; return 1; }
    "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["wall_s"], d["particles"])' \
        "$out/timing.json"
}

# one LAMMPS run: prints "wall_s particles" (LAMMPS' "Loop time")
lammps_run() {
    local case="$1" r="$2" k="$3" log rep input data
    log="$OUT/runs/lammps_${case}_r${r}_k${k}.log"
    read -r rx ry <<< "$(lammps_rep "$case" "$r")"
    case "$case" in
        settle_large) input="$ROOT/bench/lammps/in.settle" data="$settle_data" ;;
        *) input="$ROOT/bench/lammps/in.chute" data="$chute_data" ;;
    esac
    # shellcheck disable=SC2086
    run mpirun -n "$r" $MPIRUN_FLAGS "$LMP" -in "$input" -var data "$data" \
        -var steps "$(steps_of "$case")" -var rx "$rx" -var ry "$ry" -log "$log" -screen none \
        > /dev/null 2>&1 || { tail -20 "$log" >&2; return 1; }
    awk '/^Loop time of/ { t = $4; n = $(NF - 1) } END { print t, n }' "$log"
}

for case in $CASES; do
    for r in $RANKS; do
        for code in demhpc lammps; do
            best=""
            for ((k = 1; k <= REPEAT; k++)); do
                read -r t n <<< "$("${code}_run" "$case" "$r" "$k")"
                if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then
                    best="$t"
                fi
            done
            s="$(steps_of "$case")"
            awk -v c="$case" -v r="$r" -v code="$code" -v n="$n" -v s="$s" -v t="$best" \
                'BEGIN { p = n * s / t; printf "%s,%d,%s,%d,%d,%.6f,%.6e,%.6e\n", c, r, code, n, s, t, p, p / r }' \
                >> "$CSV"
            tail -1 "$CSV" >&2
        done
    done
done

"$PY" - "$CSV" "$OUT" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
out = sys.argv[2]
base = {}
for r in rows:
    if int(r["ranks"]) == 1:
        base[(r["case"], r["code"])] = float(r["psps_per_core"])
lines = ["| case | ranks | demhpc psps/core | LAMMPS psps/core | demhpc efficiency | LAMMPS efficiency | demhpc / LAMMPS per core |",
         "|---|---:|---:|---:|---:|---:|---:|"]
by = {}
for r in rows:
    by[(r["case"], int(r["ranks"]), r["code"])] = float(r["psps_per_core"])
table = []
for (case, ranks, code) in sorted(by):
    if code != "demhpc" or (case, ranks, "lammps") not in by:
        continue
    d, l = by[(case, ranks, "demhpc")], by[(case, ranks, "lammps")]
    ed = d / base.get((case, "demhpc"), float("nan"))
    el = l / base.get((case, "lammps"), float("nan"))
    table.append((case, ranks, d, l, ed, el, d / l))
    lines.append(f"| {case} | {ranks} | {d:.3e} | {l:.3e} | {ed:.3f} | {el:.3f} | {d / l:.2f} |")
open(f"{out}/scaling.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(0)
for what, col, name in [("efficiency", 4, "efficiency.png"), ("demhpc / LAMMPS per core", 6, "ratio.png")]:
    fig, ax = plt.subplots(figsize=(6, 4))
    for case in sorted({t[0] for t in table}):
        pts = [(t[1], t[col]) for t in table if t[0] == case]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"demhpc {case}")
        if col == 4:
            pts = [(t[1], t[5]) for t in table if t[0] == case]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "x--", label=f"LAMMPS {case}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("MPI ranks (1 thread each)")
    ax.set_ylabel(what)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(f"{out}/{name}", dpi=120)
EOF
echo "scaling_lammps: $OUT/scaling.md" >&2
