#!/usr/bin/env bash
# Reference kinetic-energy trajectory of LAMMPS' own gran/hooke/history settle, for
# tests/suite/lammps_hooke.rs (issue 20, acceptance 3). Rerun it to refresh
# tests/data/lammps_hooke_settle_ke.csv:
#
#   bench/lammps_hooke_reference.sh            # needs lmp (Debian package lammps) and python3
#
# Case: bench/lammps/in.settle (8 000 spheres from bench/data/gen_settle.py, floor and four
# side walls, kn = 1e4 N/m, kt = kn/4, xmu = 0.5, dt = 7e-6 s) with gamma_n = 5000 1/s and
# gamma_t = 2500 1/s (dampflag 1: LAMMPS ignores gamma_t with dampflag 0; restitution about 0.8 for the mean pair), thermo every 200 steps up to
# step 6000. demhpc's equivalent scene is scenes/settle_hooke.ron.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 "$root/bench/data/gen_settle.py" 8000 "$work" >/dev/null
(cd "$work" && ${LMP:-lmp} -in "$root/bench/lammps/in.settle" -var data settle_8000.data \
    -var steps 6000 -var gn 5000 -var gt 2500 -var dampflag 1 -var thermo_every 200 -log log.lammps -screen none)
out="$root/tests/data/lammps_hooke_settle_ke.csv"
{
    echo "# LAMMPS $(${LMP:-lmp} -h | sed -n 's/^Large-scale[^-]*- //p' | head -1) gran/hooke/history settle, made by bench/lammps_hooke_reference.sh"
    echo "step,ke_trans_J,ke_rot_J"
    awk '/^ *Step /{on=1; next} /^Loop time/{on=0} on && NF==4 {printf "%d,%s,%s\n", $1, $3, $4}' "$work/log.lammps"
} > "$out"
echo "wrote $out ($(grep -c '^[0-9]' "$out") rows)"
