#!/usr/bin/env bash
# The periodic triaxial test of issue 23 in demhpc, against the Yade reference of
# bench/yade_triax_peri.sh (same specimen, same parameters, same stages).
#
#   bench/triax_peri.sh                    # curves: dense and loose, N = 5 000 (Yade's cloud), the
#                                          # comparison plot bench/triax_peri_vs_yade.png and table
#   MODE=timing bench/triax_peri.sh        # speed per core against Yade, side by side: SHEAR_STEPS
#                                          # (3 000) shear steps of the dense N = 16 000 packing at p0
#   MODE=timing PACKING_FILE=bench/data/yade_triax_dense_p0.txt bench/triax_peri.sh   # N = 5 000
#
# Settings as the Yade script's (bench/data/yade_triax_dense.csv header): Frict(young 2e8,
# poisson (ks/kn) 0.5, density 2650), damping 0.2, dt = 0.7 p-wave step, p0 = 100 kPa. Dense:
# compaction frictionless at ≤ 6.147 /s until the unbalanced force < 0.1, then tan φ = 0.5 on
# every material and contact until < 0.01; loose: tan φ = 0.5 throughout, until < 0.01. Shear:
# z at 3.0737 /s (inertial number 1e-3) to ε_a = 20 % (log strain ln 0.8), x and y at p0. The
# servo is demhpc's default (`Affine`), Yade's ran `PeriTriaxController(globUpdate=1)`.
#
# Timing mode: both codes start from the same packing at p0 (positions only: contacts and their
# shear forces are rebuilt), re-equilibrate with tan φ = 0.5 until the unbalanced force < 0.01
# (not timed), then shear: demhpc's shear stage time from its log line (the stage ends when the
# strain of SHEAR_STEPS steps is reached), Yade's from bench/yade_triax_peri.sh MODE=timing (CPU
# time of O.run of the same steps). One core each (demhpc --threads 1, yade -j1), energy
# tracking off. Prints both particle-steps per second and the ratio.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/env.sh
source "$root/scripts/env.sh"
MODE="${MODE:-full}"
SHEAR_STEPS="${SHEAR_STEPS:-3000}"
DEMHPC="${DEMHPC:-$root/target/release/demhpc}"
work="${BENCH_WORK:-$root/bench/work}/triax_peri"
py="$DEMHPC_PYTHON"
mkdir -p "$work"
[ -x "$DEMHPC" ] || (cd "$root" && cargo build --release)

# scene FILE NAME SPHERES_FILE CELL_SIDE_X Y Z STAGES ENERGY
scene() {
    cat > "$1" <<EOF
Scene(
    name: "$2",
    materials: [Frict(name: "g", young: 2e8, poisson: 0.5, friction_angle: 0.4636476090008061, density: 2650.0)],
    spheres: [TextFile(path: "$3", material: "g")],
    damping: 0.2,
    dt: PWave(0.7),
    run: Steps(2000000),
    energy: $8,
    domain: Domain(lo: (0.0, 0.0, 0.0), hi: ($4, $5, $6), periodic: (true, true, true)),
    output: Output(series_every: 200, snapshot_every: 0, progress_s: 30.0),
    checkpoint: (at_end: false),
    cell: Cell(stages: [$7]),
)
EOF
}

# the cell edges from a file's header ("Lx=... Ly=... Lz=...")
edges() {
    sed -n 's/.*Lx=\([^ ]*\) Ly=\([^ ]*\) Lz=\([^ ]*\) m.*/\1 \2 \3/p' "$1" | head -1
}

RATE=3.0737
CRATE=6.147
P0=1e5
SHEAR="Stage(name: \"shear\", goal: (-$P0, -$P0, GOAL), stress_mask: (true, true, false),
              max_strain_rate: ($CRATE, $CRATE, $RATE), max_unbalanced: 1e9, rel_stress_tol: 1e-2,
              reset_strain: true)"
FRICTION="Stage(name: \"friction\", goal: (-$P0, -$P0, -$P0), max_strain_rate: ($CRATE, $CRATE, $CRATE),
              max_unbalanced: 0.01, rel_stress_tol: 0.01, friction_angle: Some(0.4636476090008061))"
COMPACT0="Stage(name: \"compact\", goal: (-$P0, -$P0, -$P0), max_strain_rate: ($CRATE, $CRATE, $CRATE),
              max_unbalanced: 0.1, rel_stress_tol: 0.01, friction_angle: Some(0.0))"

stage_line() { # $1 log, $2 stage name: "step wall_seconds cpu_seconds"
    sed -n "s/.*cell: stage \"$2\" done at step \([0-9]*\) after \([0-9.]*\) s (\([0-9.]*\) s CPU).*/\1 \2 \3/p" "$1"
}

if [ "$MODE" = timing ]; then
    pack="${PACKING_FILE:-$root/bench/data/yade_triax_dense_p0_N16000.txt}"
    n=$(grep -vc '^#' "$pack")
    read -r lx ly lz <<< "$(edges "$pack")"
    # the strain of SHEAR_STEPS steps at RATE, with the scene's time step (printed by demhpc)
    dt=$("$py" -c "
import math
r=[float(l.split()[3]) for l in open('$pack') if not l.startswith('#')]
print(0.7*min(r)*math.sqrt(2650.0/2e8))")
    goal=$("$py" -c "print(-$RATE*$dt*$SHEAR_STEPS)")
    scene "$work/timing.ron" "triax_timing" "$pack" "$lx" "$ly" "$lz" \
        "$FRICTION, ${SHEAR/GOAL/$goal}" false
    echo "demhpc: $n spheres from $pack, $SHEAR_STEPS shear steps, 1 thread"
    (cd "$work" && "$DEMHPC" --threads 1 --out "$work/timing" timing.ron) > "$work/timing.log" 2>&1
    read -r f_step _ <<< "$(stage_line "$work/timing.log" friction)"
    read -r s_step s_wall s_cpu <<< "$(stage_line "$work/timing.log" shear)"
    steps=$((s_step - f_step))
    d_psps=$("$py" -c "print($n*$steps/$s_cpu)")
    echo "demhpc: $steps shear steps in $s_wall s ($s_cpu s CPU): $d_psps particle-steps/s (CPU)"
    echo "yade (bench/yade_triax_peri.sh MODE=timing, the same packing and steps):"
    y_out=$(MODE=timing PACKING_FILE="$pack" SHEAR_STEPS="$steps" "$root/bench/yade_triax_peri.sh" 2>&1 | tee "$work/yade_timing.log")
    y_psps=$(printf '%s\n' "$y_out" | sed -n 's/.*psps(cpu)=\([0-9.e+-]*\).*/\1/p' | tail -1)
    if [ -z "$y_psps" ]; then
        printf '%s\n' "$y_out" | tail -5
        echo "triax_peri.sh: no Yade timing found (log $work/yade_timing.log)" >&2
        exit 1
    fi
    "$py" -c "print('demhpc %.3e / Yade %.3e particle-steps/s per core (CPU) = %.2fx' % ($d_psps, $y_psps, $d_psps/$y_psps))"
    exit 0
fi

cloud="$root/bench/data/triax_cloud_5000.txt"
read -r lx ly lz <<< "$(edges "$cloud")"
goal=-0.22314355131420976  # ln(1 - 0.20)
scene "$work/dense.ron" "triax_dense" "$cloud" "$lx" "$ly" "$lz" \
    "$COMPACT0, $FRICTION, ${SHEAR/GOAL/$goal}" true
scene "$work/loose.ron" "triax_loose" "$cloud" "$lx" "$ly" "$lz" \
    "${FRICTION/friction/compact}, ${SHEAR/GOAL/$goal}" true
for p in dense loose; do
    echo "demhpc: $p (log $work/$p.log)"
    (cd "$work" && "$DEMHPC" --threads 1 --out "$work/$p" "$p.ron") > "$work/$p.log" 2>&1
    grep "cell: stage" "$work/$p.log" | sed 's/^/  /'
done
"$py" "$root/bench/triax_peri_compare.py" "$work" "$root/bench/data" "$root/bench/triax_peri_vs_yade.png"
