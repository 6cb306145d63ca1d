#!/usr/bin/env bash
# Run one LAMMPS reference case and print one summary line.
#
#   bench/lammps.sh settle N STEPS      # gravity deposition, N = 8000, 64000, ... (a cube)
#   bench/lammps.sh chute STEPS         # LAMMPS chute benchmark, 32000 atoms
#   RANKS=2 bench/lammps.sh ...         # same under mpirun -n 2 (default RANKS=1)
#
# Output (stdout, one line):
#   lammps <case> N=<atoms> steps=<S> ranks=<P> loop_s=<t> psps=<particle-steps/s> psps_per_core=<psps/P>
# taken from LAMMPS' "Loop time of X on P procs for S steps with N atoms" line
# (pure time-stepping loop, setup and read_data excluded).  One OpenMP thread
# per rank, so cores = ranks.
#
# The script can also be sourced; it then only defines the function
# `lammps_bench CASE ARGS...` which prints the same line.
#
# Environment: LMP (LAMMPS binary, default lmp), RANKS, BENCH_WORK (scratch dir
# for generated data and logs, default bench/work, git-ignored).
set -euo pipefail

_LAMMPS_SH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/env.sh
source "$_LAMMPS_SH_DIR/../scripts/env.sh"

lammps_bench() {
    local case="${1:-}"
    local ranks="${RANKS:-1}"
    local lmp="${LMP:-lmp}"
    local work="${BENCH_WORK:-$DEMHPC_ROOT/bench/work}"
    local input data steps n log

    case "$case" in
        settle)
            if [ $# -ne 3 ]; then
                echo "usage: lammps.sh settle N STEPS" >&2
                return 2
            fi
            n="$2"
            steps="$3"
            input="$DEMHPC_ROOT/bench/lammps/in.settle"
            data="$work/settle_$n.data"
            mkdir -p "$work"
            if [ ! -s "$data" ]; then
                local gen="$DEMHPC_ROOT/bench/data/gen_settle.py"
                [ -f "$gen" ] || gen="$DEMHPC_ROOT/../shared/bench-data/gen_settle.py"
                "$DEMHPC_PYTHON" "$gen" "$n" "$work" >&2 || return 1
            fi
            ;;
        chute)
            if [ $# -ne 2 ]; then
                echo "usage: lammps.sh chute STEPS" >&2
                return 2
            fi
            steps="$2"
            input="$DEMHPC_ROOT/bench/lammps/in.chute"
            data="$DEMHPC_ROOT/bench/data/data.chute"
            mkdir -p "$work"
            ;;
        *)
            echo "usage: lammps.sh settle N STEPS | lammps.sh chute STEPS  (env RANKS=P)" >&2
            return 2
            ;;
    esac

    log="$work/lammps_${case}${n:+_$n}_r${ranks}.log"
    local cmd=("$lmp" -in "$input" -var data "$data" -var steps "$steps" -log "$log" -screen none -nocite)
    if [ "$ranks" -gt 1 ]; then
        cmd=(mpirun --oversubscribe --bind-to none -n "$ranks" "${cmd[@]}")
    fi
    if ! OMP_NUM_THREADS=1 "${cmd[@]}" >/dev/null 2>"$log.err"; then
        echo "lammps.sh: LAMMPS failed (${cmd[*]}); last lines of $log:" >&2
        tail -n 20 "$log" "$log.err" >&2 || true
        return 1
    fi

    # Loop time of 0.896554 on 1 procs for 2000 steps with 8000 atoms
    local loop
    loop="$(grep -E '^Loop time of [0-9.eE+-]+ on [0-9]+ procs for [0-9]+ steps with [0-9]+ atoms' "$log" | tail -n 1)"
    if [ -z "$loop" ]; then
        echo "lammps.sh: no 'Loop time' line in $log" >&2
        return 1
    fi
    echo "$loop" | awk -v c="$case" '{
        t = $4; p = $6; s = $9; n = $12;
        psps = (t > 0) ? n * s / t : 0;
        printf "lammps %s N=%d steps=%d ranks=%d loop_s=%.4f psps=%.4g psps_per_core=%.4g\n",
               c, n, s, p, t, psps, psps / p
    }'
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    lammps_bench "$@"
fi
