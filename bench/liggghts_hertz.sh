#!/usr/bin/env bash
# demhpc vs LIGGGHTS per core on the settle benchmark with Hertz-Mindlin contacts and rolling
# resistance (issue 20, acceptance 5), the same input in the same invocation:
#
#   bench/liggghts_hertz.sh                 # 8 000 spheres, 20 000 steps (the bed forms)
#   N=64000 STEPS=4000 bench/liggghts_hertz.sh
#   REPEATS=3 bench/liggghts_hertz.sh       # best of 3 for each code
#
# LIGGGHTS: bench/liggghts/in.settle_hertz (pair gran model hertz tangential history
# rolling_friction cdt) on gen_settle.py's data file; demhpc: scenes/settle_hertz.ron (the same
# lattice) on one thread. Prints one line per code (loop seconds, particle-steps per second,
# final kinetic energy) and the ratio demhpc / LIGGGHTS. Needs `liggghts` (Debian package
# liggghts, `scripts/setup.sh --peers`) and a release build.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/env.sh
source "$root/scripts/env.sh"
N="${N:-8000}"
STEPS="${STEPS:-20000}"
REPEATS="${REPEATS:-1}"
LIGGGHTS="${LIGGGHTS:-liggghts}"
work="${BENCH_WORK:-$root/bench/work}/liggghts_hertz"
mkdir -p "$work"
python3 "$root/bench/data/gen_settle.py" "$N" "$work" >/dev/null
bin="$root/target/release/demhpc"
[ -x "$bin" ] || (cd "$root" && cargo build --release -q)
side=$(python3 -c "print(round($N ** (1/3)))")
scene="$work/settle_hertz.ron"
sed -e "s/counts: (20, 20, 20)/counts: ($side, $side, $side)/" \
    -e "s/0\\.048/$(python3 -c "print($side * 2.4e-3)")/g" \
    -e "s/hi: (0\\.050, 0\\.050, 0\\.1)/hi: ($(python3 -c "print($side * 2.4e-3 + 2e-3)"), $(python3 -c "print($side * 2.4e-3 + 2e-3)"), $(python3 -c "print($side * 2.4e-3 * 2.1)"))/" \
    "$root/scenes/settle_hertz.ron" > "$scene"

best_lig=""
best_dem=""
for _ in $(seq "$REPEATS"); do
    (cd "$work" && "$LIGGGHTS" -in "$root/bench/liggghts/in.settle_hertz" -var data "settle_$N.data" \
        -var steps "$STEPS" -var thermo_every "$STEPS" -log log.liggghts -screen none)
    t=$(sed -n 's/^Loop time of \([0-9.e+-]*\) on.*/\1/p' "$work/log.liggghts" | tail -1)
    ke_lig=$(awk -v s="$STEPS" '$1 == s && NF == 4 {print $3 + $4}' "$work/log.liggghts" | tail -1)
    if [ -z "$best_lig" ] || python3 -c "import sys; sys.exit(0 if $t < $best_lig else 1)"; then best_lig=$t; fi
    "$bin" -q --threads 1 --steps "$STEPS" --out "$work/demhpc" "$scene"
    d=$(python3 -c "import json; print(json.load(open('$work/demhpc/timing.json'))['wall_s'])")
    ke_dem=$(tail -1 "$work/demhpc/series.csv" | awk -F, '{print $4 + $5}')
    if [ -z "$best_dem" ] || python3 -c "import sys; sys.exit(0 if $d < $best_dem else 1)"; then best_dem=$d; fi
done
python3 - "$N" "$STEPS" "$best_lig" "$best_dem" "$ke_lig" "$ke_dem" <<'PY'
import sys
n, steps, tl, td, kl, kd = int(sys.argv[1]), int(sys.argv[2]), *map(float, sys.argv[3:])
print(f"liggghts settle_hertz N={n} steps={steps} loop_s={tl:.3f} psps={n*steps/tl:.3e} ke_J={kl:.4e}")
print(f"demhpc   settle_hertz N={n} steps={steps} loop_s={td:.3f} psps={n*steps/td:.3e} ke_J={kd:.4e}")
print(f"ratio demhpc/liggghts per core: {tl/td:.2f}")
PY
