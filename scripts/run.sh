#!/usr/bin/env bash
# Main job: install prerequisites, build demhpc in release mode and run the
# `settle` scene (8000 spheres settling under gravity).  Extra arguments are
# passed through to demhpc, e.g.
#
#   scripts/run.sh --steps 2000 --threads 2
#   RANKS=2 scripts/run.sh              # same, on 2 MPI ranks
#   SCENE=scenes/chute.ron scripts/run.sh
#
# The last line printed is the absolute path of the output directory
# (series.csv, snapshots/*.h5, snapshots.xmf, timing.json).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh

SCENE="${SCENE:-scenes/settle.ron}"
RANKS="${RANKS:-1}"

if [ "${DEMHPC_SKIP_SETUP:-0}" != 1 ]; then
    scripts/setup.sh
fi

cargo build --release
BIN="${CARGO_TARGET_DIR:-$DEMHPC_ROOT/target}/release/demhpc"

# Work out the output directory: honour --out DIR / --out=DIR if given,
# otherwise pass an explicit default so we know where the results go.
out=""
prev=""
for a in "$@"; do
    case "$a" in
        --out=*) out="${a#--out=}" ;;
        *) if [ "$prev" = "--out" ]; then out="$a"; fi ;;
    esac
    prev="$a"
done
extra=()
if [ -z "$out" ]; then
    name="$(basename "$SCENE" .ron)"
    out="output/$name"
    extra=(--out "$out")
fi

cmd=("$BIN" "${extra[@]}" "$@" "$SCENE")
if [ "$RANKS" -gt 1 ]; then
    cmd=(mpirun --oversubscribe -n "$RANKS" "${cmd[@]}")
fi

echo "run: ${cmd[*]}" >&2
"${cmd[@]}"

mkdir -p "$out"
(cd "$out" && pwd)
