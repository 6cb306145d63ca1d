#!/usr/bin/env bash
# Strong scaling of the deforming periodic cell (issue 23): the dense N = 16 000 triaxial
# packing at p0 (bench/data/yade_triax_dense_p0_N16000.txt) re-equilibrated with tan φ = 0.5
# and sheared STEPS steps (as bench/triax_peri.sh's timing run), in reproducible mode, on each
# rank count of RANKS (one thread per rank); prints particle-steps/s per core, the efficiency,
# and whether every rank count gave the bits of the first (the final series row).
#
#   bench/cell_scaling.sh                       # RANKS="1 2 4", STEPS=2000
#   RANKS="1 2 4 8 16" bench/cell_scaling.sh    # on a many-core node
#
# From the relocatable bundle on a bare machine (../shared/tools/mpi-bundle/README.md):
#   B=/tmp/b DEMHPC=/tmp/b/usr/bin/demhpc RANKS="1 2 4 8 16" bench/cell_scaling.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -n "${B:-}" ] && [ -f "$B/env.sh" ]; then
    # shellcheck source=/dev/null
    source "$B/env.sh"
    run() { W "$@"; }
else
    # shellcheck source=scripts/env.sh
    source "$root/scripts/env.sh"
    run() { "$@"; }
fi
RANKS="${RANKS:-1 2 4}"
STEPS="${STEPS:-2000}"
DEMHPC="${DEMHPC:-$root/target/release/demhpc}"
MPIRUN_FLAGS="${MPIRUN_FLAGS:---map-by core --bind-to core}"
work="${OUT:-${BENCH_WORK:-$root/bench/work}/cell_scaling}"
mkdir -p "$work"
pack="$root/bench/data/yade_triax_dense_p0_N16000.txt"
n=$(grep -vc '^#' "$pack")
read -r lx ly lz <<< "$(sed -n 's/.*Lx=\([^ ]*\) Ly=\([^ ]*\) Lz=\([^ ]*\) m.*/\1 \2 \3/p' "$pack" | head -1)"
cat > "$work/cell.ron" <<EOF
Scene(
    name: "cell_scaling",
    materials: [Frict(name: "g", young: 2e8, poisson: 0.5, friction_angle: 0.4636476090008061, density: 2650.0)],
    spheres: [TextFile(path: "$pack", material: "g")],
    damping: 0.2,
    dt: PWave(0.7),
    run: Steps(2000000),
    reproducible: true,
    domain: Domain(lo: (0.0, 0.0, 0.0), hi: ($lx, $ly, $lz), periodic: (true, true, true)),
    output: Output(series_every: 500, snapshot_every: 0, progress_s: 0.0),
    checkpoint: (at_end: false),
    cell: Cell(stages: [
        Stage(name: "friction", goal: (-1e5, -1e5, -1e5), max_strain_rate: (6.147, 6.147, 6.147),
              max_unbalanced: 0.01, rel_stress_tol: 0.01, friction_angle: Some(0.4636476090008061)),
        Stage(name: "shear", goal: (-1e5, -1e5, -0.5), stress_mask: (true, true, false),
              max_strain_rate: (6.147, 6.147, 3.0737), max_unbalanced: 1e9, steps: $STEPS),
    ]),
)
EOF
echo "ranks,steps,wall_s,psps,psps_per_core,efficiency,same_bits" > "$work/scaling.csv"
base=""
first=""
for r in $RANKS; do
    out="$work/r$r"
    rm -rf "$out"
    if [ "$r" = 1 ]; then
        (cd "$work" && run "$DEMHPC" -q --threads 1 --out "$out" cell.ron)
    else
        # shellcheck disable=SC2086
        (cd "$work" && run mpirun -n "$r" $MPIRUN_FLAGS "$DEMHPC" -q --threads 1 --out "$out" cell.ron)
    fi
    wall=$(sed -n 's/.*"wall_s": \([0-9.e+-]*\),.*/\1/p' "$out/timing.json" | head -1)
    steps=$(sed -n 's/.*"steps": \([0-9]*\),.*/\1/p' "$out/timing.json" | head -1)
    last=$(tail -1 "$out/series.csv")
    [ -n "$first" ] || first="$last"
    same=no
    [ "$last" = "$first" ] && same=yes
    psps=$(awk -v n="$n" -v s="$steps" -v t="$wall" 'BEGIN { printf "%.4e", n * s / t }')
    per=$(awk -v p="$psps" -v r="$r" 'BEGIN { printf "%.4e", p / r }')
    [ -n "$base" ] || base="$per"
    eff=$(awk -v p="$per" -v b="$base" 'BEGIN { printf "%.3f", p / b }')
    echo "$r,$steps,$wall,$psps,$per,$eff,$same" | tee -a "$work/scaling.csv"
done
echo "cell_scaling: $work/scaling.csv"
