#!/usr/bin/env bash
# Reference kinetic-energy trajectory of LIGGGHTS on the drum validation case, for
# tests/suite/mesh.rs `drum_follows_liggghts_kinetic_energy` (issue 21). Rerun it to refresh
# tests/data/liggghts_drum_ke.csv:
#
#   bench/liggghts_drum_reference.sh           # needs liggghts (Debian package liggghts)
#
# Case: bench/liggghts/in.drum_hertz on bench/data/drum_hertz.data (4 720 beads falling from
# their lattice onto the turning drum scenes/drum_hertz.stl), thermo every 200 steps up to
# step 2 000 (0.04 s: the beads land and the drum drags the lowest ones along); demhpc's
# equivalent scene is scenes/drum_hertz.ron.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && ${LIGGGHTS:-liggghts} -in "$root/bench/liggghts/in.drum_hertz" \
    -var data "$root/bench/data/drum_hertz.data" -var stl "$root/scenes/drum_hertz.stl" \
    -var steps 2000 -var thermo_every 200 -log log.liggghts -screen "$work/screen")
out="$root/tests/data/liggghts_drum_ke.csv"
{
    echo "# $(sed -n 's/^\(LIGGGHTS (Version [^,)]*\).*/\1)/p' "$work/log.liggghts" | head -1) drum_hertz, made by bench/liggghts_drum_reference.sh"
    echo "step,ke_trans_J,ke_rot_J"
    awk '/^ *Step /{on=1; next} /^Loop time/{on=0} on && NF==4 {printf "%d,%s,%s\n", $1, $3, $4}' "$work/log.liggghts"
} > "$out"
echo "wrote $out ($(grep -c '^[0-9]' "$out") rows)"
