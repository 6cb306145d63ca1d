#!/usr/bin/env bash
# The GPU step against the CPU codes on the same input, one invocation (issue 34): the LAMMPS
# chute tiled to ≥ 1M spheres on one GPU (demhpc --gpu), on all CPU cores (demhpc, one MPI rank
# per core) and in LAMMPS on all CPU cores; then the dense packings of bench/gpu/ (Hooke and
# Hertz, 1M spheres, six contacts each) on the GPU and on the CPU cores.
#
#   bench/gpu.sh                     # TILES="8 4" (1 024 000 spheres), GPU_STEPS=2000, CPU_STEPS=300
#
# From the relocatable bundle on the lent GPU machine (../shared/tools/mpi-bundle/README.md):
#
#   B=/tmp/b DEMHPC=/tmp/b/usr/bin/demhpc CUDA_LIB=/usr/local/cuda/lib64 bench/gpu.sh
#
# Settings: TILES (chute copies along x and y), GPU_STEPS, CPU_STEPS, CORES (all online CPUs),
# CASES ("chute dense_hooke dense_hertz"), LATTICE_N (100: 100³ spheres), OUT
# (bench/work/gpu), DEMHPC (target/release/demhpc, built with --features gpu), LMP (lmp),
# CUDA_LIB (a directory holding libnvrtc, added to the library path).
#
# Output: OUT/gpu.csv (case, code, cores, particles, steps, wall_s, psps) and OUT/gpu.md with
# the ratios GPU / CPU cores and GPU / LAMMPS, the GPU named. psps = particles × steps / the
# step loop's time: demhpc's wall_s less its output phase (GPU and CPU alike; the set-up is
# apart), LAMMPS' "Loop time".
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"

if [ -n "${B:-}" ] && [ -f "$B/env.sh" ]; then
    # shellcheck source=/dev/null
    source "$B/env.sh"
    LIBS="$BUNDLE_LD"
else
    # shellcheck source=scripts/env.sh
    source scripts/env.sh
    LIBS="${LD_LIBRARY_PATH:-}"
fi
if [ -n "${CUDA_LIB:-}" ]; then
    LIBS="$LIBS:$CUDA_LIB"
fi
run() { LD_LIBRARY_PATH="$LIBS" "$@"; }

TILES="${TILES:-8 4}"
GPU_STEPS="${GPU_STEPS:-2000}"
CPU_STEPS="${CPU_STEPS:-300}"
CORES="${CORES:-$(nproc)}"
CASES="${CASES:-chute dense_hooke dense_hertz}"
LATTICE_N="${LATTICE_N:-100}"
OUT="${OUT:-$ROOT/bench/work/gpu}"
DEMHPC="${DEMHPC:-$ROOT/target/release/demhpc}"
LMP="${LMP:-lmp}"
PY="${DEMHPC_PYTHON:-python3}"
mkdir -p "$OUT/runs"
CSV="$OUT/gpu.csv"
echo "case,code,cores,particles,steps,wall_s,psps" > "$CSV"
read -r tx ty <<< "$TILES"

# the scene of a case, its data paths absolute
scene_for() {
    local f="$OUT/$1.ron"
    case "$1" in
        chute)
            sed -e "s#../bench/data/data.chute#$ROOT/bench/data/data.chute#" \
                -e "s#^Scene(#Scene(\n    replicate: ($tx, $ty, 1),#" \
                -e "s#series_every: 100#series_every: 500#" "$ROOT/scenes/chute.ron" > "$f"
            ;;
        dense_hooke | dense_hertz)
            local s lat
            s=$([ "$1" = dense_hooke ] && echo 0.9999 || echo 0.998)
            lat="$OUT/lattice_${LATTICE_N}_$s.txt"
            [ -s "$lat" ] || "$PY" -s "$ROOT/bench/gpu/lattice.py" "$LATTICE_N" "$s" 0.5 > "$lat"
            sed -e "s#LATTICE#$lat#" "$ROOT/bench/gpu/$1.ron" > "$f"
            ;;
    esac
    echo "$f"
}

# "seconds particles" of a demhpc run's timing.json: the step loop, its outputs apart (the
# series rows, the final snapshot: for 1M particles a snapshot is seconds, the GPU's read-back
# included), on the GPU and on the CPU cores alike
timing() {
    "$PY" -s -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["wall_s"] - d["phases_s"]["output"], d["particles"])' "$1/timing.json"
}

row() { # case code cores particles steps wall_s
    awk -v c="$1" -v code="$2" -v k="$3" -v n="$4" -v s="$5" -v t="$6" \
        'BEGIN { printf "%s,%s,%d,%d,%d,%.6f,%.6e\n", c, code, k, n, s, t, n * s / t }' >> "$CSV"
    tail -1 "$CSV" >&2
}

for case in $CASES; do
    scene="$(scene_for "$case")"
    out="$OUT/runs/${case}_gpu"
    rm -rf "$out"
    run "$DEMHPC" --gpu 0 --steps "$GPU_STEPS" --out "$out" "$scene" > "$out.log" 2>&1 ||
        { tail -30 "$out.log" >&2; exit 1; }
    read -r t n <<< "$(timing "$out")"
    row "$case" demhpc_gpu 1 "$n" "$GPU_STEPS" "$t"
    out="$OUT/runs/${case}_cpu"
    rm -rf "$out"
    run mpirun -n "$CORES" --map-by core --bind-to core "$DEMHPC" -q --threads 1 \
        --steps "$CPU_STEPS" --out "$out" "$scene" > "$out.log" 2>&1 ||
        { tail -30 "$out.log" >&2; exit 1; }
    read -r t n <<< "$(timing "$out")"
    row "$case" demhpc_cpu "$CORES" "$n" "$CPU_STEPS" "$t"
    if [ "$case" = chute ] && command -v "$LMP" > /dev/null; then
        log="$OUT/runs/chute_lammps.log"
        run mpirun -n "$CORES" --map-by core --bind-to core "$LMP" -in "$ROOT/bench/lammps/in.chute" \
            -var data "$ROOT/bench/data/data.chute" -var steps "$CPU_STEPS" -var rx "$tx" \
            -var ry "$ty" -log "$log" -screen none > /dev/null 2>&1 || { tail -20 "$log" >&2; exit 1; }
        read -r t n <<< "$(awk '/^Loop time of/ { t = $4; n = $(NF - 1) } END { print t, n }' "$log")"
        row chute lammps_cpu "$CORES" "$n" "$CPU_STEPS" "$t"
    fi
done

gpu_name="$(grep -h -m1 -o 'GPU: .*' "$OUT"/runs/*_gpu.log | head -1 | sed 's/^GPU: //')"
"$PY" -s - "$CSV" "$gpu_name" "$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)" \
    > "$OUT/gpu.md" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
gpu, cpu = sys.argv[2], sys.argv[3]
by = {(r["case"], r["code"]): r for r in rows}
print(f"GPU: {gpu}; CPU: {cpu}\n")
print("| case | particles | GPU psps | CPU cores | demhpc CPU psps | LAMMPS CPU psps | GPU / demhpc CPU | GPU / LAMMPS |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for case in dict.fromkeys(r["case"] for r in rows):
    g, c, l = by.get((case, "demhpc_gpu")), by.get((case, "demhpc_cpu")), by.get((case, "lammps_cpu"))
    gp = float(g["psps"]) if g else float("nan")
    cp = float(c["psps"]) if c else float("nan")
    lp = float(l["psps"]) if l else float("nan")
    print(f"| {case} | {g['particles'] if g else '?'} | {gp:.3e} | {c['cores'] if c else '?'} | {cp:.3e} | "
          f"{lp:.3e} | {gp / cp:.1f} | {gp / lp:.1f} |")
EOF
cat "$OUT/gpu.md"
