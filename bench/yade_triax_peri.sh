#!/usr/bin/env bash
# Yade reference for issue 23 (acceptances 2 and 4): a periodic triaxial test on frictional spheres,
# bench/yade/triax_peri.py, on one core (yade -j1, OMP_NUM_THREADS=1, nice -n 10).
#
#   bench/yade_triax_peri.sh                 # full curves: dense and loose, N = 5 000 (~20 min of one core)
#   N=2000 bench/yade_triax_peri.sh          # the same on another cloud size (results in bench/work/)
#   MODE=timing bench/yade_triax_peri.sh     # speed only: SHEAR_STEPS (3 000) shear steps of the dense
#                                            # N = 16 000 packing at p0 (bench/data/yade_triax_dense_p0_N16000.txt)
#   MODE=timing PACKING_FILE=bench/data/yade_triax_dense_p0.txt bench/yade_triax_peri.sh   # the N = 5 000 one
#   MODE=timing REPEATS=3 bench/yade_triax_peri.sh   # best of 3 (least CPU time)
#
# Full mode: bench/data/gen_triax.py writes the cloud triax_cloud_<N>.txt (x y z r, the cubic cell in
# the header; demhpc reads it with TextFile), Yade compresses it isotropically to p0 = 100 kPa with
# PeriTriaxController (dense: friction 0, then mu = 0.5 on every contact; loose: mu = 0.5 throughout)
# and shears it on z at an inertial number of 1e-3 to 20 % axial strain at constant lateral stress.
# For N = 5 000 (NREF) the results go to bench/data/: yade_triax_{dense,loose}.csv (shear, ~200 rows),
# yade_triax_{dense,loose}_compress.csv, yade_triax_{dense,loose}_p0.txt (the packings at p0, x y z r
# wrapped into the cell given in the header), yade_triax_{dense,loose}_summary.json (settings, stage
# timings, energy closure); the plot bench/yade_triax.png (bench/yade_triax_plot.py). Other N: all in
# bench/work/yade_triax/N<N>/. (N = 16 000 takes ~1.5 h of one core here: Yade's cost per particle-step
# grows with N, and the full reference would not fit the hour the brief allowed.)
#
# Timing mode: both codes can start from the same packing at p0: Yade reads it (contacts rebuilt,
# shear forces lost), re-compresses to p0 with mu = 0.5 until the unbalanced force is < 0.01
# (untimed), then runs SHEAR_STEPS shear steps with energy tracking off; the timed part is O.run of
# those steps (wall and CPU time of the process; the ~200 recording calls in between are excluded).
# Prints seconds per step and particle-steps per second. Settings (YOUNG, MU, INERTIAL, ...) pass
# through the environment to the Yade script (defaults there).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/env.sh
source "$root/scripts/env.sh"
NREF=5000    # the committed reference (bench/data/)
N="${N:-$NREF}"
MODE="${MODE:-full}"
REPEATS="${REPEATS:-1}"
SHEAR_STEPS="${SHEAR_STEPS:-3000}"
YADE="${YADE:-yade}"
py="$DEMHPC_PYTHON"
work="${BENCH_WORK:-$root/bench/work}/yade_triax/N$N"
mkdir -p "$work"
export OMP_NUM_THREADS=1

run_yade() { # $1 = log file; the environment carries the settings
    local t0 t1
    t0=$(date +%s)
    (cd "$work" && nice -n 10 "$YADE" -n -j1 -x "$root/bench/yade/triax_peri.py") > "$1" 2>&1 || {
        tail -30 "$1" >&2
        echo "yade_triax_peri.sh: yade failed, log $1" >&2
        exit 1
    }
    t1=$(date +%s)
    echo "  $(grep TRIAX_RESULT "$1" | head -1) (script $((t1 - t0)) s)"
}

if [ "$MODE" = timing ]; then
    pack="${PACKING_FILE:-$root/bench/data/yade_triax_dense_p0_N16000.txt}"
    [ -f "$pack" ] || { echo "yade_triax_peri.sh: $pack missing (run the full mode first)" >&2; exit 1; }
    for k in $(seq "$REPEATS"); do
        echo "timing run $k: $SHEAR_STEPS shear steps from $pack"
        PACKING=dense LOAD_PACKING="$pack" OUT="$work" SHEAR_STEPS="$SHEAR_STEPS" TRACK_ENERGY=0 SAVE_PACKING=0 \
            run_yade "$work/timing_$k.log"
        cp "$work/yade_triax_dense_timing_summary.json" "$work/timing_$k.json"
    done
    "$py" - "$work" "$REPEATS" <<'PY'
import json, sys
work, reps = sys.argv[1], int(sys.argv[2])
runs = [json.load(open("%s/timing_%d.json" % (work, k))) for k in range(1, reps + 1)]
best = min(runs, key=lambda r: r["timing"]["shear"]["cpu_s"])
t = best["timing"]["shear"]
n = best["N"]
print("yade triax_peri shear N=%d steps=%d wall_s=%.3f cpu_s=%.3f s/step(wall)=%.4e psps(wall)=%.4e psps(cpu)=%.4e"
      % (n, t["steps"], t["wall_s"], t["cpu_s"], t["wall_s"] / t["steps"], n * t["steps"] / t["wall_s"],
         n * t["steps"] / t["cpu_s"]))
PY
    exit 0
fi

cloud="$work/triax_cloud_$N.txt"
"$py" "$root/bench/data/gen_triax.py" "$N" "$work" >/dev/null
for pk in dense loose; do
    echo "$pk packing, N=$N"
    PACKING=$pk CLOUD="$cloud" OUT="$work" run_yade "$work/$pk.log"
done
dest="$work"
if [ "$N" = "$NREF" ]; then
    dest="$root/bench/data"
    cp "$cloud" "$dest/"
    for pk in dense loose; do
        for f in "yade_triax_$pk.csv" "yade_triax_${pk}_compress.csv" "yade_triax_${pk}_p0.txt" \
                 "yade_triax_${pk}_summary.json"; do
            cp "$work/$f" "$dest/"
        done
    done
fi
png="$root/bench/yade_triax.png"
[ "$N" = "$NREF" ] || png="$work/yade_triax.png"
"$py" "$root/bench/yade_triax_plot.py" "$dest" "$png"
