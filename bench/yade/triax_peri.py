# Yade reference for issue 23: periodic triaxial test on frictional spheres (FrictMat +
# Law2_ScGeom_FrictPhys_CundallStrack = demhpc's `Frict`), isotropic compression to p0 with
# PeriTriaxController, then drained triaxial compression on z at constant lateral stress p0.
#
# Run by bench/yade_triax_peri.sh:  yade -n -j1 -x bench/yade/triax_peri.py   with the settings in
# the environment (defaults below). Sign conventions of the output: Yade's stress tensor (Love–Weber,
# utils.getStress) is negative in compression and is written as such (sxx, syy, szz); the derived
# soil-mechanics quantities are compression-positive: sa = -szz, sr = -(sxx+syy)/2, q = sa - sr,
# p = (sa + 2 sr)/3, sinphi = (sa - sr)/(sa + sr); eps_a = 1 - Lz/Lz0, eps_v = 1 - V/V0 (> 0 =
# contraction), both from the start of the shear stage.
#
# Stages (PACKING=dense): compress with friction 0 to p0, set friction MU on the material AND on
# every existing contact (FrictPhys freezes tan(phi) at contact creation), re-equilibrate at p0,
# shear. PACKING=loose: compress with friction MU, shear.
import json
import math
import os
import sys
import time

from yade import utils

env = os.environ.get
PACKING = env("PACKING", "dense")
CLOUD = env("CLOUD", "triax_cloud_5000.txt")
OUT = env("OUT", ".")
P0 = float(env("P0", "1e5"))              # confining pressure [Pa]
YOUNG = float(env("YOUNG", "2e8"))        # FrictMat.young [Pa]: kn = 2 E r1 r2 / (r1 + r2)
POISSON = float(env("POISSON", "0.5"))    # FrictMat.poisson = ks/kn
MU = float(env("MU", "0.5"))              # interparticle friction coefficient for shear
RHO = float(env("RHO", "2650"))           # density [kg/m3], no density scaling
DAMP = float(env("DAMP", "0.2"))          # Cundall non-viscous damping (Yade default)
DTF = float(env("DTF", "0.7"))            # dt = DTF * PWaveTimeStep()
INERTIAL = float(env("INERTIAL", "1e-3")) # inertial number of the shear stage
CRATE = float(env("CRATE", "2"))          # compaction max strain rate = CRATE * shear rate (see below)
EPS_END = float(env("EPS_END", "0.20"))   # final axial strain (engineering)
ROWS = int(env("ROWS", "200"))            # rows of the shear CSV
UNB = float(env("UNB", "0.01"))           # maxUnbalanced ending the compaction (loose) / friction-on (dense) stage
UNB0 = float(env("UNB0", "0.1"))          # maxUnbalanced ending the frictionless compaction (dense)
STRESS_TOL = float(env("STRESS_TOL", "0.01"))  # relStressTol of the compaction stages
TRACK = env("TRACK_ENERGY", "1") == "1"
SHEAR_STEPS = int(env("SHEAR_STEPS", "0"))  # >0: timing run, stop the shear after that many steps
MAX_COMPRESS = int(env("MAX_COMPRESS_STEPS", "400000"))
SAVE_PACKING = env("SAVE_PACKING", "1") == "1"
LOAD_PACKING = env("LOAD_PACKING", "")    # start the shear from a saved compacted packing (timing)

t_script = time.time()


def cputime():
    t = os.times()
    return t.user + t.system


def read_spheres(path):
    cell = None
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                if "Lx=" in line:
                    cell = [float(line.split(k + "=")[1].split()[0]) for k in ("Lx", "Ly", "Lz")]
                continue
            v = line.split()
            if len(v) >= 4:
                rows.append(tuple(float(a) for a in v[:4]))
    if cell is None:
        raise RuntimeError("%s: no '# cell: ... Lx=.. Ly=.. Lz=..' header" % path)
    return cell, rows


O.periodic = True
cell, spheres = read_spheres(LOAD_PACKING or CLOUD)
O.cell.setBox(*cell)
mu_compact = 0.0 if PACKING == "dense" else MU
if LOAD_PACKING:
    mu_compact = MU
mat = O.materials.append(FrictMat(young=YOUNG, poisson=POISSON, frictionAngle=math.atan(mu_compact),
                                  density=RHO, label="grains"))
O.bodies.append([utils.sphere((x, y, z), r, material=mat) for (x, y, z, r) in spheres])
N = len(O.bodies)
vsolid = sum(4.0 / 3.0 * math.pi * b.shape.radius ** 3 for b in O.bodies)
dmean = 2.0 * sum(b.shape.radius for b in O.bodies) / N

done = [False]


def stage_done():
    done[0] = True


O.engines = [
    ForceResetter(),
    InsertionSortCollider([Bo1_Sphere_Aabb()]),
    InteractionLoop([Ig2_Sphere_Sphere_ScGeom()], [Ip2_FrictMat_FrictMat_FrictPhys()],
                    [Law2_ScGeom_FrictPhys_CundallStrack()]),
    # globUpdate=1: the Love-Weber stress from the contacts every step. With the default 5 the
    # controller extrapolates the stress in between with a per-contact stiffness over the cell
    # area, which here overestimates the packing modulus by ~2 orders of magnitude: the servo
    # then stalls below the goal (p stuck at 75-90 kPa for 15 000 steps at N=2000).
    PeriTriaxController(label="triax", goal=(-P0, -P0, -P0), stressMask=7, globUpdate=1,
                        maxUnbalanced=UNB, relStressTol=STRESS_TOL, doneHook="stage_done()"),
    NewtonIntegrator(damping=DAMP, label="newton"),
]
O.dt = DTF * PWaveTimeStep()
O.trackEnergy = TRACK
rate = INERTIAL / (dmean * math.sqrt(RHO / P0))     # shear strain rate from the inertial number
# Compaction at 2x the shear rate: NewtonIntegrator sets maxVelocitySq = |d(cell size)/dt|^2 and
# InsertionSortCollider runs on every step while that is >= 1 (m/s, whatever the particle size);
# at 30 /s the collider (sweep and prune, ~N^(5/3) in a gas) then took 2/3 of the time and
# N = 20000 ran at 43 ms/step. 2 x 3.07 /s keeps |dL/dt| < 1 m/s up to a 9 cm cell.
crate = CRATE * rate
kappa = YOUNG * (dmean / 2) / (P0 * dmean)           # kn/(p0 d) for two mean spheres = E/(2 p0)
print("TRIAX N=%d packing=%s dt=%.6e rate=%.6e crate=%.6e kappa=%.1f dmean=%.6e" %
      (N, PACKING, O.dt, rate, crate, kappa, dmean))
sys.stdout.flush()

timing = {}


def run_timed(key, n):
    w0, c0 = time.time(), cputime()
    O.run(n, True)
    w1, c1 = time.time(), cputime()
    t = timing.setdefault(key, {"steps": 0, "wall_s": 0.0, "cpu_s": 0.0})
    t["steps"] += n
    t["wall_s"] += w1 - w0
    t["cpu_s"] += c1 - c0


def state():
    s = utils.getStress()
    h = O.cell.hSize
    vol = O.cell.volume
    sxx, syy, szz = s[0, 0], s[1, 1], s[2, 2]
    sa, sr = -szz, -0.5 * (sxx + syy)
    return {
        "step": O.iter, "time_s": O.time, "sxx": sxx, "syy": syy, "szz": szz,
        "sxy": s[0, 1], "syz": s[1, 2], "szx": s[2, 0],
        "p": (sa + 2 * sr) / 3, "q": sa - sr, "sinphi": (sa - sr) / (sa + sr) if sa + sr != 0 else 0.0,
        "Lx": h[0, 0], "Ly": h[1, 1], "Lz": h[2, 2], "V": vol, "phi_solid": vsolid / vol,
        "unbalanced": utils.unbalancedForce(), "Z": utils.avgNumInteractions(),
        "Zm": utils.avgNumInteractions(skipFree=True),
        "energy_total": O.energy.total() if TRACK else 0.0,
    }


def write_csv(path, cols, rows, comments):
    with open(path, "w") as f:
        for c in comments:
            f.write("# %s\n" % c)
        f.write(",".join(cols) + "\n")
        for r in rows:
            f.write(",".join(("%d" % r[c]) if c == "step" else ("%.9g" % r[c]) for c in cols) + "\n")


summary = {"N": N, "packing": PACKING, "young": YOUNG, "poisson": POISSON, "mu": MU, "mu_compaction": mu_compact,
           "rho": RHO, "damping": DAMP, "dt": O.dt, "dt_over_pwave": DTF, "p0": P0, "inertial_number": INERTIAL,
           "shear_rate": rate, "compaction_rate": crate, "kappa_kn_over_p0_d": kappa, "max_unbalanced": UNB,
           "max_unbalanced_frictionless": UNB0, "rel_stress_tol": STRESS_TOL, "dmean": dmean,
           "cloud": os.path.basename(LOAD_PACKING or CLOUD), "track_energy": TRACK, "yade": version}

# ---------------------------------------------------------------- isotropic compression
comp_rows = []
if not LOAD_PACKING:
    triax.maxStrainRate = (crate, crate, crate)
    triax.maxUnbalanced = UNB0 if PACKING == "dense" else UNB
    chunk = 200
    done[0] = False
    while not done[0]:
        run_timed("compress", chunk)
        comp_rows.append(state())
        r = comp_rows[-1]
        if len(comp_rows) % 10 == 0:
            print("COMPRESS step %d p=%.4g unb=%.3g phi=%.4f Z=%.3f" % (O.iter, r["p"], r["unbalanced"], r["phi_solid"], r["Z"]))
            sys.stdout.flush()
        if O.iter > MAX_COMPRESS:
            raise RuntimeError("compaction did not converge in %d steps" % MAX_COMPRESS)
    summary["compress_end"] = comp_rows[-1]
    if PACKING == "dense":
        # friction on: the material (new contacts) and every existing contact
        O.materials[mat].frictionAngle = math.atan(MU)
        for i in O.interactions:
            if i.isReal:
                i.phys.tangensOfFrictionAngle = MU
        triax.maxUnbalanced = UNB
        done[0] = False
        while not done[0]:
            run_timed("settle", chunk)
            comp_rows.append(state())
            if O.iter > MAX_COMPRESS:
                raise RuntimeError("re-equilibration did not converge")
        summary["settle_end"] = comp_rows[-1]
    write_csv(os.path.join(OUT, "yade_triax_%s_compress.csv" % PACKING),
              ["step", "time_s", "p", "sxx", "syy", "szz", "phi_solid", "unbalanced", "Z", "Zm"], comp_rows,
              ["Yade %s periodic triaxial, %s packing, isotropic compression to p0=%g Pa (bench/yade/triax_peri.py)"
               % (version, PACKING, P0),
               "stress: Love-Weber utils.getStress(), negative in compression; p compression-positive; "
               "Z = 2 Nc/N, Zm = without rattlers (avgNumInteractions skipFree)"])
    if SAVE_PACKING:
        h = O.cell.hSize
        with open(os.path.join(OUT, "yade_triax_%s_p0.txt" % PACKING), "w") as f:
            f.write("# Yade %s: %s packing of %s after isotropic compression to p0=%g Pa (bench/yade/triax_peri.py), "
                    "step %d, phi=%.6f\n" % (version, PACKING, os.path.basename(CLOUD), P0, O.iter, vsolid / O.cell.volume))
            f.write("# cell: periodic box Lx=%.9e Ly=%.9e Lz=%.9e m, origin 0; centres wrapped into the cell; "
                    "columns: x y z r [m]\n" % (h[0, 0], h[1, 1], h[2, 2]))
            for b in O.bodies:
                p = O.cell.wrap(b.state.pos)
                f.write("%.9e %.9e %.9e %.9e\n" % (p[0], p[1], p[2], b.shape.radius))
else:
    # timing run from a saved packing: bring it to p0 first (contacts are rebuilt from scratch)
    triax.maxStrainRate = (rate, rate, rate)
    done[0] = False
    while not done[0]:
        run_timed("compress", 200)
        if O.iter > MAX_COMPRESS:
            raise RuntimeError("re-compression did not converge")

# ---------------------------------------------------------------- drained triaxial compression on z
O.cell.trsf = Matrix3.Identity
triax.strain = Vector3(0, 0, 0)
triax.stressMask = 3
triax.goal = (-P0, -P0, math.log(1.0 - EPS_END) - 0.02)  # log strain; the loop stops at EPS_END
triax.maxStrainRate = (2 * rate, 2 * rate, rate)
triax.doneHook = ""
Lz0, V0 = O.cell.hSize[2, 2], O.cell.volume
E0 = O.energy.total() if TRACK else 0.0
W0 = -O.energy["velGradWork"] if TRACK and "velGradWork" in O.energy.keys() else 0.0
step0 = O.iter
nsteps = int(math.ceil(-math.log(1.0 - EPS_END) / (rate * O.dt)))
every = max(1, (SHEAR_STEPS or nsteps) // ROWS)
rows = []


def shear_row():
    r = state()
    r["eps_a"] = 1.0 - O.cell.hSize[2, 2] / Lz0
    r["eps_v"] = 1.0 - O.cell.volume / V0
    r["shear_step"] = O.iter - step0
    if TRACK:
        e = dict(O.energy.items())
        r["E_kin"] = e.get("kinetic", 0.0)
        r["E_elast"] = e.get("elastPotential", 0.0)
        r["E_plast"] = e.get("plastDissip", 0.0)
        r["E_damp"] = e.get("nonviscDamp", 0.0)
        r["W_cell"] = -e.get("velGradWork", 0.0) - W0
    else:
        r["E_kin"] = r["E_elast"] = r["E_plast"] = r["E_damp"] = r["W_cell"] = 0.0
    return r


rows.append(shear_row())
print("SHEAR start step %d phi=%.4f p=%.5g Z=%.3f expected steps %d, row every %d" %
      (O.iter, rows[0]["phi_solid"], rows[0]["p"], rows[0]["Z"], nsteps, every))
sys.stdout.flush()
while True:
    run_timed("shear", every)
    rows.append(shear_row())
    r = rows[-1]
    if len(rows) % 20 == 0:
        print("SHEAR step %d eps_a=%.4f eps_v=%.5f q/p=%.4f sinphi=%.4f p=%.5g unb=%.3g Z=%.3f" %
              (r["shear_step"], r["eps_a"], r["eps_v"], r["q"] / r["p"], r["sinphi"], r["p"], r["unbalanced"], r["Z"]))
        sys.stdout.flush()
    if r["eps_a"] >= EPS_END or (SHEAR_STEPS and r["shear_step"] >= SHEAR_STEPS):
        break

cols = ["step", "shear_step", "time_s", "eps_a", "eps_v", "sxx", "syy", "szz", "sxy", "syz", "szx", "p", "q", "sinphi",
        "phi_solid", "unbalanced", "Z", "Zm", "Lx", "Ly", "Lz", "E_kin", "E_elast", "E_plast", "E_damp", "W_cell",
        "energy_total"]
if not SHEAR_STEPS:
    write_csv(os.path.join(OUT, "yade_triax_%s.csv" % PACKING), cols, rows, [
        "Yade %s periodic triaxial (bench/yade/triax_peri.py), %s packing, N=%d, cloud %s" %
        (version, PACKING, N, os.path.basename(CLOUD)),
        "FrictMat young=%g poisson(ks/kn)=%g mu=%g (compaction mu=%g) density=%g, damping=%g, dt=%.6e s (%.2f PWaveTimeStep), "
        "no density scaling, homoDeform=2" % (YOUNG, POISSON, MU, mu_compact, RHO, DAMP, O.dt, DTF),
        "p0=%g Pa, axial strain rate %.6e /s on z (inertial number %.2g with d_mean=%.4g m), lateral stress p0 by PeriTriaxController" %
        (P0, rate, INERTIAL, dmean),
        "stresses: Love-Weber contact stress utils.getStress() [Pa], negative = compression; p, q, sinphi compression-positive",
        "eps_a = 1 - Lz/Lz0, eps_v = 1 - V/V0 (positive = contraction) from the start of shear; Z = 2Nc/N, Zm without rattlers",
        "energies [J] (O.trackEnergy): E_kin (fluctuation), E_elast (elastPotential), E_plast (plastDissip, cumulative), "
        "E_damp (nonviscDamp, cumulative), W_cell (work of the cell on the sample since shear start, = -velGradWork), "
        "energy_total = O.energy.total() (cumulative over all stages)",
    ])

summary["shear_start"] = rows[0]
summary["shear_end"] = rows[-1]
summary["timing"] = timing
summary["script_wall_s"] = time.time() - t_script
if TRACK:
    dE = O.energy.total() - E0
    summary["energy_keys"] = sorted(O.energy.keys())
    summary["shear_energy_drift_J"] = dE
    summary["shear_input_work_J"] = rows[-1]["W_cell"]
    summary["shear_energy_closure_rel"] = dE / abs(rows[-1]["W_cell"]) if rows[-1]["W_cell"] else float("nan")
if "shear" in timing:
    t = timing["shear"]
    summary["shear_psps_wall"] = N * t["steps"] / t["wall_s"]
    summary["shear_s_per_step_wall"] = t["wall_s"] / t["steps"]
    summary["shear_psps_cpu"] = N * t["steps"] / t["cpu_s"]
name = "yade_triax_%s%s_summary.json" % (PACKING, "_timing" if SHEAR_STEPS else "")
with open(os.path.join(OUT, name), "w") as f:
    json.dump(summary, f, indent=1, sort_keys=True)
print("TRIAX_RESULT " + json.dumps({k: summary[k] for k in summary if k in
      ("N", "packing", "timing", "shear_psps_wall", "shear_psps_cpu", "shear_energy_closure_rel")}))
sys.stdout.flush()
