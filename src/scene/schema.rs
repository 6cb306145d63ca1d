//! The RON schema of a scene file (serde). Every struct denies unknown fields; defaults are
//! documented on the field. All quantities SI. See `docs/scene-format.md`.

// Each material's scene form belongs to its law (`contact/law/<law>/material.rs`).
pub use crate::contact::law::cpm::material::CpmSpec;
pub use crate::contact::law::hertz::material::HertzSpec;
pub use crate::contact::law::hooke::material::{CoulombSpec, HookeSpec};
pub use crate::contact::law::linear::material::FrictSpec;
use serde::{Deserialize, Serialize};

pub type Vec3 = [f64; 3];

fn zero3() -> Vec3 {
    [0.0; 3]
}
/// A size not given (NaN): the other name of the field was used, or neither (refused).
fn unset() -> f64 {
    f64::NAN
}
fn default_lattice_seed() -> u64 {
    20240601
}
fn default_one() -> u64 {
    1
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Scene")]
pub struct SceneFile {
    /// Name of the scene (default: the file stem); names the default output directory.
    #[serde(default)]
    pub name: Option<String>,
    pub materials: Vec<MaterialSpec>,
    #[serde(default)]
    pub walls: Vec<WallSpec>,
    /// Triangle meshes read from STL files (docs/scene-format.md "Meshes"; default none).
    #[serde(default)]
    pub meshes: Vec<MeshSpec>,
    #[serde(default)]
    pub spheres: Vec<SphereSpec>,
    /// Gravitational acceleration [m/s²] (default none).
    #[serde(default = "zero3")]
    pub gravity: Vec3,
    /// Cundall non-viscous damping λ_d ∈ [0, 1) (default 0).
    #[serde(default)]
    pub damping: f64,
    /// Rolling and twisting resistance of every frictional contact (default none):
    /// `rolling: (mu_r: 0.1, mu_t: 0.0)` (`contact/law/rolling.rs`, constant directional torque).
    #[serde(default)]
    pub rolling: Option<RollingSpec>,
    /// Gravity goes through the damping too (Yade `NewtonIntegrator.dampGravity`, default
    /// true); false adds g after the damping, so a free fall accelerates at exactly g.
    #[serde(default = "yes", alias = "dampGravity")]
    pub damp_gravity: bool,
    /// Time step: `Fixed(seconds)` or `PWave(safety)` (safety × p-wave critical step).
    pub dt: TimeStepSpec,
    /// Verlet skin [m] (default 0.2 × mean radius): gap within which pairs are candidates.
    #[serde(default)]
    pub skin: Option<f64>,
    /// Run length: `Steps(n)` or `Time(seconds)`.
    pub run: RunSpec,
    /// Simulation box and periodic axes (default: bounding box of spheres and walls, enlarged).
    #[serde(default)]
    pub domain: Option<DomainSpec>,
    #[serde(default)]
    pub output: OutputSpec,
    /// Checkpoints (default: one at the end of the run, in `checkpoints/`, keep 2).
    #[serde(default)]
    pub checkpoint: CheckpointSpec,
    /// Bitwise-reproducible mode, for any rank and thread count (default false).
    #[serde(default)]
    pub reproducible: bool,
    /// CPM options (only with `Cpm` materials; default `(interaction_radius: 1.5)`).
    #[serde(default)]
    pub cpm: Option<CpmOptions>,
    /// Uniaxial strain controller (default none).
    #[serde(default)]
    pub strainer: Option<StrainerSpec>,
    /// Outlets: regions that delete the particles whose centre enters them (default none;
    /// docs/scene-format.md "Outlets").
    #[serde(default)]
    pub outlets: Vec<OutletSpec>,
    /// Inlets: boxes where spheres from a size distribution appear at a rate (default none;
    /// docs/scene-format.md "Inlets").
    #[serde(default)]
    pub inlets: Vec<InletSpec>,
    /// Copies of the whole block (spheres and domain) along x, y, z (default (1, 1, 1)); the
    /// domain box is the tile. See docs/scene-format.md "Replication".
    #[serde(default = "one3")]
    pub replicate: [u64; 3],
    /// Dynamic load balancing of the MPI ranks (default on; see docs/scene-format.md
    /// "Load balancing").
    #[serde(default)]
    pub balance: BalanceSpec,
    /// A deforming periodic cell: velocity gradient, stress servo stages (issue 23; default
    /// none, a static box). docs/scene-format.md "Deforming periodic cell".
    #[serde(default)]
    pub cell: Option<CellSpec>,
    /// Stress-controlled box walls (Yade `TriaxialStressController`; default none).
    /// docs/scene-format.md "Servo walls".
    #[serde(default)]
    pub servo_walls: Option<crate::engines::servo_wall::ServoWallsSpec>,
    /// Energy budget in `series.csv` (Yade `O.trackEnergy`; default false): kinetic, elastic,
    /// dissipated by friction, dashpots and damping, work of gravity and of the boundary.
    #[serde(default, alias = "trackEnergy")]
    pub energy: bool,
    /// External forces and torques on selected particles (`engines/force.rs`; Yade
    /// `ForceEngine`, LAMMPS `fix addforce`; default none).
    #[serde(default)]
    pub forces: Vec<crate::engines::force::ForceSpec>,
    /// A protocol: stages run in order, each changing gravity, damping, friction or wall
    /// motions at its start and ending by its `until` (`engines/protocol.rs`, issue 35;
    /// default none). docs/scene-format.md "Protocols".
    #[serde(default)]
    pub stages: Option<Vec<crate::engines::protocol::StageSpec>>,
}

/// Load balancing: the rank grid's cut planes move to even out the modelled cost per rank
/// (`domain::balance`), at start-up and at neighbour rebuilds where the imbalance exceeds
/// `threshold`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Balance")]
pub struct BalanceSpec {
    /// Balance at all (default true).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Rebalance when the costliest rank exceeds the average by this factor (default 1.05).
    #[serde(default = "default_balance_threshold")]
    pub threshold: f64,
}

impl Default for BalanceSpec {
    fn default() -> Self {
        BalanceSpec {
            enabled: true,
            threshold: default_balance_threshold(),
        }
    }
}

fn yes() -> bool {
    true
}

fn default_balance_threshold() -> f64 {
    1.05
}

fn one3() -> [u64; 3] {
    [1; 3]
}

fn default_interaction_radius() -> f64 {
    1.5
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Cpm")]
pub struct CpmOptions {
    /// Interaction radius R_I: pairs with d₀ ≤ R_I (r₁ + r₂) at the first step become cohesive
    /// links (thesis eq. 2.23; default 1.5, §3.3.2).
    /// Yade scripts call it `intRadius` (uniax.py; Yade's `interactionDetectionFactor` and
    /// `aabbEnlargeFactor`).
    #[serde(default = "default_interaction_radius", alias = "intRadius")]
    pub interaction_radius: f64,
}

impl Default for CpmOptions {
    fn default() -> Self {
        CpmOptions {
            interaction_radius: default_interaction_radius(),
        }
    }
}

/// Rolling and twisting resistance (`contact/law/rolling.rs`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RollingSpec {
    /// Rolling friction coefficient μ_r (LIGGGHTS `coefficientRollingFriction`).
    pub mu_r: f64,
    /// Twisting friction coefficient μ_t (default 0).
    #[serde(default)]
    pub mu_t: f64,
    /// The model (default `Cdt`).
    #[serde(default)]
    pub model: RollModelSpec,
    /// Rolling damping ratio η_r of `Epsd` (LIGGGHTS `coefficientRollingViscousDamping`;
    /// default 0).
    #[serde(default)]
    pub eta_r: Option<f64>,
}

/// Rolling-resistance models, by their LIGGGHTS names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RollModelSpec {
    /// Constant directional torque (LIGGGHTS `rolling_friction cdt`).
    #[default]
    Cdt,
    /// Elastic–plastic spring, k_r = k_T R_eff², no dashpot (LIGGGHTS `rolling_friction
    /// epsd2`; Ai et al. 2011).
    Epsd2,
    /// Elastic–plastic spring–dashpot, k_r = 2.25 k_N μ_r² R_eff², dashpot ratio `eta_r`
    /// (LIGGGHTS `rolling_friction epsd`; Ai et al. 2011 model C).
    Epsd,
}

/// The strainer's supports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SupportSpec {
    /// The spheres within this distance [m] of either end along the axis.
    Layer(f64),
    /// The spheres tagged `lower` and `upper` (TextFile 5th column, LAMMPS atom type).
    Tags { lower: u16, upper: u16 },
    /// The spheres of these global ids (Yade `negIds`, `posIds`).
    Gids { lower: Vec<u64>, upper: Vec<u64> },
}

/// A material as the scene writes it: one variant per law, whose scene form (and validation)
/// is the law's (`contact/law/<law>/material.rs`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum MaterialSpec {
    /// Cundall–Strack: `Frict(name: "g", young: 1e7, friction_angle: 0.5, density: 2600)`
    /// (`contact/law/linear.rs`).
    Frict(FrictSpec),
    /// Concrete Particle Model: `Cpm((name: "c", params: (sigmaT: 3.5e6, ...)))`; the defaults
    /// are Yade's (`contact/law/cpm.rs` `CpmParams`, `CpmMat::yade`); `cohesion`,
    /// `eps_cracking` and `rel_ductility` are required.
    Cpm(CpmSpec),
    /// Hertz–Mindlin: `Hertz(name: "g", young: 7e10, poisson: 0.33, friction_angle: 0.3,
    /// density: 2700, restitution: 0.9)` (`contact/law/hertz.rs`).
    Hertz(HertzSpec),
    /// LAMMPS `gran/hooke/history`: `Hooke(name: "g", kn: 2e5, kt: None, gamma_n: 50,
    /// gamma_t: None, xmu: 0.5, density: 1.9)` (`contact/law/hooke.rs`).
    Hooke(HookeSpec),
}

/// An outlet (`engines/outlet.rs`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Outlet")]
pub struct OutletSpec {
    /// Letters, digits and `_` (names the `series.csv` columns); unique among the outlets.
    pub name: String,
    pub region: RegionSpec,
    /// Acts every this many steps (default 1).
    #[serde(default = "default_one")]
    pub every: u64,
}

pub use crate::engines::region::RegionSpec;

pub use crate::engines::cell::{CellSpec, StageSpec};
pub use crate::engines::inlet::{InletSpec, PsdSpec, RateSpec};
pub use crate::engines::strainer::StrainerSpec;

pub use crate::contact::wall::WallSpec;

/// A rigid triangle mesh from an STL file (ASCII or binary): x = R (scale x_file) + translate,
/// then moved by `motion` (a closed-form function of time).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Mesh")]
pub struct MeshSpec {
    /// The STL file, relative to the scene file.
    pub file: String,
    pub material: String,
    /// Factor on the file's coordinates (default 1; e.g. 0.001 for a file in mm).
    #[serde(default = "one_f64")]
    pub scale: f64,
    /// Shift after scaling and rotating [m] (default none).
    #[serde(default = "zero3")]
    pub translate: Vec3,
    /// Rotation (axis, angle in radians) about the origin after scaling (default none).
    #[serde(default)]
    pub rotate: Option<(Vec3, f64)>,
    /// Prescribed motion (default `Fixed`).
    #[serde(default)]
    pub motion: MotionSpec,
}

fn one_f64() -> f64 {
    1.0
}

/// Prescribed motion of a mesh from its scene position at t = 0.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub enum MotionSpec {
    #[default]
    Fixed,
    /// Constant velocity [m/s].
    Translate { velocity: Vec3 },
    /// Rotation about the axis through `point` along `axis` at `omega` [rad/s], right-handed.
    Rotate { point: Vec3, axis: Vec3, omega: f64 },
    /// x₀ + amplitude (sin(2π frequency t + phase) − sin phase); frequency [Hz], phase [rad].
    Oscillate {
        amplitude: Vec3,
        frequency: f64,
        #[serde(default)]
        phase: f64,
    },
    /// Piecewise-linear displacement [m] through (time [s], displacement) points, times
    /// strictly increasing; held at the first point before it and at the last after it.
    Table { points: Vec<(f64, Vec3)> },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum SphereSpec {
    /// One sphere.
    Sphere(OneSphere),
    /// Cubic lattice, i fastest then j then k; each sphere draws 4 uniforms u1..u4 from the
    /// MMIX LCG (the construction of `gen_settle.py`): r = radius (1 + p (2u1 − 1)),
    /// centre = origin + ((i + ½) s, (j + ½) s, (k + ½) s) + jitter (2u2−1, 2u3−1, 2u4−1).
    Lattice(LatticeSpec),
    /// Random loose fill of a box, no overlaps (random sequential addition).
    RandomFill(RandomFillSpec),
    /// Dense random packing of equal spheres in a box or a cylinder (`gen::dense_pack`).
    DensePack(DensePackSpec),
    /// Text file, one sphere per line: `x y z r`; `#` starts a comment.
    TextFile(TextFileSpec),
    /// LAMMPS data file, `atom_style sphere` (Atoms: id type diameter density x y z [ix iy iz]).
    LammpsData(LammpsDataSpec),
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OneSphere {
    pub pos: Vec3,
    /// Radius [m]; or `diameter` (exactly one of them).
    #[serde(default = "unset")]
    pub radius: f64,
    #[serde(default)]
    pub diameter: Option<f64>,
    pub material: String,
    #[serde(default = "zero3")]
    pub vel: Vec3,
    #[serde(default = "zero3")]
    pub angvel: Vec3,
    /// Blocked DOFs, a subset of "xyzXYZ" (lower case translation, upper case rotation).
    #[serde(default)]
    pub blocked: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatticeSpec {
    pub material: String,
    #[serde(default = "zero3")]
    pub origin: Vec3,
    pub spacing: f64,
    pub counts: [u64; 3],
    /// Radius [m] (mean, with `polydispersity`); or `diameter`.
    #[serde(default = "unset")]
    pub radius: f64,
    #[serde(default)]
    pub diameter: Option<f64>,
    /// Relative half-width p of the uniform radius distribution (default 0).
    #[serde(default)]
    pub polydispersity: f64,
    /// Jitter amplitude [m] (default 0).
    #[serde(default)]
    pub jitter: f64,
    #[serde(default = "default_lattice_seed")]
    pub seed: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomFillSpec {
    pub material: String,
    pub lo: Vec3,
    pub hi: Vec3,
    pub count: u64,
    /// Radius [m] (mean, with `polydispersity`); or `diameter`.
    #[serde(default = "unset")]
    pub radius: f64,
    #[serde(default)]
    pub diameter: Option<f64>,
    #[serde(default)]
    pub polydispersity: f64,
    #[serde(default = "default_one")]
    pub seed: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum PackShape {
    /// Axis-aligned box.
    Box { lo: Vec3, hi: Vec3 },
    /// Cylinder along z: base centre, radius, height.
    Cylinder {
        base: Vec3,
        radius: f64,
        height: f64,
    },
}

fn default_porosity() -> f64 {
    0.38
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DensePackSpec {
    pub material: String,
    pub shape: PackShape,
    /// Sphere radius [m]; or `diameter`.
    #[serde(default = "unset")]
    pub radius: f64,
    #[serde(default)]
    pub diameter: Option<f64>,
    /// Target porosity (default 0.38): the sphere count is (1 − n) V / (4/3 π r³).
    #[serde(default = "default_porosity")]
    pub porosity: f64,
    #[serde(default = "default_one")]
    pub seed: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextFileSpec {
    /// Path, relative to the scene file's directory.
    pub path: String,
    pub material: String,
    /// The 4th column holds diameters (`x y z d`) instead of radii (default false: `x y z r`,
    /// Yade's `ymport.text`).
    #[serde(default)]
    pub diameters: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LammpsDataSpec {
    pub path: String,
    /// Material of each atom type (type 1 first).
    pub materials: Vec<String>,
    /// Atom types whose particles are frozen (all DOFs blocked), e.g. a rough bottom layer.
    #[serde(default)]
    pub fixed_types: Vec<u32>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum TimeStepSpec {
    Fixed(f64),
    PWave(f64),
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum RunSpec {
    Steps(u64),
    Time(f64),
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Domain")]
pub struct DomainSpec {
    pub lo: Vec3,
    pub hi: Vec3,
    #[serde(default)]
    pub periodic: [bool; 3],
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Output")]
pub struct OutputSpec {
    /// Write a row of `series.csv` every this many steps (0 = never).
    #[serde(default = "default_series")]
    pub series_every: u64,
    /// Write a snapshot every this many steps (0 = only the final one).
    #[serde(default)]
    pub snapshot_every: u64,
    /// Every snapshot also holds the contact network (group `contacts`: per contact the two
    /// bodies, point, normal, forces, overlap, damage, sliding; `io::contacts`), shown by the
    /// XDMF as lines between the centres (default false).
    #[serde(default)]
    pub contacts: bool,
    /// Seconds between progress lines on stderr.
    #[serde(default = "default_progress")]
    pub progress_s: f64,
    /// The region `series.csv`'s contact-network columns (coordination, fabric, sliding
    /// fraction) are taken in (default: everywhere): the particles whose centre, and the
    /// contacts whose contact point, lie in it.
    #[serde(default)]
    pub analysis_region: Option<RegionSpec>,
}

fn default_series() -> u64 {
    100
}
fn default_progress() -> f64 {
    2.0
}

impl Default for OutputSpec {
    fn default() -> Self {
        OutputSpec {
            series_every: default_series(),
            snapshot_every: 0,
            contacts: false,
            progress_s: default_progress(),
            analysis_region: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Checkpoint")]
pub struct CheckpointSpec {
    /// Write a checkpoint every this many steps (0 = not by step count).
    #[serde(default)]
    pub every: u64,
    /// Write a checkpoint every this many wall-clock seconds (0 = not by time).
    #[serde(default)]
    pub wall_seconds: f64,
    /// How many checkpoints to keep (older ones are deleted; at least 1).
    #[serde(default = "default_keep")]
    pub keep: u32,
    /// Directory under the output directory.
    #[serde(default = "default_ckpt_dir")]
    pub dir: String,
    /// Write one when the run reaches its last step.
    #[serde(default = "default_true")]
    pub at_end: bool,
}

fn default_keep() -> u32 {
    2
}
fn default_ckpt_dir() -> String {
    "checkpoints".into()
}
fn default_true() -> bool {
    true
}

impl Default for CheckpointSpec {
    fn default() -> Self {
        CheckpointSpec {
            every: 0,
            wall_seconds: 0.0,
            keep: default_keep(),
            dir: default_ckpt_dir(),
            at_end: true,
        }
    }
}
