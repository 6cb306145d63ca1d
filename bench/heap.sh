#!/usr/bin/env bash
# Heap benchmark (issue 22, acceptance 3): the angle of repose of a heap poured onto a disc,
# for several rolling friction coefficients mu_r (scenes/heap.ron with its mu_r replaced).
#
#   bench/heap.sh                                  # mu_r = 0 0.05 0.1 0.2 0.3, table, plot
#   MU_R_LIST="0.02 0.3" bench/heap.sh             # other values
#   RUNS=0 bench/heap.sh                           # only the angles of earlier runs
#
# Each run pours 1 500 beads/s for 3.2 s and lets the heap rest 0.8 s (scenes/heap.ron);
# bench/heap_angle.py measures every heap's angle the same way (free surface in 8 sectors,
# line fitted over 0.25-0.85 of the disc's radius) and draws PLOT.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/env.sh
source "$root/scripts/env.sh"
PY="$DEMHPC_PYTHON"
MU_R_LIST="${MU_R_LIST:-0 0.05 0.1 0.2 0.3}"
THREADS="${THREADS:-1}"
RUNS="${RUNS:-1}"
NICE="${NICE:-10}"
PLOT="${PLOT:-$root/bench/heap_angle.png}"
work="${BENCH_WORK:-$root/bench/work}/heap"
mkdir -p "$work"
bin="$root/target/release/demhpc"
[ -x "$bin" ] || (cd "$root" && cargo build --release -q)
python3 "$root/scenes/make_silo_stl.py" --orifice 0 --height 0 --radius 0.08 --segments 96 \
    --out "$work/heap.stl" >/dev/null
cmp -s "$work/heap.stl" "$root/scenes/heap.stl" ||
    { echo "scenes/heap.stl differs from make_silo_stl.py's output" >&2; exit 1; }

echo "machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1); load $(cut -d' ' -f1-3 /proc/loadavg); demhpc $(cd "$root" && git rev-parse --short HEAD)"
runs=()
for mu in $MU_R_LIST; do
    name="mu$mu"
    runs+=("$work/$name:$mu")
    [ "$RUNS" != 0 ] || continue
    sed -e "s|mu_r: 0.1, model: Epsd2|mu_r: $mu, model: Epsd2|" \
        -e "s|\"heap.stl\"|\"$root/scenes/heap.stl\"|" -e "s|name: \"heap\"|name: \"heap_$name\"|" \
        "$root/scenes/heap.ron" >"$work/$name.ron"
    grep -q "mu_r: $mu, model: Epsd2" "$work/$name.ron"
    rm -rf "${work:?}/$name"
    t0=$SECONDS
    nice -n "$NICE" "$bin" -q --threads "$THREADS" --out "$work/$name" "$work/$name.ron" \
        >"$work/$name.log" 2>&1 || { echo "failed: mu_r = $mu (see $work/$name.log)" >&2; exit 1; }
    echo "mu_r = $mu: $((SECONDS - t0)) s wall"
done
"$PY" "$root/bench/heap_angle.py" --plot "$PLOT" --json "$work/heap.json" "${runs[@]}"
