#!/usr/bin/env bash
# demhpc vs LIGGGHTS per core with Hertz-Mindlin contacts and rolling resistance (issue 20,
# acceptance 5), the same input in the same invocation, on the settle and chute benchmarks:
#
#   bench/liggghts_hertz.sh                 # settle 8 000 x 20 000 steps, chute 32 000 x 1 000
#   N=64000 STEPS=4000 bench/liggghts_hertz.sh
#   CASES=chute CHUTE_STEPS=2000 bench/liggghts_hertz.sh
#   REPEATS=3 bench/liggghts_hertz.sh       # best of 3 for each code
#   ROLLING=epsd2 bench/liggghts_hertz.sh   # the elastic-plastic rolling model (default cdt)
#
# LIGGGHTS: bench/liggghts/in.settle_hertz and in.chute_hertz (pair gran model hertz
# tangential history rolling_friction cdt) on gen_settle.py's data file and
# bench/data/data.chute; demhpc: scenes/settle_hertz.ron (the same lattice) and
# scenes/chute_hertz.ron on one thread. Prints one line per code (loop seconds, particle-steps
# per second, final kinetic energy) and the ratio demhpc / LIGGGHTS per case. Needs `liggghts`
# (Debian package liggghts, `scripts/setup.sh --peers`) and a release build.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/env.sh
source "$root/scripts/env.sh"
N="${N:-8000}"
STEPS="${STEPS:-20000}"
REPEATS="${REPEATS:-1}"
CASES="${CASES:-settle chute}"
CHUTE_STEPS="${CHUTE_STEPS:-1000}"
ROLLING="${ROLLING:-cdt}"
case "$ROLLING" in
    cdt) model=Cdt ;;
    epsd2) model=Epsd2 ;;
    *) echo "ROLLING=$ROLLING: cdt or epsd2" >&2; exit 2 ;;
esac
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
    -e "s/rolling: (mu_r: 0\.1)/rolling: (mu_r: 0.1, model: $model)/" \
    "$root/scenes/settle_hertz.ron" > "$scene"
# the LIGGGHTS inputs with the chosen rolling model
for f in settle_hertz chute_hertz; do
    sed "s/rolling_friction cdt/rolling_friction $ROLLING/" "$root/bench/liggghts/in.$f" \
        > "$work/in.$f"
done

# one case: LIGGGHTS input, its data file, demhpc scene, atoms, steps, kinetic energy column
# of LIGGGHTS' thermo (translational + rotational)
run_case() {
    local name="$1" input="$2" data="$3" scene="$4" n="$5" steps="$6"
    local best_lig="" best_dem="" ke_lig="" ke_dem="" t d
    for _ in $(seq "$REPEATS"); do
        (cd "$work" && "$LIGGGHTS" -in "$input" -var data "$data" -var steps "$steps" \
            -var thermo_every "$steps" -log "log.$name" -screen none)
        t=$(sed -n 's/^Loop time of \([0-9.e+-]*\) on.*/\1/p' "$work/log.$name" | tail -1)
        ke_lig=$(awk -v s="$steps" '$1 == s && NF == 4 {print $3 + $4}' "$work/log.$name" | tail -1)
        if [ -z "$best_lig" ] || python3 -c "import sys; sys.exit(0 if $t < $best_lig else 1)"; then best_lig=$t; fi
        "$bin" -q --threads 1 --steps "$steps" --out "$work/demhpc_$name" "$scene" >/dev/null
        d=$(python3 -c "import json; print(json.load(open('$work/demhpc_$name/timing.json'))['wall_s'])")
        ke_dem=$(tail -1 "$work/demhpc_$name/series.csv" | awk -F, '{print $4 + $5}')
        if [ -z "$best_dem" ] || python3 -c "import sys; sys.exit(0 if $d < $best_dem else 1)"; then best_dem=$d; fi
    done
    python3 - "$name" "$n" "$steps" "$best_lig" "$best_dem" "$ke_lig" "$ke_dem" "$ROLLING" <<'PY'
import sys
name = sys.argv[1]
n, steps, tl, td, kl, kd = int(sys.argv[2]), int(sys.argv[3]), *map(float, sys.argv[4:8])
print(f"liggghts {name}_hertz ({sys.argv[8]}) N={n} steps={steps} loop_s={tl:.3f} psps={n*steps/tl:.3e} ke_J={kl:.6e}")
print(f"demhpc   {name}_hertz N={n} steps={steps} loop_s={td:.3f} psps={n*steps/td:.3e} ke_J={kd:.6e}")
print(f"ratio demhpc/liggghts per core ({name}): {tl/td:.2f}")
PY
}

for c in $CASES; do
    case "$c" in
        settle) run_case settle "$work/in.settle_hertz" "settle_$N.data" "$scene" "$N" "$STEPS" ;;
        chute)
            sed -e "s|\.\./bench/data/data.chute|$root/bench/data/data.chute|" \
                -e "s/rolling: (mu_r: 0\.1)/rolling: (mu_r: 0.1, model: $model)/" \
                "$root/scenes/chute_hertz.ron" > "$work/chute_hertz.ron"
            run_case chute "$work/in.chute_hertz" "$root/bench/data/data.chute" \
                "$work/chute_hertz.ron" 32000 "$CHUTE_STEPS" ;;
        *) echo "unknown case $c (settle, chute)" >&2; exit 2 ;;
    esac
done
