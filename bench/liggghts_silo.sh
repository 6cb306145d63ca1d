#!/usr/bin/env bash
# Issue 22, acceptance 4: a silo of >= 200 000 beads on 2 ranks (progress line, checkpoints,
# balanced ranks), and its speed per core against LIGGGHTS on the same silo, same inputs,
# same invocation:
#
#   bench/liggghts_silo.sh                      # settle (demhpc, 2 ranks), then 2 timing rounds
#   SETTLE=0 REPEATS=3 bench/liggghts_silo.sh   # timing only, on the settled bed of a past run
#
# (1) gen_silo.py: N beads (d = 5 mm +-10 %, rho 2500) as a loose simple cubic column in a
# silo of radius 125 mm (D_t = 50 d; 96-gon); demhpc settles it in the closed silo on RANKS
# ranks for SETTLE_T s (checkpoints every 4 000 steps, the progress line on stderr, load
# balancing on), its timing.json giving the load per rank; bench/beverloo.py writes the
# settled bed as a LAMMPS data file (box floor 30 mm below the silo floor).
# (2) The same bed in the silo with a central orifice D = 10 d (50 mm): REPEATS rounds of
# TIME_STEPS discharge steps from the settled state in LIGGGHTS (bench/liggghts/in.silo_hertz)
# and demhpc (the scene written below: the same material, EPSD2 rolling friction, dt, skin;
# outlet z < -30 mm every 100 steps, as LIGGGHTS deletes beads leaving the box's floor), each
# `mpirun -n RANKS`, one thread per rank, one code at a time; user CPU seconds of all ranks
# (GNU time on mpirun) give the per-core ratio LIGGGHTS / demhpc; wall seconds too.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/env.sh
source "$root/scripts/env.sh"
PY="$DEMHPC_PYTHON"
N="${N:-202000}"
RANKS="${RANKS:-2}"
SETTLE="${SETTLE:-1}"
SETTLE_T="${SETTLE_T:-0.4}"
REPEATS="${REPEATS:-2}"
TIME_STEPS="${TIME_STEPS:-2000}"
NICE="${NICE:-10}"
LIGGGHTS="${LIGGGHTS:-liggghts}"
R=0.125
work="${BENCH_WORK:-$root/bench/work}/liggghts_silo"
mkdir -p "$work"
bin="$root/target/release/demhpc"
[ -x "$bin" ] || (cd "$root" && cargo build --release -q)
read -ra mpi_flags <<<"$DEMHPC_MPIRUN_FLAGS"
mpi=(mpirun -n "$RANKS" "${mpi_flags[@]}" --bind-to none)

materials='    materials: [
        Hertz(name: "glass", young: 1e7, poisson: 0.25, friction_angle: 0.4636476090008061, // atan(0.5)
              density: 2500.0, restitution: 0.5),
        Hertz(name: "steel", young: 1e7, poisson: 0.3, friction_angle: 0.4636476090008061,
              density: 7800.0, restitution: 0.5),
    ],
    rolling: (mu_r: 0.05, model: Epsd2),
    gravity: (0.0, 0.0, -9.81),
    dt: Fixed(2.5e-5),
    skin: 0.5e-3,'

echo "machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$(cd "$work" && "$LIGGGHTS" -log none -h 2>/dev/null | sed -n 's/^\(LIGGGHTS (Version [^)]*)\).*/\1/p' | head -1); demhpc $(cd "$root" && git rev-parse --short HEAD)"

if [ "$SETTLE" != 0 ]; then
    python3 "$root/bench/data/gen_silo.py" --n "$N" --radius "$R" --out "$work/column.data"
    top=$(awk 'NR > 12 && NF == 7 {if ($7 > m) m = $7} END {print m}' "$work/column.data")
    python3 "$root/scenes/make_silo_stl.py" --radius "$R" --orifice 0 --segments 96 \
        --height "$("$PY" -c "print(round($top + 0.02, 3))")" --out "$work/closed.stl" >/dev/null
    cat >"$work/settle.ron" <<EOF
Scene(
    name: "silo200k_settle",
$materials
    meshes: [Mesh(file: "closed.stl", material: "steel")],
    spheres: [LammpsData(path: "column.data", materials: ["glass", "steel"])],
    run: Time($SETTLE_T),
    domain: Domain(lo: (-0.13, -0.13, -0.06), hi: (0.13, 0.13, $("$PY" -c "print(round($top + 0.05, 3))"))),
    output: Output(series_every: 400, snapshot_every: 0, progress_s: 60.0),
    checkpoint: (every: 4000, keep: 2),
)
EOF
    rm -rf "$work/settle"
    echo "settling $N beads on $RANKS ranks ($SETTLE_T s):"
    t0=$SECONDS
    nice -n "$NICE" "${mpi[@]}" "$bin" --threads 1 --out "$work/settle" "$work/settle.ron" \
        2>&1 | tee "$work/settle.log" | grep -E "INFO.*(step [0-9]+/|checkpoint)|WARN|ERROR" || true
    [ -f "$work/settle/timing.json" ] || { echo "settle failed (see $work/settle.log)" >&2; exit 1; }
    echo "  $((SECONDS - t0)) s wall; load per rank at the end (timing.json):"
    "$PY" -c "import json; t = json.load(open('$work/settle/timing.json')); l = t['load_per_rank']; print('   ', t['ranks'], 'ranks, grid', t['grid'], 'cut moves', t['cut_moves'], '; '.join('%s max/avg %.3f' % (k, v['max'] / v['avg']) for k, v in l.items() if v['avg'] > 0))"
    snaps=("$work"/settle/snapshots/snap_*.h5)
    "$PY" "$root/bench/beverloo.py" todata "${snaps[-1]}" \
        "$work/settled.data" --xy 0.127 --zlo -0.03 --headroom 0.05
fi
top=$(awk 'NR > 12 && NF == 7 {if ($7 > m) m = $7} END {print m}' "$work/settled.data")
python3 "$root/scenes/make_silo_stl.py" --radius "$R" --orifice 0.025 --segments 96 \
    --height "$("$PY" -c "print(round($top + 0.04, 3))")" --out "$work/silo.stl" >/dev/null
cat >"$work/silo.ron" <<EOF
Scene(
    name: "silo200k",
$materials
    meshes: [Mesh(file: "silo.stl", material: "steel")],
    spheres: [LammpsData(path: "settled.data", materials: ["glass", "steel"])],
    run: Steps($TIME_STEPS),
    domain: Domain(lo: (-0.13, -0.13, -0.06), hi: (0.13, 0.13, $("$PY" -c "print(round($top + 0.06, 3))"))),
    output: Output(series_every: 0, snapshot_every: 0, progress_s: 30.0),
    checkpoint: (at_end: false),
    outlets: [Outlet(name: "orifice",
                     region: HalfSpace(point: (0.0, 0.0, -0.03), normal: (0.0, 0.0, -1.0)),
                     every: 100)],
)
EOF

user_s() {  # out cmd...: user+sys CPU seconds of the command and its children, wall to out.time
    local out="$1"; shift
    /usr/bin/time -f "%U %S %e" -o "$out.time" nice -n "$NICE" "$@" >"$out.out" 2>&1 ||
        { echo "failed: $* (see $out.out)" >&2; tail -5 "$out.out" >&2; exit 1; }
    awk '{print $1 + $2}' "$out.time"
}
wall() { awk '{print $3}' "$1.time"; }
ratios=()
for k in $(seq "$REPEATS"); do
    tl=$(cd "$work" && user_s "$work/lig_$k" "${mpi[@]}" "$LIGGGHTS" -in "$root/bench/liggghts/in.silo_hertz" \
        -var data "$work/settled.data" -var stl "$work/silo.stl" -var steps "$TIME_STEPS" \
        -log "log.$k" -screen "$work/lig_$k.screen")
    rm -rf "$work/demhpc_$k"
    td=$(user_s "$work/dem_$k" "${mpi[@]}" "$bin" --threads 1 --out "$work/demhpc_$k" "$work/silo.ron")
    r=$("$PY" -c "print(f'{$tl / $td:.3f}')")
    ratios+=("$r")
    left=$(sed -n 's/^ *'"$TIME_STEPS"' *\([0-9]*\) .*/\1/p' "$work/log.$k" | tail -1)
    echo "round $k/$REPEATS, $TIME_STEPS steps on $RANKS ranks: liggghts cpu_s=$tl wall_s=$(wall "$work/lig_$k") (atoms left $left), demhpc cpu_s=$td wall_s=$(wall "$work/dem_$k"), ratio $r"
done
"$PY" -c "
import json, statistics, sys
r = [float(x) for x in sys.argv[1:]]
t = json.load(open('$work/demhpc_1/timing.json'))
l = t['load_per_rank']
print(f'ratio demhpc/liggghts per core (CPU time of all ranks, {len(r)} rounds): min {min(r):.2f} median {statistics.median(r):.2f} max {max(r):.2f}')
print('demhpc round 1:', round(l['particles']['avg'] * t['ranks']), 'particles at the end,', t['ranks'], 'ranks, grid', t['grid'], ', cut moves', t['cut_moves'], ';', '; '.join('%s max/avg %.3f' % (k, v['max'] / v['avg']) for k, v in l.items() if v['avg'] > 0))
" "${ratios[@]}"
