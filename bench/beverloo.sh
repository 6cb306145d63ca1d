#!/usr/bin/env bash
# Beverloo benchmark (issue 22, acceptance 2): the steady mass discharge rate of a
# flat-bottomed cylindrical silo for several orifice diameters D, fitted with
# W = C rho_b sqrt(g) (D - k d)^(5/2), rho_b measured on the bed.
#
#   bench/beverloo.sh                      # settle once, then D = 6 8 10 d, 1 s each, fit, plot
#   D_LIST="6 7 8 9 10" bench/beverloo.sh  # more orifices
#   SETTLE=0 bench/beverloo.sh             # reuse the settled bed of an earlier run
#   RUNS=0 bench/beverloo.sh               # only the fit and the plot of earlier runs
#   MU=0.3 bench/beverloo.sh               # another friction (own work directory and plot)
#
# Set-up (bench/RESULTS.md "Beverloo"): silo of radius 75 mm (D_t = 30 d; 96-gon, wall height
# 0.36 m; scenes/make_silo_stl.py) on a flat floor; 46 000 glass beads d = 5 mm +-10 %
# (uniform), rho = 2500 kg/m^3, Hertz-Mindlin E = 1e7 Pa, nu = 0.25, e = 0.5, mu = 0.5 (bead
# and wall), EPSD2 rolling resistance mu_r = 0.05, dt = 2.5e-5 s, skin 0.5 mm.
# (1) A loose simple cubic column (bench/data/gen_silo.py) collapses in the closed silo for
# 0.6 s (the bed: 2 D_t high); bench/beverloo.py writes the settled bed as a LAMMPS data file.
# (2) For each D the same bed starts in a silo with a central orifice of diameter D (the gate
# opens at t = 0), discharging into an outlet (z < -30 mm) for T seconds (series every 5 ms).
# (3) bench/beverloo.py: W = slope of outlet_orifice_mass_kg over [T0, T]; rho_b from the
# settled bed; the fit of W^(2/5) against D; a table and PLOT.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/env.sh
source "$root/scripts/env.sh"
PY="$DEMHPC_PYTHON"
D_LIST="${D_LIST:-6 8 10}"
MU="${MU:-0.5}"          # bead-bead and bead-wall friction coefficient
T="${T:-1.0}"
T0="${T0:-0.2}"
N="${N:-46000}"
THREADS="${THREADS:-2}"
SETTLE="${SETTLE:-1}"
RUNS="${RUNS:-1}"
NICE="${NICE:-10}"
PLOT="${PLOT:-$root/bench/beverloo.png}"
[ "$MU" = 0.5 ] || PLOT="${PLOT%.png}_mu$MU.png"
work="${BENCH_WORK:-$root/bench/work}/beverloo"
[ "$MU" = 0.5 ] || work="${work}_mu$MU"   # a friction study beside the main runs
PHI=$("$PY" -c "import math; print(repr(math.atan($MU)))")
mkdir -p "$work"
bin="$root/target/release/demhpc"
[ -x "$bin" ] || (cd "$root" && cargo build --release -q)
R=0.075
D_BEAD=0.005

materials='    materials: [
        Hertz(name: "glass", young: 1e7, poisson: 0.25, friction_angle: @PHI@, // atan(@MU@)
              density: 2500.0, restitution: 0.5),
        Hertz(name: "steel", young: 1e7, poisson: 0.3, friction_angle: @PHI@,
              density: 7800.0, restitution: 0.5),
    ],
    rolling: (mu_r: 0.05, model: Epsd2),
    gravity: (0.0, 0.0, -9.81),
    dt: Fixed(2.5e-5),
    skin: 0.5e-3,'
materials="${materials//@PHI@/$PHI}"
materials="${materials//@MU@/$MU}"

run_dem() {  # scene out
    local t0=$SECONDS
    nice -n "$NICE" "$bin" -q --threads "$THREADS" --out "$2" "$1" >"$2.log" 2>&1 ||
        { echo "failed: $1 (see $2.log)" >&2; tail -5 "$2.log" >&2; exit 1; }
    echo "  $(basename "$2"): $((SECONDS - t0)) s wall"
}

echo "machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1); load $(cut -d' ' -f1-3 /proc/loadavg); demhpc $(cd "$root" && git rev-parse --short HEAD)"
if [ "$SETTLE" != 0 ]; then
    python3 "$root/bench/data/gen_silo.py" --n "$N" --radius "$R" --out "$work/column.data"
    python3 "$root/scenes/make_silo_stl.py" --radius "$R" --orifice 0 --height 0.56 \
        --segments 96 --out "$work/closed.stl" >/dev/null
    cat >"$work/settle.ron" <<EOF
Scene(
    name: "beverloo_settle",
$materials
    meshes: [Mesh(file: "closed.stl", material: "steel")],
    spheres: [LammpsData(path: "column.data", materials: ["glass", "steel"])],
    run: Time(0.6),
    domain: Domain(lo: (-0.08, -0.08, -0.06), hi: (0.08, 0.08, 0.6)),
    output: Output(series_every: 400, snapshot_every: 0, progress_s: 30.0),
    checkpoint: (at_end: false),
)
EOF
    rm -rf "$work/settle"
    echo "settling $N beads in the closed silo (0.6 s):"
    run_dem "$work/settle.ron" "$work/settle"
    snaps=("$work"/settle/snapshots/snap_*.h5)
    "$PY" "$root/bench/beverloo.py" todata "${snaps[-1]}" \
        "$work/settled.data"
fi
snaps=("$work"/settle/snapshots/snap_*.h5)
settled_snap="${snaps[-1]}"

runs=()
for dd in $D_LIST; do
    orifice=$("$PY" -c "print(0.5 * $dd * $D_BEAD)")
    name="d$dd"
    runs+=("$work/$name:$dd")
    [ "$RUNS" != 0 ] || continue
    python3 "$root/scenes/make_silo_stl.py" --radius "$R" --orifice "$orifice" --height 0.36 \
        --segments 96 --out "$work/silo_$name.stl" >/dev/null
    cat >"$work/$name.ron" <<EOF
Scene(
    name: "beverloo_$name",
$materials
    meshes: [Mesh(file: "silo_$name.stl", material: "steel")],
    spheres: [LammpsData(path: "settled.data", materials: ["glass", "steel"])],
    run: Time($T),
    domain: Domain(lo: (-0.08, -0.08, -0.06), hi: (0.08, 0.08, 0.37)),
    output: Output(series_every: 200, snapshot_every: 20000, progress_s: 30.0),
    checkpoint: (at_end: false),
    outlets: [Outlet(name: "orifice",
                     region: HalfSpace(point: (0.0, 0.0, -0.03), normal: (0.0, 0.0, -1.0)),
                     every: 100)],
)
EOF
    rm -rf "${work:?}/$name"
    echo "D = $dd d (orifice radius $orifice m), $T s:"
    run_dem "$work/$name.ron" "$work/$name"
done

"$PY" "$root/bench/beverloo.py" fit --settled "$settled_snap" --d "$D_BEAD" --radius "$R" \
    --t0 "$T0" --plot "$PLOT" --json "$work/beverloo.json" "${runs[@]}"
