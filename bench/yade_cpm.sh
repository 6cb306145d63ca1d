#!/usr/bin/env bash
# demhpc vs Yade per core on a CPM uniaxial tension test (issue 20, acceptance 6), the same
# specimen in the same invocation:
#
#   bench/yade_cpm.sh                  # r = 0.75 mm: ~5 400 spheres, 3 000 steps
#   R=1.4e-3 STEPS=20000 bench/yade_cpm.sh
#   REPEATS=3 bench/yade_cpm.sh        # best of 3 for each code
#
# The specimen is scenes/yade_cpm_uniax.ron's (a 20 x 20 x 40 mm prism, DensePack of radius R):
# demhpc generates it once and writes specimen.txt (x y z r); both codes then read that file
# (Yade: ymport.text; demhpc: TextFile), so they run the same spheres. Yade runs the script of
# docs/translating.md ("From Yade (CPM)": CpmMat, intRadius 1.5 during the first step,
# NewtonIntegrator(damping=.4), UniaxialStrainer(strainRate=.2), dt = .8 PWaveTimeStep) on one
# thread (-j1); demhpc the equivalent scene with --threads 1, its strainer row every 100 steps
# instead of 10 (each row is a Love-Weber sum over all contacts; the Yade script records
# nothing, its strainer only sums the supports' forces, as demhpc's does every step). Timed: the steps after the first
# (Yade: O.run wall time; demhpc: the loop, timing.json wall_s). Prints particle-steps per
# second per code, the ratio, and both codes' axial stress at the last step (the curves are
# compared in bench/RESULTS.md). Needs `yade` (Debian package yade, `scripts/setup.sh --peers`)
# and a release build.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/env.sh
source "$root/scripts/env.sh"
R="${R:-0.75e-3}"
STEPS="${STEPS:-3000}"
REPEATS="${REPEATS:-1}"
YADE="${YADE:-yade}"
work="${BENCH_WORK:-$root/bench/work}/yade_cpm"
mkdir -p "$work"
bin="$root/target/release/demhpc"
[ -x "$bin" ] || (cd "$root" && cargo build --release -q)
layer=$(python3 -c "print(2 * $R)")

# 1. the specimen: demhpc's DensePack of radius R, one step, written as specimen.txt
sed -e "s/radius: 1\.4e-3/radius: $R/" -e "s/run: Steps(20000)/run: Steps(1)/" \
    "$root/scenes/yade_cpm_uniax.ron" > "$work/gen.ron"
"$bin" -q --threads 1 --out "$work/gen" "$work/gen.ron" >/dev/null
grep -v '^#' "$work/gen/specimen.txt" > "$work/spheres.txt"
n=$(wc -l < "$work/spheres.txt")

# 2. demhpc: the same scene reading the file; supports: the spheres within 2 r of the ends
sed -e "s|DensePack(material: \"concrete\", shape: Box(lo: (0.0, 0.0, 0.0), hi: (0.02, 0.02, 0.04)),|TextFile(path: \"$work/spheres.txt\", material: \"concrete\"),|" \
    -e "/radius: 1\.4e-3, porosity: 0\.40, seed: 1),/d" \
    -e "s/supports: Layer(2\.8e-3)/supports: Layer($layer)/" \
    -e "s/ramp_steps: 100/ramp_steps: 200/" \
    -e "s/every: 10)/every: 100)/" \
    -e "s/run: Steps(20000)/run: Steps($STEPS)/" \
    "$root/scenes/yade_cpm_uniax.ron" > "$work/demhpc.ron"
grep -q TextFile "$work/demhpc.ron" || { echo "yade_cpm.sh: scene edit failed" >&2; exit 1; }

# 3. Yade: docs/translating.md's script on the same spheres
cat > "$work/yade_uniax.py" <<PY
import time
from math import atan
from yade import ymport
r, intRadius = $R, 1.5
concrete = O.materials.append(CpmMat(young=24e9, poisson=.2, frictionAngle=atan(.8),
                                     sigmaT=3.5e6, epsCrackOnset=1e-4, relDuctility=30))
O.bodies.append(ymport.text("$work/spheres.txt", material=concrete))
zmin = min(b.state.pos[2] - b.shape.radius for b in O.bodies)
zmax = max(b.state.pos[2] + b.shape.radius for b in O.bodies)
negIds = [b.id for b in O.bodies if b.state.pos[2] - b.shape.radius < zmin + 2 * r]
posIds = [b.id for b in O.bodies if b.state.pos[2] + b.shape.radius > zmax - 2 * r]
strainer = UniaxialStrainer(strainRate=.2, axis=2, negIds=negIds, posIds=posIds,
                            crossSectionArea=.02 * .02, blockDisplacements=False,
                            blockRotations=False, initAccelTime=-200)
O.engines = [
    ForceResetter(),
    InsertionSortCollider([Bo1_Sphere_Aabb(aabbEnlargeFactor=intRadius)]),
    InteractionLoop([Ig2_Sphere_Sphere_ScGeom(interactionDetectionFactor=intRadius)],
                    [Ip2_CpmMat_CpmMat_CpmPhys()],
                    [Law2_ScGeom_CpmPhys_Cpm()]),
    NewtonIntegrator(damping=.4),
    strainer,
]
O.dt = .8 * PWaveTimeStep()
O.step()
O.engines[1].boundDispatcher.functors[0].aabbEnlargeFactor = 1.
O.engines[2].geomDispatcher.functors[0].interactionDetectionFactor = 1.
t0 = time.time()
O.run($STEPS - 1, True)
t = time.time() - t0
print("YADE_RESULT n=%d steps=%d loop_s=%.6f stress=%.6e strain=%.6e"
      % (len(O.bodies), $STEPS - 1, t, strainer.avgStress, strainer.strain))
PY

best_yade="" best_dem="" y_stress="" d_stress=""
for _ in $(seq "$REPEATS"); do
    line=$(cd "$work" && "$YADE" -n -j1 -x yade_uniax.py 2>/dev/null | grep YADE_RESULT)
    t=$(sed 's/.*loop_s=\([^ ]*\).*/\1/' <<<"$line")
    y_stress=$(sed 's/.*stress=\([^ ]*\).*/\1/' <<<"$line")
    if [ -z "$best_yade" ] || python3 -c "import sys; sys.exit(0 if $t < $best_yade else 1)"; then best_yade=$t; fi
    "$bin" -q --threads 1 --out "$work/demhpc" "$work/demhpc.ron" >/dev/null
    d=$(python3 -c "import json; print(json.load(open('$work/demhpc/timing.json'))['wall_s'])")
    d_stress=$(tail -1 "$work/demhpc/strainer.csv" | awk -F, '{print $4}')
    if [ -z "$best_dem" ] || python3 -c "import sys; sys.exit(0 if $d < $best_dem else 1)"; then best_dem=$d; fi
done
head -1 "$work/demhpc/strainer.csv" > "$work/strainer_header.txt"
python3 - "$n" "$STEPS" "$best_yade" "$best_dem" "$y_stress" "$d_stress" <<'PY'
import sys
n, steps = int(sys.argv[1]), int(sys.argv[2])
ty, td, sy, sd = map(float, sys.argv[3:7])
print(f"yade   cpm_uniax N={n} steps={steps - 1} loop_s={ty:.3f} psps={n*(steps-1)/ty:.3e} stress_Pa={sy:.4e}")
print(f"demhpc cpm_uniax N={n} steps={steps} loop_s={td:.3f} psps={n*steps/td:.3e} stress_Pa={sd:.4e}")
print(f"ratio demhpc/yade per core: {(n*steps/td)/(n*(steps-1)/ty):.2f}")
PY
