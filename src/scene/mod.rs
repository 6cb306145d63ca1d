//! Scene files: RON schema ([`schema`]), validation with `file:line:col: field: message` errors
//! ([`locate`]), and construction of the initial state from generators ([`gen`]).
//! Everything is checked before anything is written (exit code 2 on bad input).

pub mod ctx;
pub mod gen;
pub mod locate;
mod meshes;
pub mod pack;
pub mod schema;
pub mod source;

use crate::contact::Wall;
use crate::domain::comm::Comm;
use crate::domain::Domain;
use crate::engines::{self, cell::CellEngine, servo_wall::ServoWalls};
use crate::error::{Error, Result};
use crate::material::{LawMaterial, Material};
use crate::particles::{Particle, Particles};
use crate::V3;
use ctx::Ctx;
use locate::Locations;
use schema::*;
use source::{Source, SourceLoc, Summary};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A validated scene, ready to run on one rank.
#[derive(Clone, Debug)]
pub struct Scene {
    pub name: String,
    pub file: PathBuf,
    /// The scene text (stored in checkpoints).
    pub text: String,
    pub materials: Vec<Material>,
    /// Walls of the (replicated) scene.
    pub walls: Vec<Wall>,
    /// Triangle meshes (every rank holds them all).
    pub meshes: Vec<crate::mesh::Mesh>,
    /// The sphere generators of the base block, each with its first gid and its place in the
    /// file. The scene holds no spheres: [`Scene::generate`] makes a rank's own.
    pub sources: Arc<Vec<Placed>>,
    /// The spheres of the base block and of the whole scene (all tiles).
    pub base: Summary,
    pub summary: Summary,
    /// Copies of the base block along x, y, z (tile-major gids).
    pub replicate: [u64; 3],
    /// Shift from one tile to the next: the edge lengths of the base domain.
    pub tile: V3,
    pub gravity: V3,
    pub damping: f64,
    /// Rolling and twisting resistance of the frictional contacts (default off).
    pub rolling: crate::material::Rolling,
    /// Gravity is damped with the contact forces (Yade `dampGravity`).
    pub damp_gravity: bool,
    pub dt: f64,
    pub skin: f64,
    /// Step number at which the run stops.
    pub steps: u64,
    pub domain: Domain,
    pub output: OutputSpec,
    pub checkpoint: CheckpointSpec,
    pub reproducible: bool,
    /// CPM interaction radius R_I when the materials are CPM (thesis eq. 2.23), else `None`.
    pub interaction_radius: Option<f64>,
    /// Uniaxial strain controller.
    pub strainer: Option<StrainerSpec>,
    /// Particle sources and sinks (outlets), fresh (no particle removed yet).
    pub flow: Vec<crate::engines::FlowEngine>,
    /// Load balancing of the ranks.
    pub balance: BalanceSpec,
    /// The deforming periodic cell (issue 23), if any.
    pub cell: Option<crate::engines::cell::CellEngine>,
    /// Stress-controlled box walls, if any.
    pub servo_walls: Option<crate::engines::servo_wall::ServoWalls>,
    /// Energy tracking (`energy: true`).
    pub energy: bool,
    /// `output.analysis_region`, validated.
    pub analysis_region: Option<crate::engines::region::Region>,
    /// The scene's other engines (force engines, ...), validated, each with its field path
    /// (`forces[0]`); the simulation runs them after the built-in ones.
    pub engines: Vec<(String, crate::engines::Engine)>,
    /// The protocol (`stages`; `engines/protocol.rs`), kept apart from `engines`: a restart
    /// may append stages (the engine's checkpoint state says which have begun).
    pub protocol: Option<crate::engines::protocol::Protocol>,
}

fn parse_blocked(s: &str) -> std::result::Result<u8, String> {
    let mut b = 0u8;
    for ch in s.chars() {
        b |= match ch {
            'x' => 1,
            'y' => 2,
            'z' => 4,
            'X' => 8,
            'Y' => 16,
            'Z' => 32,
            _ => return Err(format!("`{ch}` is not one of xyzXYZ")),
        };
    }
    Ok(b)
}

/// Largest scene file read (it is read whole, and scanned into a few times its size): scenes
/// are a few kB; sphere lists belong in data files, which are streamed.
pub const MAX_SCENE_BYTES: u64 = 16 << 20;

/// An error at the start of `file` (what is wrong is the file as a whole).
fn file_err(file: &Path, msg: impl std::fmt::Display) -> Error {
    Error::Scene {
        file: file.display().to_string(),
        line: 1,
        col: 1,
        msg: msg.to_string(),
    }
}

/// Refuse anything but a regular file before opening it: opening a FIFO blocks until a
/// writer comes, reading a device may never end.
pub(crate) fn regular_file(path: &Path) -> Result<std::fs::Metadata> {
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::Input(format!("{}: cannot read: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(file_err(
            path,
            "not a regular file (a directory, FIFO, socket or device): refusing to read it",
        ));
    }
    Ok(meta)
}

/// Line and column (1-based, in characters) just after `text`.
pub(crate) fn end_position(text: &str) -> (usize, usize) {
    let line = 1 + text.bytes().filter(|&b| b == b'\n').count();
    let last = text.rfind('\n').map_or(text, |k| &text[k + 1..]);
    (line, 1 + last.chars().count())
}

/// The text of a scene file: UTF-8, without a leading byte-order mark; an invalid byte is
/// reported at its line and column.
fn decode(bytes: &[u8], file: &Path) -> Result<String> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(t) => Ok(t.to_string()),
        Err(e) => {
            let ok = &bytes[..e.valid_up_to()];
            // the prefix is valid UTF-8 by definition of `valid_up_to`
            let (line, col) = end_position(std::str::from_utf8(ok).unwrap_or(""));
            Err(Error::Scene {
                file: file.display().to_string(),
                line,
                col,
                msg: format!(
                    "invalid UTF-8 (byte 0x{:02x}): scene files are UTF-8 text",
                    bytes[e.valid_up_to()]
                ),
            })
        }
    }
}

impl Scene {
    /// Read and validate a scene file.
    pub fn load(path: &Path) -> Result<Scene> {
        use std::io::Read;
        let meta = regular_file(path)?;
        if meta.len() > MAX_SCENE_BYTES {
            return Err(file_err(path, too_big(meta.len())));
        }
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_SCENE_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| Error::Input(format!("{}: cannot read scene: {e}", path.display())))?;
        let text = decode(&bytes, path)?;
        Scene::parse(&text, path)
    }

    /// Validate scene text; `file` names it in errors and anchors relative data paths.
    pub fn parse(text: &str, file: &Path) -> Result<Scene> {
        if text.len() as u64 > MAX_SCENE_BYTES {
            return Err(file_err(file, too_big(text.len() as u64)));
        }
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let locs = Locations::scan(text);
        let at = |(line, col): (usize, usize), msg: String| Error::Scene {
            file: file.display().to_string(),
            line,
            col,
            msg,
        };
        if let Some(pos) = locs.too_deep {
            let msg = format!("brackets nested more than {} deep", locate::MAX_DEPTH);
            return Err(at(pos, msg));
        }
        let sf: SceneFile = ron_options()
            .from_str(text)
            .map_err(|e| syntax_error(&locs, e, &at))?;
        let ctx = Ctx { file, locs };
        build(&ctx, sf, text)
    }
}

fn too_big(len: u64) -> String {
    format!(
        "scene file of {len} bytes: larger than the {MAX_SCENE_BYTES} bytes a scene may have \
         (put long sphere lists in a TextFile or LammpsData file)"
    )
}

/// A parse error of ron, placed and named: a missing field is named with its struct (ron
/// reports it at the struct's end), a repeated field at the repeat, an unclosed comment at
/// its opening.
fn syntax_error(
    locs: &Locations,
    e: ron::error::SpannedError,
    at: &dyn Fn((usize, usize), String) -> Error,
) -> Error {
    use ron::error::Error as E;
    let pos = (e.position.line, e.position.col);
    if let Some(open) = locs.unclosed_comment {
        return at(open, "block comment `/*` is never closed".into());
    }
    match &e.code {
        E::MissingStructField { field, .. } => {
            let outer = locs.enclosing(pos.0, pos.1).unwrap_or("");
            let msg = match outer {
                "" => format!("Scene: missing field `{field}`"),
                o => format!("{o}: missing field `{field}`"),
            };
            at(locs.find(outer), msg)
        }
        E::DuplicateStructField { field, .. } => {
            let outer = locs.enclosing(pos.0, pos.1);
            match locs.duplicate(outer, field, pos.0, pos.1) {
                Some((path, p)) => at(p, format!("{path}: field given twice")),
                None => at(pos, format!("field `{field}` given twice")),
            }
        }
        // RON wants a name (an enum variant) here and found a bare word: for a number (`dt:
        // 1e-5`) it suggested a raw identifier `r#1e-5`, which is never what a scene needs
        E::SuggestRawIdentifier(word) | E::InvalidIdentifier(word) => {
            let path = locs.path_at(pos.0, pos.1);
            let msg = match (path, word.parse::<f64>().is_ok()) {
                (Some("dt"), true) => format!(
                    "dt: `{word}` is a bare number: write `dt: Fixed({word})` (seconds) or \
                     `dt: PWave(0.5)` (a fraction of the p-wave critical step)"
                ),
                (p, true) => format!(
                    "{}`{word}` is a bare number where a name is expected (an enum variant, \
                     such as `Fixed({word})`; docs/scene-format.md)",
                    p.map(|p| format!("{p}: ")).unwrap_or_default()
                ),
                (p, false) => format!(
                    "{}`{word}` is not a name this field takes (docs/scene-format.md)",
                    p.map(|p| format!("{p}: ")).unwrap_or_default()
                ),
            };
            at(pos, msg)
        }
        code => {
            let msg = match locs.path_at(pos.0, pos.1) {
                Some(p) => format!("{p}: {code}"),
                None => code.to_string(),
            };
            at(pos, msg)
        }
    }
}

fn build(ctx: &Ctx, mut sf: SceneFile, text: &str) -> Result<Scene> {
    let materials = build_materials(ctx, &sf.materials)?;
    resolve_sizes(ctx, &mut sf.spheres)?;
    let mut walls = build_walls(ctx, &sf.walls, &materials)?;
    let given_domain = sf
        .domain
        .as_ref()
        .map(|d| domain_spec(ctx, d))
        .transpose()?;
    let (sources, mut base, bad) =
        build_spheres(ctx, &sf.spheres, &materials, &walls, &given_domain)?;
    // a scene that starts empty (a LIGGGHTS pour) is sized by its inlets
    let mut empty_skin = None;
    if base.n == 0 {
        let (summary, r_mean) = empty_scene(ctx, &sf, &materials, given_domain.is_some())?;
        base = summary;
        empty_skin = Some(0.2 * r_mean);
    }
    let gravity = ctx.finite3("gravity", sf.gravity)?;
    if !(0.0..1.0).contains(&sf.damping) {
        return Err(ctx.err("damping", format!("must be in [0, 1), got {}", sf.damping)));
    }
    let dt = time_step(ctx, &sf.dt, base.pwave)?;
    warn_rayleigh(ctx, dt, &materials, base.rmin);
    let skin = match sf.skin {
        Some(s) => check_skin(ctx, ctx.positive("skin", s)?, base.rmax)?,
        None => empty_skin.unwrap_or_else(|| 0.2 * base.mean_radius()),
    };
    let steps = run_steps(ctx, &sf.run, dt)?;
    let explicit = given_domain.is_some();
    let meshes = meshes::build_meshes(
        ctx,
        &sf.meshes,
        &materials,
        2.0 * (base.rmax + skin),
        &base,
        dt,
    )?;
    if !meshes.is_empty() && sf.replicate != [1, 1, 1] {
        return Err(ctx.err("replicate", "not with meshes (they are not copied)"));
    }
    let mut domain = given_domain.unwrap_or_else(|| {
        let swept: Vec<_> = meshes
            .iter()
            .map(|m| meshes::swept_box(m, steps as f64 * dt))
            .collect();
        default_domain(&base, &walls, &swept)
    });
    if let Some(b) = bad {
        return Err(b.error(ctx));
    }
    for (k, m) in meshes.iter().enumerate() {
        let swept = meshes::swept_box(m, steps as f64 * dt);
        meshes::warn_outside(ctx, k, swept, (domain.lo, domain.hi), base.rmax);
    }
    let tile = domain.size();
    let mut summary = replicate(ctx, sf.replicate, explicit, &mut domain, &mut walls, &base)?;
    let flow = engines::flow::from_specs(ctx, &sf, &materials, &mut summary, &domain, dt)?;
    check_extent(ctx, &domain, &summary, explicit)?;
    // CPM: the halo reaches (R_I − 1)·2 r_max further (as the simulation's, sim.rs)
    let reach_extra = match (&sf.cpm, materials.iter().any(|m| m.cpm().is_some())) {
        (_, false) => 0.0,
        (c, true) => (c.clone().unwrap_or_default().interaction_radius - 1.0).max(0.0),
    } * 2.0
        * summary.rmax;
    domain
        .check_halo(2.0 * summary.rmax + skin + reach_extra)
        .map_err(|e| ctx.err("domain", e))?;
    if sf.output.progress_s < 0.0 || sf.output.progress_s.is_nan() {
        return Err(ctx.err("output.progress_s", "must be ≥ 0"));
    }
    check_checkpoint(ctx, &sf.checkpoint)?;
    let analysis_region = match &sf.output.analysis_region {
        Some(r) => Some(crate::engines::region::Region::from_spec(
            ctx,
            "output.analysis_region",
            r,
        )?),
        None => None,
    };
    let laws: Vec<_> = materials.iter().filter_map(|m| m.frict_law()).collect();
    if laws.iter().any(|&l| l != laws[0]) {
        return Err(ctx.err(
            "materials",
            "Frict, Hertz and Hooke materials cannot be mixed in one scene (one contact law per \
             scene)",
        ));
    }
    let n_cpm = materials.iter().filter(|m| m.cpm().is_some()).count();
    let rolling = match &sf.rolling {
        None => crate::material::Rolling::default(),
        Some(r) => {
            if n_cpm > 0 {
                return Err(ctx.err("rolling", "only for scenes with frictional materials"));
            }
            ctx.non_negative("rolling.mu_r", r.mu_r)?;
            ctx.non_negative("rolling.mu_t", r.mu_t)?;
            use crate::contact::law::rolling::RollModel;
            let model = match r.model {
                RollModelSpec::Cdt => RollModel::ConstantTorque,
                RollModelSpec::Epsd2 => RollModel::Epsd2,
                RollModelSpec::Epsd => RollModel::Epsd,
            };
            let eta_r = match (r.eta_r, model) {
                (None, _) => 0.0,
                (Some(eta), RollModel::Epsd) => ctx.non_negative("rolling.eta_r", eta)?,
                (Some(_), _) => {
                    return Err(ctx.err(
                        "rolling.eta_r",
                        "the rolling dashpot belongs to `model: Epsd` (LIGGGHTS epsd)",
                    ))
                }
            };
            crate::material::Rolling {
                mu_r: r.mu_r,
                mu_t: r.mu_t,
                model,
                eta_r,
            }
        }
    };
    let interaction_radius = if n_cpm > 0 {
        if n_cpm != materials.len() {
            return Err(ctx.err(
                "materials",
                "CPM materials cannot be mixed with other materials in one scene",
            ));
        }
        if !walls.is_empty() {
            return Err(ctx.err("walls", "CPM scenes have no walls (use the strainer)"));
        }
        if !meshes.is_empty() {
            return Err(ctx.err("meshes", "CPM scenes have no meshes (use the strainer)"));
        }
        let ri = sf.cpm.clone().unwrap_or_default().interaction_radius;
        if !(1.0..=3.0).contains(&ri) {
            return Err(ctx.err("cpm.interaction_radius", "must be in [1, 3]"));
        }
        Some(ri)
    } else {
        if sf.cpm.is_some() {
            return Err(ctx.err("cpm", "only for scenes with Cpm materials"));
        }
        None
    };
    let strainer = match &sf.strainer {
        Some(st) => Some(engines::strainer::resolve_spec(ctx, st, &sf, &summary)?),
        None => None,
    };
    let t = sf.balance.threshold;
    if !(t.is_finite() && (1.0..=100.0).contains(&t)) {
        return Err(ctx.err(
            "balance.threshold",
            format!("must be in [1, 100] (max over average cost per rank), got {t}"),
        ));
    }
    let cpm = interaction_radius.is_some();
    let cell = match &sf.cell {
        Some(c) => Some(CellEngine::from_spec(ctx, c, &sf, &domain, cpm)?),
        None => None,
    };
    let servo_walls = match &sf.servo_walls {
        Some(sv) => Some(ServoWalls::from_spec(
            ctx,
            sv,
            &walls,
            &domain,
            cell.is_some(),
        )?),
        None => None,
    };
    if sf.energy {
        engines::energy::check_spec(ctx, &materials, &cell)?;
    }
    let servo = |k: usize| servo_walls.as_ref().is_some_and(|s| s.slot(k).is_some());
    let protocol = engines::protocol::Protocol::from_spec(ctx, &sf.stages, &walls, &servo)?;
    let name = scene_name(ctx, &sf.name)?;
    // the engines of their own files, each from its spec
    let mut engines: Vec<(String, crate::engines::Engine)> = Vec::new();
    for (k, f) in sf.forces.iter().enumerate() {
        let p = format!("forces[{k}]");
        let e = crate::engines::force::ForceEngine::from_spec(ctx, &p, f)?;
        engines.push((p, e.into()));
    }
    Ok(Scene {
        name,
        file: ctx.file.to_path_buf(),
        text: text.to_string(),
        materials,
        walls,
        meshes,
        sources: Arc::new(sources),
        base,
        summary,
        replicate: sf.replicate,
        tile,
        gravity,
        damping: sf.damping,
        rolling,
        damp_gravity: sf.damp_gravity,
        dt,
        skin,
        steps,
        domain,
        output: sf.output,
        checkpoint: sf.checkpoint,
        reproducible: sf.reproducible,
        interaction_radius,
        strainer,
        flow,
        balance: sf.balance,
        cell,
        servo_walls,
        energy: sf.energy,
        analysis_region,
        engines,
        protocol,
    })
}

impl Scene {
    /// The number of inlets (each owns a gid range after the initial particles').
    pub fn n_inlets(&self) -> u64 {
        let inlet =
            |e: &&crate::engines::FlowEngine| matches!(e, crate::engines::FlowEngine::Inlet(_));
        self.flow.iter().filter(inlet).count() as u64
    }

    /// The box whose open axes the ranks cut into subdomains (`Simulation::new`): the initial
    /// centres' box (wrapped into the cell), grown to hold every inlet's region and the box
    /// each mesh sweeps during the run, clipped to the domain — where particles will be.
    /// With the initial centres alone, a scene whose spheres come from an inlet (one sphere
    /// in a corner) had a box of zero width, and every 3-rank grid was refused as thinner
    /// than the halo (issue 32).
    pub fn decomposition_box(&self) -> (V3, V3) {
        let (mut lo, mut hi) = (self.summary.lo, self.summary.hi);
        let t_end = self.steps as f64 * self.dt;
        let inlets = self.flow.iter().filter_map(|e| match e {
            crate::engines::FlowEngine::Inlet(i) => Some((i.lo, i.hi)),
            _ => None,
        });
        let meshes = self.meshes.iter().map(|m| meshes::swept_box(m, t_end));
        for (a, b) in inlets.chain(meshes) {
            lo = lo.inf(&a);
            hi = hi.sup(&b);
        }
        let d = &self.domain;
        for a in 0..3 {
            // (nothing placed at all leaves the empty box +∞..−∞)
            if lo[a] <= hi[a] {
                lo[a] = lo[a].clamp(d.lo[a], d.hi[a]);
                hi[a] = hi[a].clamp(d.lo[a], d.hi[a]);
            }
        }
        (lo, hi)
    }
}

/// The summary of a scene without spheres, from its inlets (the spheres to come): radius
/// bounds (halo, placement checks), the p-wave step of each inlet's smallest sphere, and the
/// box of the inlets' regions in place of the centres' (the decomposition of the open axes);
/// with the mean of the inlets' smallest and largest radii (the default skin's 0.2 ×).
/// Refused without an inlet (nothing would ever move) or without a `domain` (the default
/// domain is the spheres' box).
fn empty_scene(
    ctx: &Ctx,
    sf: &SceneFile,
    materials: &[Material],
    explicit_domain: bool,
) -> Result<(Summary, f64)> {
    if sf.inlets.is_empty() {
        return Err(ctx.err(
            "spheres",
            "the scene has no spheres and no inlet to bring any",
        ));
    }
    if !explicit_domain {
        return Err(ctx.err(
            "spheres",
            "a scene that starts without spheres needs a `domain` (the default domain is the \
             spheres' bounding box)",
        ));
    }
    let mut sum = Summary::default();
    let mut r_mean = 0.0;
    for (k, s) in sf.inlets.iter().enumerate() {
        let p = format!("inlets[{k}]");
        let m = ctx.material(&format!("{p}.material"), &s.material, materials)?;
        let psd = crate::engines::inlet::Psd::from_spec(ctx, &p, s)?;
        let (rmin, rmax) = (0.5 * psd.min(), 0.5 * psd.max());
        sum.rmin = sum.rmin.min(rmin);
        sum.rmax = sum.rmax.max(rmax);
        sum.pwave = sum.pwave.min(materials[m as usize].pwave_step(rmin));
        r_mean += 0.5 * (rmin + rmax) / sf.inlets.len() as f64;
        // the region's box (validated with the inlet, later)
        let (lo, hi) = match &s.region {
            RegionSpec::Box { lo, hi } => (V3::from(*lo), V3::from(*hi)),
            RegionSpec::Cylinder { a, b, radius } => {
                let (a, b, r) = (V3::from(*a), V3::from(*b), V3::repeat(radius.abs()));
                (a.inf(&b) - r, a.sup(&b) + r)
            }
            RegionSpec::HalfSpace { .. } => continue,
        };
        for (l, h) in [
            (&mut sum.lo, &mut sum.hi),
            (&mut sum.raw_lo, &mut sum.raw_hi),
        ] {
            *l = l.inf(&lo);
            *h = h.sup(&hi);
        }
        sum.ext_lo = sum.ext_lo.inf(&lo);
        sum.ext_hi = sum.ext_hi.sup(&hi);
    }
    Ok((sum, r_mean))
}

fn check_checkpoint(ctx: &Ctx, c: &CheckpointSpec) -> Result<()> {
    ctx.non_negative("checkpoint.wall_seconds", c.wall_seconds)?;
    if c.keep == 0 {
        return Err(ctx.err("checkpoint.keep", "must be at least 1"));
    }
    let dir = Path::new(&c.dir);
    if c.dir.is_empty() || dir.is_absolute() || dir.components().any(|p| p.as_os_str() == "..") {
        return Err(ctx.err(
            "checkpoint.dir",
            "must be a relative directory inside the output directory",
        ));
    }
    Ok(())
}

/// Fixed Δt below this fraction of the p-wave critical step is refused: surely a unit mistake
/// (a run of a million times more steps than needed).
const MIN_DT_FRACTION: f64 = 1e-6;

/// Most steps a run may have: 10¹² steps at 1 µs each (a tiny scene) are 11 days. A run
/// length from `Time(t)` beyond it comes from a Δt in the wrong unit or a `t` of 1e300; the
/// step counter would saturate.
pub const MAX_STEPS: u64 = 1_000_000_000_000;

/// Largest skin, in largest radii. Every pair closer than the skin is a candidate, so the
/// candidate list grows with skin³ (skin 1e10 m: all pairs, gigabytes); a skin of a few
/// tenths of a radius is usual (Verlet lists, thesis §2.1.3.2).
const MAX_SKIN_RADII: f64 = 10.0;

/// Largest extent of the domain, in smallest radii: the cell grids are sized from it, and
/// beyond it a domain is a typo (an infinite or absurd box).
pub const MAX_EXTENT_RADII: f64 = 1e9;

/// Hertz–Mindlin scenes: warn when Δt exceeds 0.2 of the Rayleigh time
/// T_R = π r √(ρ/G) / (0.1631 ν + 0.8766), G = E / (2 (1 + ν)), of the smallest sphere in the
/// softest Hertz material (laws-and-flows digest §1; LIGGGHTS warns likewise). `PWave` steps
/// are ~0.18 T_R and never warn.
fn warn_rayleigh(ctx: &Ctx, dt: f64, materials: &[Material], rmin: f64) {
    let t_r = materials
        .iter()
        .filter_map(|m| m.rayleigh_time(rmin))
        .fold(f64::INFINITY, f64::min);
    if dt > 0.2 * t_r {
        log::warn!(
            "{}: dt {dt:.3e} s exceeds 0.2 of the Rayleigh time {t_r:.3e} s of the smallest Hertz \
             sphere: the contacts may be under-resolved (use a smaller step or PWave)",
            ctx.file.display()
        );
    }
}

/// The time step: `Fixed` within sane bounds of the p-wave critical step Δt_cr = min r
/// sqrt(ρ/E) (thesis §2.5.6 eq. 2.85–2.86), or a fraction of it.
fn time_step(ctx: &Ctx, spec: &TimeStepSpec, pwave: f64) -> Result<f64> {
    match *spec {
        TimeStepSpec::Fixed(dt) => {
            let dt = ctx.positive("dt", dt)?;
            if dt < MIN_DT_FRACTION * pwave {
                return Err(ctx.err(
                    "dt",
                    format!(
                        "{dt:e} s is less than {MIN_DT_FRACTION:e} × the p-wave critical step \
                         {pwave:e} s: a unit mistake?"
                    ),
                ));
            }
            if dt > pwave {
                log::warn!(
                    "{}: dt {dt:.3e} s exceeds the p-wave critical step {pwave:.3e} s: the run \
                     may blow up (use PWave(safety) or a smaller step)",
                    ctx.file.display()
                );
            }
            Ok(dt)
        }
        TimeStepSpec::PWave(s) => {
            if !(s > 0.0 && s <= 1.0) {
                return Err(ctx.err(
                    "dt",
                    format!("p-wave safety factor must be in (0, 1], got {s}"),
                ));
            }
            let dt = s * pwave;
            if !dt.is_normal() {
                return Err(ctx.err(
                    "dt",
                    format!(
                        "the p-wave step {s} × min r sqrt(ρ/E) = {dt:e} s is not a positive \
                         normal number: check radii, densities and Young's moduli"
                    ),
                ));
            }
            Ok(dt)
        }
    }
}

fn check_skin(ctx: &Ctx, skin: f64, rmax: f64) -> Result<f64> {
    if skin > MAX_SKIN_RADII * rmax {
        return Err(ctx.err(
            "skin",
            format!(
                "{skin:e} m is more than {MAX_SKIN_RADII} × the largest radius {rmax:e} m: \
                 the candidate pairs grow with skin³"
            ),
        ));
    }
    Ok(skin)
}

/// The step at which the run stops, at most [`MAX_STEPS`].
fn run_steps(ctx: &Ctx, run: &RunSpec, dt: f64) -> Result<u64> {
    let steps = match *run {
        RunSpec::Steps(n) if n > 0 => n as f64,
        RunSpec::Time(t) if t > 0.0 && t.is_finite() => (t / dt).ceil(),
        _ => {
            return Err(ctx.err(
                "run",
                "must be a positive number of steps or a positive time",
            ))
        }
    };
    if steps > MAX_STEPS as f64 {
        return Err(ctx.err(
            "run",
            format!("{steps:e} steps of {dt:e} s: more than the {MAX_STEPS:e} a run may have"),
        ));
    }
    Ok(steps as u64)
}

/// The domain must be finite and at most [`MAX_EXTENT_RADII`] smallest radii wide; no sphere
/// may be larger than it.
fn check_extent(ctx: &Ctx, d: &Domain, s: &Summary, explicit: bool) -> Result<()> {
    let path = if explicit { "domain" } else { "spheres" };
    let what = if explicit {
        "the domain"
    } else {
        "the default domain (the spheres' and walls' bounding box, enlarged)"
    };
    let size = d.size();
    for a in 0..3 {
        let ax = ["x", "y", "z"][a];
        if !(size[a].is_finite() && size[a] / s.rmin <= MAX_EXTENT_RADII) {
            return Err(ctx.err(
                path,
                format!(
                    "{what} spans {:e} m along {ax}: more than {MAX_EXTENT_RADII:e} × the \
                     smallest radius {:e} m",
                    size[a], s.rmin
                ),
            ));
        }
        if 2.0 * s.rmax > size[a] {
            return Err(ctx.err(
                "spheres",
                format!(
                    "a sphere of radius {:e} m is larger than {what} ({:e} m along {ax})",
                    s.rmax, size[a]
                ),
            ));
        }
    }
    Ok(())
}

/// The scene's name names the output directory: a plain file name.
fn scene_name(ctx: &Ctx, given: &Option<String>) -> Result<String> {
    let name = given.clone().unwrap_or_else(|| {
        ctx.file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scene".into())
    });
    let bad = if name.is_empty() {
        Some("must not be empty")
    } else if name == "." || name == ".." {
        Some("must not be `.` or `..`")
    } else if name.contains(['/', '\\']) {
        Some("must not contain `/` or `\\`")
    } else if name.chars().any(char::is_control) {
        Some("must not contain control characters")
    } else if name.len() > 255 {
        Some("must be at most 255 bytes long")
    } else {
        None
    };
    match (bad, given) {
        (None, _) => Ok(name),
        (Some(why), Some(_)) => Err(ctx.err(
            "name",
            format!("{why}: the name is the output directory's (a plain file name)"),
        )),
        (Some(why), None) => Err(ctx.err(
            "name",
            format!(
                "the scene's name (the file name `{}`) {why}: give `name: \"...\"`",
                name.escape_debug()
            ),
        )),
    }
}

/// The top-level fields in which two scenes differ, apart from those a restart may change
/// (name, run length, outputs, checkpoints): empty = compatible for a restart.
pub fn restart_incompatibilities(stored: &Scene, given: &Scene) -> Vec<&'static str> {
    fn ron_of<T: serde::Serialize>(x: &T) -> String {
        ron::to_string(x).unwrap_or_default()
    }
    let parse = |t: &str| ron_options().from_str::<SceneFile>(t).ok();
    let (Some(a), Some(b)) = (parse(&stored.text), parse(&given.text)) else {
        return vec!["(scene text)"];
    };
    let same = [
        // resolved, so that a Yade alias or a default written out is no change
        ("materials", stored.materials == given.materials),
        ("walls", ron_of(&a.walls) == ron_of(&b.walls)),
        ("meshes", ron_of(&a.meshes) == ron_of(&b.meshes)),
        ("spheres", ron_of(&a.spheres) == ron_of(&b.spheres)),
        ("gravity", a.gravity == b.gravity),
        ("damping", a.damping == b.damping),
        ("damp_gravity", a.damp_gravity == b.damp_gravity),
        ("dt", ron_of(&a.dt) == ron_of(&b.dt)),
        ("skin", a.skin == b.skin),
        ("domain", ron_of(&a.domain) == ron_of(&b.domain)),
        ("replicate", a.replicate == b.replicate),
        ("reproducible", a.reproducible == b.reproducible),
        ("cpm", ron_of(&a.cpm) == ron_of(&b.cpm)),
        ("strainer", ron_of(&a.strainer) == ron_of(&b.strainer)),
        ("outlets", ron_of(&a.outlets) == ron_of(&b.outlets)),
        ("inlets", ron_of(&a.inlets) == ron_of(&b.inlets)),
        (
            "engines",
            format!("{:?}", stored.engines) == format!("{:?}", given.engines),
        ),
    ];
    same.iter().filter(|(_, s)| !s).map(|(n, _)| *n).collect()
}

fn ron_options() -> ron::Options {
    // ron's parser recurses per bracket too: the same limit as the scanner (which refuses
    // deeper documents first), explicit rather than ron's default.
    ron::Options::default()
        .with_recursion_limit(locate::MAX_DEPTH)
        .with_default_extension(
            ron::extensions::Extensions::IMPLICIT_SOME
                | ron::extensions::Extensions::UNWRAP_VARIANT_NEWTYPES,
        )
}

/// Most materials (and LAMMPS atom types) a scene may list: the contact parameters of every
/// pair of materials are tabulated (`MixTable`, n² entries), and names are compared pairwise.
pub const MAX_MATERIALS: usize = 256;

/// Most walls: every sphere is tested against every wall, and walls against each other.
pub const MAX_WALLS: usize = 256;

/// A material's name (`p`: its path, `materials[k]`): not empty, not one of `out`'s.
fn check_material_name(ctx: &Ctx, p: &str, name: &str, out: &[Material]) -> Result<()> {
    if name.is_empty() {
        return Err(ctx.err(&format!("{p}.name"), "must not be empty"));
    }
    if out.iter().any(|o| o.name() == name) {
        return Err(ctx.err(
            &format!("{p}.name"),
            format!("material `{name}` defined twice"),
        ));
    }
    Ok(())
}

fn build_materials(ctx: &Ctx, specs: &[MaterialSpec]) -> Result<Vec<Material>> {
    if specs.is_empty() {
        return Err(ctx.err("materials", "at least one material is needed"));
    }
    if specs.len() > MAX_MATERIALS {
        return Err(ctx.err(
            "materials",
            format!("{} materials: at most {MAX_MATERIALS}", specs.len()),
        ));
    }
    let mut out: Vec<Material> = Vec::new();
    for (k, m) in specs.iter().enumerate() {
        let p = format!("materials[{k}]");
        // each law validates its own material (`contact/law/<law>/material.rs`)
        let mat = match m {
            MaterialSpec::Frict(s) => Material::Frict(law_material(ctx, &p, s, &out)?),
            MaterialSpec::Cpm(s) => Material::Cpm(law_material(ctx, &p, s, &out)?),
            MaterialSpec::Hertz(s) => Material::Hertz(law_material(ctx, &p, s, &out)?),
            MaterialSpec::Hooke(s) => Material::Hooke(law_material(ctx, &p, s, &out)?),
        };
        out.push(mat);
    }
    Ok(out)
}

/// Material `p` (`materials[k]`) of law `M` after the scene's earlier materials `out`: its
/// name checked, then validated by its law ([`LawMaterial::from_spec`]) against the first
/// earlier material of that law.
fn law_material<M: LawMaterial>(ctx: &Ctx, p: &str, spec: &M::Spec, out: &[Material]) -> Result<M> {
    check_material_name(ctx, p, M::spec_name(spec), out)?;
    M::from_spec(ctx, p, spec, out.iter().find_map(Material::as_law))
}

fn build_walls(ctx: &Ctx, specs: &[WallSpec], mats: &[Material]) -> Result<Vec<Wall>> {
    if specs.len() > MAX_WALLS {
        return Err(ctx.err(
            "walls",
            format!("{} walls: at most {MAX_WALLS}", specs.len()),
        ));
    }
    let mut out: Vec<Wall> = Vec::new();
    for (k, w) in specs.iter().enumerate() {
        let wall = Wall::from_spec(ctx, &format!("walls[{k}]"), w, mats, &out)?;
        out.push(wall);
    }
    Ok(out)
}

/// A generator with its first gid and its place in the scene file.
pub type Placed = (Source, u64, SourceLoc);

/// Most spheres one scene may hold: local indices are `u32`.
pub(crate) const MAX_SPHERES: u64 = u32::MAX as u64 / 2;

/// The first sphere found in a wrong place by the parse-time walk (reported after the other
/// checks of the scene, where the single-process code made this check).
struct Misplaced {
    /// What lies there: `sphere gid G at [..]`, or a generated source's possible centre.
    what: String,
    /// The wall it lies behind, or `None`: outside the domain.
    wall: Option<usize>,
}

impl Misplaced {
    fn error(&self, ctx: &Ctx) -> Error {
        match self.wall {
            Some(k) => ctx.err(
                &format!("walls[{k}]"),
                format!("{} lies behind this wall", self.what),
            ),
            None => ctx.err("domain", format!("{} lies outside the domain", self.what)),
        }
    }
}

/// How far outside a periodic cell a sphere may be generated, in cell lengths: it is wrapped
/// into the cell one cell length at a time (a sphere at 1e300 m would take forever), and
/// further out it is surely a typo.
const MAX_WRAPS: f64 = 64.0;

/// The parse-time walk over every sphere: summary and placement checks, nothing kept.
struct Scan<'a> {
    sum: Summary,
    walls: &'a [Wall],
    domain: &'a Option<Domain>,
    bad: Option<Misplaced>,
    /// The first sphere whose numbers are absurd (reported with its generator at once).
    absurd: Option<String>,
}

impl Scan<'_> {
    fn visit(&mut self, mats: &[Material], p: &Particle) {
        if self.absurd.is_some() {
            return;
        }
        if let Some(why) = self.absurd(p) {
            self.absurd = Some(why);
            return;
        }
        let mut w = p.pos;
        if let Some(d) = self.domain {
            d.wrap_one(&mut w, &mut [0; 3]);
        }
        self.sum.add(p, &w, mats);
        if self.bad.is_none() {
            self.bad = self.misplaced(p);
        }
    }

    /// Non-finite state, a radius whose mass or moment of inertia is not a normal positive
    /// number (1e300 m: r⁵ overflows; 1e-300 m: underflows), or a centre far outside the
    /// periodic cell.
    fn absurd(&self, p: &Particle) -> Option<String> {
        let g = p.gid;
        let finite = |v: &V3| v.iter().all(|c| c.is_finite());
        if !(finite(&p.pos) && finite(&p.vel) && finite(&p.angvel)) {
            return Some(format!(
                "sphere gid {g}: position {:?}, velocity {:?}, angular velocity {:?} must be finite",
                p.pos.as_slice(),
                p.vel.as_slice(),
                p.angvel.as_slice()
            ));
        }
        if !(p.radius.is_finite() && p.mass.is_normal() && p.inertia.is_normal()) {
            return Some(format!(
                "sphere gid {g}: absurd radius {:e} m (mass {:e} kg, moment of inertia {:e} \
                 kg m²: not positive normal numbers)",
                p.radius, p.mass, p.inertia
            ));
        }
        let d = self.domain.as_ref()?;
        let l = d.size();
        (0..3)
            .find(|&a| {
                d.periodic[a]
                    && (p.pos[a] < d.lo[a] - MAX_WRAPS * l[a]
                        || p.pos[a] > d.hi[a] + MAX_WRAPS * l[a])
            })
            .map(|a| {
                format!(
                    "sphere gid {g} at {:?} lies more than {MAX_WRAPS} cell lengths outside the \
                     periodic cell along {}",
                    p.pos.as_slice(),
                    ["x", "y", "z"][a]
                )
            })
    }

    fn misplaced(&self, p: &Particle) -> Option<Misplaced> {
        let what = || format!("sphere gid {} at {:?}", p.gid, p.pos.as_slice());
        self.misplaced_at(&p.pos, what)
    }

    /// A centre at `x` behind a wall or outside the given domain (non-periodic axes).
    fn misplaced_at(&self, x: &V3, what: impl Fn() -> String) -> Option<Misplaced> {
        let behind = self.walls.iter().position(|w| w.gap(*x, 0.0) < 0.0);
        let outside = self.domain.as_ref().is_some_and(|d| {
            (0..3).any(|a| !d.periodic[a] && !(d.lo[a]..=d.hi[a]).contains(&x[a]))
        });
        (behind.is_some() || outside).then(|| Misplaced {
            what: what(),
            wall: behind,
        })
    }

    /// A generated source, from its [`source::Region`] (nothing generated): the radii at both
    /// bounds must be sane, and the box of its possible centres must lie in front of every
    /// wall and inside the domain — checked at the box's corners (walls are planes, the
    /// domain a box), so a fill whose box reaches behind a wall is refused even where no
    /// sphere happens to lie.
    fn visit_region(&mut self, mats: &[Material], g: &source::Region, first: u64, path: &str) {
        if self.absurd.is_some() {
            return;
        }
        let rho = mats[g.material as usize].density();
        let (clo, chi) = g.centres;
        for r in [g.rmin, g.rmax] {
            for x in [clo, chi] {
                let p = Particle::sphere(first, x, r, rho, g.material);
                if let Some(why) = self.absurd(&p) {
                    self.absurd = Some(why);
                    return;
                }
            }
        }
        let mut wrapped = (clo, chi);
        if let Some(d) = self.domain {
            let l = d.size();
            for a in (0..3).filter(|&a| d.periodic[a]) {
                let (mut x0, mut x1) = (clo, chi);
                d.wrap_one(&mut x0, &mut [0; 3]);
                d.wrap_one(&mut x1, &mut [0; 3]);
                // a box that crosses the cell's boundary covers the whole cell once wrapped
                let (a0, a1) = match x0[a] <= x1[a] && chi[a] - clo[a] < l[a] {
                    true => (x0[a], x1[a]),
                    false => (d.lo[a], d.hi[a]),
                };
                wrapped.0[a] = a0;
                wrapped.1[a] = a1;
            }
        }
        self.sum.add_region(g, wrapped, mats);
        if self.bad.is_none() {
            for c in 0..8 {
                let x = V3::from_fn(|a, _| if c >> a & 1 == 0 { clo[a] } else { chi[a] });
                let what = || {
                    format!(
                        "{path}: a sphere centre may lie at {:?} (a corner of the box of its \
                         centres)",
                        x.as_slice()
                    )
                };
                if let Some(m) = self.misplaced_at(&x, what) {
                    self.bad = Some(m);
                    break;
                }
            }
        }
    }
}

/// Validate the generators and walk them once (the [`Summary`], placement checks against
/// the walls and the given domain). Nothing is kept: O(1) memory for lattices and files;
/// random fills and dense packings are not generated (their [`source::Region`]).
fn build_spheres(
    ctx: &Ctx,
    specs: &[SphereSpec],
    mats: &[Material],
    walls: &[Wall],
    domain: &Option<Domain>,
) -> Result<(Vec<Placed>, Summary, Option<Misplaced>)> {
    let mut scan = Scan {
        sum: Summary::default(),
        walls,
        domain,
        bad: None,
        absurd: None,
    };
    let mut out = Vec::with_capacity(specs.len());
    let mut none = Vec::new();
    let mut tick = gen::Ticker::new(
        format!("checking the spheres of {}", ctx.file.display()),
        None,
    );
    for (k, s) in specs.iter().enumerate() {
        let p = format!("spheres[{k}]");
        let offset = scan.sum.n;
        let src = source(ctx, &p, s, mats, offset)?;
        let (line, col) = ctx.locs.find(&p);
        let loc = SourceLoc {
            file: ctx.file.display().to_string(),
            line,
            col,
            path: p,
        };
        let n = match src.region() {
            Some(g) => {
                scan.visit_region(mats, &g, offset, &loc.path);
                g.n
            }
            None => {
                let visit = &mut |q: &mut Particle| {
                    scan.visit(mats, q);
                    false
                };
                let all = &|_: &V3, _: &V3| true;
                src.walk(offset, mats, &loc, &mut none, visit, &mut tick, all, None)?
            }
        };
        if let Some(why) = scan.absurd.take() {
            return Err(loc.err(why));
        }
        if offset + n > MAX_SPHERES {
            return Err(loc.err(format!(
                "too many spheres (at most {MAX_SPHERES} per scene)"
            )));
        }
        out.push((src, offset, loc));
    }
    Ok((out, scan.sum, scan.bad))
}

/// Every generator's size as a radius: each takes `radius` or `diameter` [m] (exactly one,
/// positive and finite; errors at the name written), and a diameter becomes its half (exact).
fn resolve_sizes(ctx: &Ctx, specs: &mut [SphereSpec]) -> Result<()> {
    for (k, s) in specs.iter_mut().enumerate() {
        let p = format!("spheres[{k}]");
        let (r, d) = match s {
            SphereSpec::Sphere(o) => (&mut o.radius, o.diameter),
            SphereSpec::Lattice(l) => (&mut l.radius, l.diameter),
            SphereSpec::RandomFill(f) => (&mut f.radius, f.diameter),
            SphereSpec::DensePack(d) => (&mut d.radius, d.diameter),
            SphereSpec::TextFile(_) | SphereSpec::LammpsData(_) => continue,
        };
        // `radius` defaults to NaN when not written (schema::unset)
        let given = ctx.locs.has(&format!("{p}.radius")) || !r.is_nan();
        *r = match (given, d) {
            (true, Some(_)) => {
                return Err(ctx.err(
                    &format!("{p}.diameter"),
                    "give either `radius` or `diameter`, not both",
                ))
            }
            (false, None) => {
                return Err(ctx.err(&p, "missing the size: `radius` or `diameter` [m]"))
            }
            (true, None) => ctx.positive(&format!("{p}.radius"), *r)?,
            (false, Some(d)) => 0.5 * ctx.positive(&format!("{p}.diameter"), d)?,
        };
    }
    Ok(())
}

/// Validate one generator (`p` = `spheres[k]`, `offset` = its first gid).
fn source(ctx: &Ctx, p: &str, s: &SphereSpec, mats: &[Material], offset: u64) -> Result<Source> {
    let too_many = |field: &str| {
        ctx.err(
            &format!("{p}.{field}"),
            format!("too many spheres (at most {MAX_SPHERES} per scene)"),
        )
    };
    Ok(match s {
        SphereSpec::Sphere(o) => {
            let m = ctx.material(&format!("{p}.material"), &o.material, mats)?;
            let r = ctx.positive(&format!("{p}.radius"), o.radius)?;
            let pos = ctx.finite3(&format!("{p}.pos"), o.pos)?;
            let mut q = Particle::sphere(offset, pos, r, mats[m as usize].density(), m);
            q.vel = ctx.finite3(&format!("{p}.vel"), o.vel)?;
            q.angvel = ctx.finite3(&format!("{p}.angvel"), o.angvel)?;
            q.blocked =
                parse_blocked(&o.blocked).map_err(|e| ctx.err(&format!("{p}.blocked"), e))?;
            Source::One(Box::new(q))
        }
        SphereSpec::Lattice(l) => {
            let m = ctx.material(&format!("{p}.material"), &l.material, mats)?;
            ctx.positive(&format!("{p}.radius"), l.radius)?;
            ctx.positive(&format!("{p}.spacing"), l.spacing)?;
            ctx.finite3(&format!("{p}.origin"), l.origin)?;
            ctx.non_negative(&format!("{p}.jitter"), l.jitter)?;
            if !(0.0..1.0).contains(&l.polydispersity) {
                return Err(ctx.err(&format!("{p}.polydispersity"), "must be in [0, 1)"));
            }
            if l.counts.contains(&0) {
                return Err(ctx.err(&format!("{p}.counts"), "all counts must be ≥ 1"));
            }
            match gen::lattice_count(l) {
                Some(n) if n + offset <= MAX_SPHERES => {}
                _ => return Err(too_many("counts")),
            }
            let rmax = l.radius * (1.0 + l.polydispersity);
            if l.spacing - 2.0 * l.jitter < 2.0 * rmax {
                return Err(ctx.err(
                    &format!("{p}.spacing"),
                    format!(
                        "spheres may overlap: spacing − 2·jitter < 2·max radius ({})",
                        2.0 * rmax
                    ),
                ));
            }
            Source::Lattice(l.clone(), m)
        }
        SphereSpec::RandomFill(f) => {
            let m = ctx.material(&format!("{p}.material"), &f.material, mats)?;
            ctx.positive(&format!("{p}.radius"), f.radius)?;
            if f.count + offset > MAX_SPHERES {
                return Err(too_many("count"));
            }
            if !(0.0..1.0).contains(&f.polydispersity) {
                return Err(ctx.err(&format!("{p}.polydispersity"), "must be in [0, 1)"));
            }
            let lo = ctx.finite3(&format!("{p}.lo"), f.lo)?;
            let hi = ctx.finite3(&format!("{p}.hi"), f.hi)?;
            if (0..3).any(|a| hi[a] <= lo[a]) {
                return Err(ctx.err(&format!("{p}.hi"), "must exceed lo on every axis"));
            }
            gen::check_random_fill(f).map_err(|e| ctx.err(&format!("{p}.count"), e))?;
            Source::RandomFill(f.clone(), m)
        }
        SphereSpec::DensePack(d) => {
            let m = ctx.material(&format!("{p}.material"), &d.material, mats)?;
            ctx.positive(&format!("{p}.radius"), d.radius)?;
            if !(0.3..0.9).contains(&d.porosity) {
                return Err(ctx.err(&format!("{p}.porosity"), "must be in [0.3, 0.9)"));
            }
            check_pack_shape(ctx, p, &d.shape)?;
            let n = gen::dense_pack_count(d).map_err(|e| ctx.err(p, e))?;
            if n + offset > MAX_SPHERES {
                let size = if d.diameter.is_some() {
                    "diameter"
                } else {
                    "radius"
                };
                return Err(too_many(size));
            }
            Source::DensePack(d.clone(), m)
        }
        SphereSpec::TextFile(t) => {
            let m = ctx.material(&format!("{p}.material"), &t.material, mats)?;
            Source::Text(
                ctx.data_path(&format!("{p}.path"), &t.path)?,
                m,
                t.diameters,
            )
        }
        SphereSpec::LammpsData(d) => lammps_source(ctx, p, d, mats)?,
    })
}

/// A packing's shape: finite numbers, positive cylinder radius and height.
fn check_pack_shape(ctx: &Ctx, p: &str, shape: &PackShape) -> Result<()> {
    match shape {
        PackShape::Box { lo, hi } => {
            ctx.finite3(&format!("{p}.shape.lo"), *lo)?;
            ctx.finite3(&format!("{p}.shape.hi"), *hi)?;
        }
        PackShape::Cylinder {
            base,
            radius,
            height,
        } => {
            ctx.finite3(&format!("{p}.shape.base"), *base)?;
            ctx.positive(&format!("{p}.shape.radius"), *radius)?;
            ctx.positive(&format!("{p}.shape.height"), *height)?;
        }
    }
    Ok(())
}

fn lammps_source(ctx: &Ctx, p: &str, d: &LammpsDataSpec, mats: &[Material]) -> Result<Source> {
    let path = ctx.data_path(&format!("{p}.path"), &d.path)?;
    if d.materials.is_empty() || d.materials.len() > MAX_MATERIALS {
        return Err(ctx.err(
            &format!("{p}.materials"),
            format!("give one material per atom type (1 to {MAX_MATERIALS} types)"),
        ));
    }
    if d.fixed_types.len() > d.materials.len() {
        return Err(ctx.err(
            &format!("{p}.fixed_types"),
            "lists more types than there are atom types",
        ));
    }
    for (t, &ty) in d.fixed_types.iter().enumerate() {
        if ty == 0 || ty as usize > d.materials.len() {
            return Err(ctx.err(
                &format!("{p}.fixed_types[{t}]"),
                format!(
                    "atom type {ty} is not one of the {} types listed in materials",
                    d.materials.len()
                ),
            ));
        }
    }
    let mut idx = Vec::new();
    for (t, name) in d.materials.iter().enumerate() {
        idx.push(ctx.material(&format!("{p}.materials[{t}]"), name, mats)?);
    }
    Ok(Source::Lammps(path, d.clone(), idx))
}

impl Scene {
    /// Number of tiles (copies of the base block).
    pub fn n_tiles(&self) -> u64 {
        self.replicate.iter().product()
    }

    /// Shift of tile `t` (x fastest, then y, then z) from the base block.
    pub fn tile_shift(&self, t: u64) -> V3 {
        let [nx, ny, _] = self.replicate;
        let c = [t % nx, (t / nx) % ny, t / (nx * ny)];
        V3::from_fn(|a, _| c[a] as f64 * self.tile[a])
    }

    /// Create the spheres that `keep` accepts: it sees each sphere at its place in the scene
    /// (tile shift applied) and may move it (wrap it into the periodic cell). Tiles whose
    /// centres' box `may_hold(lo, hi)` rejects are skipped without being generated, and so
    /// are the tiles of a random fill. Gids: tile t, base gid g → t · n_base + g, the same on
    /// every rank. `packs[k]`, when given, holds the spheres of the dense packing
    /// `sources[k]` this rank may need (`scene::pack::packs_for`; without it the packing is
    /// made here in full). Memory O(kept) (plus one tile of a random fill).
    pub fn generate(
        &self,
        may_hold: &dyn Fn(&V3, &V3) -> bool,
        keep: &mut dyn FnMut(&mut Particle) -> bool,
        packs: &[Option<pack::PackSpheres>],
    ) -> Result<Vec<Particle>> {
        let mut out = Vec::new();
        let what = format!("creating the spheres of {}", self.file.display());
        let mut tick = gen::Ticker::new(what, Some(self.summary.n));
        for t in 0..self.n_tiles() {
            let s = self.tile_shift(t);
            if !may_hold(&(self.base.raw_lo + s), &(self.base.raw_hi + s)) {
                tick.skip(self.base.n)?;
                continue;
            }
            let start = out.len();
            for (k, (src, first, loc)) in self.sources.iter().enumerate() {
                let visit = &mut |p: &mut Particle| {
                    if t > 0 {
                        p.pos += s; // tile 0 untouched: bit-identical to an unreplicated scene
                    }
                    keep(p)
                };
                let near = &|lo: &V3, hi: &V3| may_hold(&(lo + s), &(hi + s));
                let pack = packs.get(k).and_then(|p| p.as_deref());
                let m = &self.materials;
                src.walk(*first, m, loc, &mut out, visit, &mut tick, near, pack)?;
            }
            for p in &mut out[start..] {
                p.gid += t * self.base.n;
            }
        }
        Ok(out)
    }

    /// The generator that made sphere `gid` (for errors found after parsing).
    pub fn source_of(&self, gid: u64) -> &SourceLoc {
        let g = gid % self.base.n;
        let k = self.sources.partition_point(|s| s.1 <= g) - 1;
        &self.sources[k].2
    }
}

/// Refuse spheres with coincident centres (the contact normal is undefined) and warn about
/// initial overlaps deeper than 10 % of the smaller radius (they start with a large force),
/// naming the deepest pair (gids, overlap / smaller radius) and counting them.
/// Collective: `ps` holds this rank's spheres (owned) and, as ghosts, every other sphere within
/// 2 max radii of its subdomain; a pair is judged by the rank owning its lower gid, so each
/// pair counts once, and the verdicts (the smallest offending pair; the deepest overlap, ties
/// to the smallest pair) are agreed over all ranks.
///
/// CPM scenes get no overlap warning: every pair closer than R_I (r₁ + r₂) becomes a cohesive
/// link at the first step with its initial distance as equilibrium distance d₀ (thesis
/// eq. 2.21, §6.1.4; thesis-digest §3.1, §1.4), so an initial overlap carries no force (ε_N =
/// l/d₀ − 1 = 0, eq. 2.28). Dense packings (gen.rs `dense_pack`) keep residual overlaps by
/// design: `cpm_tension.ron` has one pair at 12 % of r, and a run of that packing without the
/// strainer stays at rest (kinetic energy 0 J after 500 steps), while the same packing with a
/// frictional material throws spheres out of the domain within 330 steps.
pub fn check_overlaps(scene: &Scene, ps: &Particles, comm: &Comm) -> Result<()> {
    let mut grid = crate::collide::CellGrid::default();
    let mut cands = Vec::new();
    let cell = crate::cell::Cell::boxed(V3::zeros(), V3::repeat(1.0));
    let mut watch = crate::signals::SetupWatch::new("the overlap check", None);
    watch.tick(0)?;
    crate::collide::sphere_candidates(ps, 0.0, &cell, &mut grid, &mut cands);
    let warn = scene.interaction_radius.is_none();
    let mut deep = 0u64;
    let mut first = (u64::MAX, u64::MAX);
    // (overlap / smaller radius, pair) of the deepest overlap over the warning's threshold
    let mut worst = (0.0f64, (u64::MAX, u64::MAX));
    for (k, c) in cands.iter().enumerate() {
        watch.tick(k as u64)?;
        // particle 1 (`c.i`) has the lower gid; a ghost there is another rank's to judge
        let (i, j) = (c.i as usize, c.j as usize);
        if i >= ps.n_owned {
            continue;
        }
        let (r1, r2) = (ps.radius[i], ps.radius[j]);
        let d = (ps.pos[j] - ps.pos[i]).norm();
        if d <= 1e-9 * (r1 + r2) {
            first = first.min(c.key);
        }
        let rel = (r1 + r2 - d) / r1.min(r2);
        if warn && rel > 0.1 {
            deep += 1;
            if rel > worst.0 || (rel == worst.0 && c.key < worst.1) {
                worst = (rel, c.key);
            }
        }
    }
    let g0 = comm.min_u64(first.0);
    let g1 = comm.min_u64(if first.0 == g0 { first.1 } else { u64::MAX });
    if g0 != u64::MAX {
        return Err(scene.source_of(g1).err(format!(
            "spheres gid {g0} and gid {g1} have the same centre"
        )));
    }
    let deep = comm.sum_u64(deep);
    if deep > 0 {
        let rel = comm.max_f64(worst.0);
        let mine = worst.0 == rel;
        let w0 = comm.min_u64(if mine { worst.1 .0 } else { u64::MAX });
        let w1 = comm.min_u64(if mine && worst.1 .0 == w0 {
            worst.1 .1
        } else {
            u64::MAX
        });
        if comm.is_root() {
            let (a, b) = (scene.source_of(w0), scene.source_of(w1));
            let from = match a.path == b.path {
                true => a.path.clone(),
                false => format!("{} and {}", a.path, b.path),
            };
            log::warn!(
                "{}: {deep} pair(s) of spheres overlap by more than 10 % of the smaller radius at \
                 the start (a large initial force); the deepest: gid {w0} and gid {w1} ({from}), \
                 by {:.1} % of the smaller radius",
                scene.file.display(),
                100.0 * rel
            );
        }
    }
    Ok(())
}

fn domain_spec(ctx: &Ctx, d: &DomainSpec) -> Result<Domain> {
    let lo = ctx.finite3("domain.lo", d.lo)?;
    let hi = ctx.finite3("domain.hi", d.hi)?;
    if (0..3).any(|a| hi[a] <= lo[a]) {
        return Err(ctx.err("domain.hi", "must exceed domain.lo on every axis"));
    }
    Ok(Domain::new(lo, hi, d.periodic))
}

/// Default: bounding box of spheres, wall points and the boxes meshes sweep, enlarged by
/// half its size (at least 10 max radii) on every side.
fn default_domain(s: &Summary, walls: &[Wall], meshes: &[(V3, V3)]) -> Domain {
    let (mut lo, mut hi) = (s.ext_lo, s.ext_hi);
    for w in walls {
        lo = lo.inf(&w.point);
        hi = hi.sup(&w.point);
    }
    for (a, b) in meshes {
        lo = lo.inf(a);
        hi = hi.sup(b);
    }
    let pad = ((hi - lo) * 0.5).sup(&V3::repeat(10.0 * s.rmax));
    Domain::new(lo - pad, hi + pad, [false; 3])
}

/// Tile the base block `rep` times (LAMMPS `replicate`): the domain (the tile) grows along each
/// replicated axis, periodic axes stay periodic with the larger cell. Walls are not copied
/// (docs/scene-format.md "Replication"): a wall parallel to a replicated axis (normal ⟂ axis)
/// spans every tile and stays; one across it with normal +axis (the low side) stays; one with
/// normal −axis (the far side) moves with the last tile; an oblique one would cut through the
/// copies: refused.
/// Returns the summary of the whole scene.
fn replicate(
    ctx: &Ctx,
    rep: [u64; 3],
    explicit: bool,
    domain: &mut Domain,
    walls: &mut [Wall],
    base: &Summary,
) -> Result<Summary> {
    if rep.contains(&0) {
        let [x, y, z] = rep;
        return Err(ctx.err(
            "replicate",
            format!("every count must be ≥ 1, got ({x}, {y}, {z})"),
        ));
    }
    if rep == [1, 1, 1] {
        return Ok(base.clone());
    }
    if !explicit {
        return Err(ctx.err(
            "replicate",
            "needs a `domain`: the domain box is the tile that is copied",
        ));
    }
    let tiles = rep.iter().try_fold(1u64, |a, &b| a.checked_mul(b));
    match tiles.and_then(|t| t.checked_mul(base.n)) {
        Some(n) if n <= MAX_SPHERES => {}
        _ => {
            return Err(ctx.err(
                "replicate",
                format!("too many spheres (at most {MAX_SPHERES} per scene)"),
            ))
        }
    }
    let size = domain.size();
    let span = V3::from_fn(|a, _| (rep[a] - 1) as f64 * size[a]);
    for (k, w) in walls.iter_mut().enumerate() {
        let Some(n) = w.plane_normal() else {
            return Err(ctx.err(
                &format!("walls[{k}]"),
                "with `replicate` the walls must be planes",
            ));
        };
        for a in (0..3).filter(|&a| rep[a] > 1) {
            let c = n[a];
            if c < -1.0 + 1e-12 {
                w.point[a] += span[a];
            } else if c.abs() > 1e-12 && c < 1.0 - 1e-12 {
                return Err(ctx.err(
                    &format!("walls[{k}]"),
                    format!(
                        "oblique to the replicated axis {}: the copies of the block would cut \
                         through it (with `replicate`, walls must be perpendicular or parallel \
                         to every replicated axis)",
                        ["x", "y", "z"][a]
                    ),
                ));
            }
        }
    }
    let mut hi = domain.hi;
    for a in (0..3).filter(|&a| rep[a] > 1) {
        hi[a] = domain.lo[a] + rep[a] as f64 * size[a];
    }
    domain.set_box(domain.lo, hi);
    Ok(base.tiled(tiles.unwrap_or(1), &span))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scene(extra: &str) -> Result<Scene> {
        let text = format!(
            r#"Scene(
    materials: [Frict(name: "g", young: 1e7, friction_angle: 0.5, density: 2600.0)],
    walls: [
        Wall(point: (0.0, 0.0, 0.0), normal: (0.0, 0.0, 1.0), material: "g"),
        Wall(point: (0.0, 0.0, 0.0), normal: (1.0, 0.0, 0.0), material: "g"),
        Wall(point: (2.0, 0.0, 0.0), normal: (-1.0, 0.0, 0.0), material: "g"),
    ],
    spheres: [Lattice(material: "g", spacing: 1.0, counts: (2, 2, 2), radius: 0.3,
                      polydispersity: 0.1, jitter: 0.05)],
    dt: Fixed(1e-5), run: Steps(1),
    domain: Domain(lo: (0.0, 0.0, 0.0), hi: (2.0, 2.0, 2.0), periodic: (false, true, false)),
    {extra}
)"#
        );
        Scene::parse(&text, Path::new("t.ron"))
    }

    fn all(s: &Scene) -> Vec<Particle> {
        s.generate(&|_, _| true, &mut |_| true, &[]).unwrap()
    }

    /// Replication (3, 1, 2) of a 2×2×2 lattice in a 2 m tile: 8 · 6 spheres, gid = tile · 8 +
    /// base gid (tiles x fastest), each copy the base sphere shifted by (ix, iy, iz) · 2 m
    /// exactly (shifts are multiples of 2: exact in binary, so the test compares bits).
    #[test]
    fn replicated_lattice_counts_gids_and_positions() {
        let base = scene("").unwrap();
        let rep = scene("replicate: (3, 1, 2),").unwrap();
        let (b, r) = (all(&base), all(&rep));
        assert_eq!((b.len(), r.len()), (8, 48));
        assert_eq!(rep.summary.n, 48);
        assert!(r.iter().enumerate().all(|(k, p)| p.gid == k as u64));
        for p in &r {
            let (t, g) = (p.gid / 8, (p.gid % 8) as usize);
            let shift = V3::new((t % 3) as f64 * 2.0, 0.0, (t / 3) as f64 * 2.0);
            assert_eq!(p.pos, b[g].pos + shift, "gid {}", p.gid);
            assert_eq!(p.radius.to_bits(), b[g].radius.to_bits());
        }
        assert_eq!(rep.domain.hi, V3::new(6.0, 2.0, 4.0));
        assert_eq!(rep.summary.hi, base.summary.hi + V3::new(4.0, 0.0, 2.0));
        assert_eq!(rep.summary.rmax, base.summary.rmax);
        // walls: the floor and the x = 0 wall stay, the far x wall moves to x = 6
        assert_eq!(rep.walls[0].point, V3::zeros());
        assert_eq!(rep.walls[1].point, V3::zeros());
        assert_eq!(rep.walls[2].point, V3::new(6.0, 0.0, 0.0));
        assert!(restart_incompatibilities(&base, &rep).contains(&"replicate"));
    }

    /// Restart compatibility compares the resolved CPM materials (issue 20): Yade aliases and
    /// defaults written out are no change; another value is.
    #[test]
    fn restart_compares_resolved_cpm_materials() {
        let cpm = |params: &str| {
            let t = format!(
                r#"Scene(materials: [Cpm(name: "c", params: ({params}))],
                spheres: [Sphere(pos: (0.0, 0.0, 0.0), radius: 0.01, material: "c"),
                          Sphere(pos: (0.02, 0.0, 0.0), radius: 0.01, material: "c")],
                dt: PWave(0.5), run: Steps(1))"#
            );
            Scene::parse(&t, Path::new("c.ron")).unwrap_or_else(|e| panic!("{e}"))
        };
        let a = cpm("cohesion: 3e6, eps_cracking: 1e-4, rel_ductility: 30");
        let b = cpm("sigmaT: 3e6, epsCrackOnset: 1e-4, relDuctility: 30, poisson: 0.25");
        let c = cpm("sigmaT: 3e6, epsCrackOnset: 1e-4, relDuctility: 20");
        assert!(!restart_incompatibilities(&a, &b).contains(&"materials"));
        assert!(restart_incompatibilities(&a, &c).contains(&"materials"));
    }

    /// The default replicate (1, 1, 1) is the scene itself: same summary bits.
    #[test]
    fn unit_replicate_is_the_identity() {
        let a = scene("").unwrap();
        let b = scene("replicate: (1, 1, 1),").unwrap();
        assert_eq!(a.domain, b.domain);
        assert_eq!(a.summary.rsum.to_bits(), b.summary.rsum.to_bits());
        assert_eq!(all(&a), all(&b));
    }

    #[test]
    fn bad_replicate_values_are_refused() {
        let e = scene("replicate: (1, 0, 1),").unwrap_err().to_string();
        assert!(
            e.contains("t.ron:12:") && e.contains("every count must be ≥ 1"),
            "{e}"
        );
        let e = scene("replicate: (100000, 100000, 100000),")
            .unwrap_err()
            .to_string();
        assert!(e.contains("replicate: too many spheres"), "{e}");
        let e = scene("replicate: (-1, 1, 1),").unwrap_err().to_string();
        assert!(e.contains("t.ron:12:"), "{e}");
    }

    /// A missing field is reported at its struct, named, even when the struct's last field is
    /// itself a tuple (ron reports it at the struct's closing bracket).
    #[test]
    fn missing_field_names_its_struct() {
        let text = "Scene(\n  materials: [Frict(name: \"g\", young: 1e7, friction_angle: 0.5, \
                    density: 2600.0)],\n  walls: [Wall(point: (0.0, 0.0, 0.0),\n    normal: (0.0, \
                    0.0, 1.0))],\n  dt: Fixed(1e-5), run: Steps(1))";
        let e = Scene::parse(text, Path::new("t.ron"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.ron:3:11: walls[0]: missing field `material`"),
            "{e}"
        );
    }

    /// A wall normal whose squared norm overflows is refused (it normalised to zero).
    #[test]
    fn huge_wall_normal() {
        let text = "Scene(\n  materials: [Frict(name: \"g\", young: 1e7, friction_angle: 0.5, \
                    density: 2600.0)],\n  walls: [Wall(point: (0.0, 0.0, 0.0), normal: (1e200, \
                    1e200, 0.0), material: \"g\")],\n  \
                    spheres: [Sphere(pos: (1.0, 1.0, 0.0), radius: 0.1, material: \"g\")],\n  \
                    dt: Fixed(1e-5), run: Steps(1))";
        let e = Scene::parse(text, Path::new("t.ron"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("t.ron:3:") && e.contains("walls[0].normal: too large"),
            "{e}"
        );
    }

    /// A missing top-level field is reported at `Scene(`, after the leading comments.
    #[test]
    fn missing_top_level_field() {
        let text = "// c\nScene(\n  materials: [Frict(name: \"g\", young: 1e7, friction_angle: \
                    0.5, density: 2600.0)],\n  run: Steps(1),\n)\n";
        let e = Scene::parse(text, Path::new("t.ron"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.ron:2:1: Scene: missing field `dt`"), "{e}");
    }

    /// Scene names are plain file names.
    #[test]
    fn scene_names() {
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a\\\\b",
            "a\u{1}b",
            "a\\nb",
            &"x".repeat(256),
        ] {
            let e = scene(&format!("name: \"{bad}\",")).unwrap_err().to_string();
            assert!(
                e.contains("t.ron:12:") && e.contains("name: must"),
                "{bad:?}: {e}"
            );
        }
        assert_eq!(scene("name: \"a.b-c_d\",").unwrap().name, "a.b-c_d");
    }

    /// A random fill generated per subdomain (only the tiles near it) gives each rank the
    /// spheres of the whole fill it owns, with the same gids and bits: the ranks of a 2×2×1
    /// grid partition the fill.
    #[test]
    fn random_fill_per_subdomain_partitions_the_fill() {
        let text = r#"Scene(
    materials: [Frict(name: "g", young: 1e7, friction_angle: 0.5, density: 2600.0)],
    spheres: [RandomFill(material: "g", lo: (0.0, 0.0, 0.0), hi: (4.0, 3.0, 2.0), count: 900,
                         radius: 0.05, polydispersity: 0.2, seed: 3)],
    dt: Fixed(1e-5), run: Steps(1),
)"#;
        let s = Scene::parse(text, Path::new("t.ron")).unwrap();
        let whole = all(&s);
        assert_eq!(whole.len(), 900);
        let (lo, hi) = (s.summary.lo, s.summary.hi);
        let mut mine = Vec::new();
        for c in [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]] {
            let d = &s.domain;
            let dec =
                crate::domain::decomp::Decomp::new([2, 2, 1], c, d.periodic, d.lo, d.hi, lo, hi);
            let own = &mut |p: &mut Particle| dec.owns(&p.pos);
            mine.extend(
                s.generate(&|a, b| dec.may_hold(a, b, 0.0), own, &[])
                    .unwrap(),
            );
        }
        mine.sort_by_key(|p| p.gid);
        assert_eq!(mine.len(), 900);
        for (a, b) in mine.iter().zip(&whole) {
            assert_eq!(
                (a.gid, a.pos, a.radius.to_bits()),
                (b.gid, b.pos, b.radius.to_bits())
            );
        }
    }

    /// Streaming set-up: the spheres kept by the ranks of a 2×2×1 grid partition the scene.
    #[test]
    fn owned_spheres_partition_the_scene() {
        let s = scene("replicate: (2, 2, 1),").unwrap();
        let (lo, hi) = (s.summary.lo, s.summary.hi);
        let mut gids = Vec::new();
        for c in [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]] {
            let d = &s.domain;
            let dec =
                crate::domain::decomp::Decomp::new([2, 2, 1], c, d.periodic, d.lo, d.hi, lo, hi);
            let mine = s
                .generate(
                    &|a, b| dec.may_hold(a, b, 0.0),
                    &mut |p| {
                        d.wrap_one(&mut p.pos, &mut p.wrap);
                        dec.owns(&p.pos)
                    },
                    &[],
                )
                .unwrap();
            assert!(!mine.is_empty());
            gids.extend(mine.iter().map(|p| p.gid));
        }
        gids.sort_unstable();
        assert_eq!(gids, (0..32).collect::<Vec<u64>>());
    }

    /// A scene of one material `mat` and one generator `sphere` (issue 32: the friction and
    /// size forms).
    fn scene_with(mat: &str, sphere: &str) -> Result<Scene> {
        let text = format!(
            "Scene(\n  materials: [{mat}],\n  spheres: [{sphere}],\n  dt: Fixed(1e-5), \
             run: Steps(1),\n  domain: Domain(lo: (-1.0, -1.0, -1.0), hi: (1.0, 1.0, 1.0)),\n)"
        );
        Scene::parse(&text, Path::new("t.ron"))
    }

    /// Every law takes its friction as an angle or a coefficient (Yade's, LIGGGHTS' and
    /// LAMMPS' names), used as written: a coefficient gives tan φ = μ exactly; sizes as radius
    /// or diameter; the errors point at the name written.
    #[test]
    fn friction_and_size_forms() {
        let one = "Sphere(pos: (0.0, 0.0, 0.0), radius: 0.1, material: \"g\")";
        let tan_phi = |mat: &str| {
            let s = scene_with(mat, one).unwrap_or_else(|e| panic!("{mat}: {e}"));
            let mix = crate::material::MixTable::new(&s.materials);
            mix.get(0, 0).phys(0.1, 0.1, 1.0).tan_phi
        };
        for mat in [
            "Frict(name: \"g\", young: 1e7, friction: 0.3, density: 2600.0)",
            "Frict(name: \"g\", youngsModulus: 1e7, coefficientFriction: 0.3, density: 2600.0)",
            "Hertz(name: \"g\", youngsModulus: 1e7, poissonsRatio: 0.3, coefficientFriction: 0.3, \
             coefficientRestitution: 0.9, density: 2600.0)",
            "Hooke(name: \"g\", kn: 1e5, gamman: 10.0, xmu: 0.3, density: 2600.0)",
            "Hooke(name: \"g\", kn: 1e5, gamma_n: 10.0, coefficientFriction: 0.3, density: 2600.0)",
        ] {
            assert_eq!(tan_phi(mat), 0.3, "{mat}");
        }
        for mat in [
            "Frict(name: \"g\", young: 1e7, frictionAngle: 0.3, density: 2600.0)",
            "Hertz(name: \"g\", young: 1e7, poisson: 0.3, friction_angle: 0.3, density: 2600.0)",
            "Hooke(name: \"g\", kn: 1e5, gamma_n: 10.0, friction_angle: 0.3, density: 2600.0)",
        ] {
            assert_eq!(tan_phi(mat), 0.3f64.tan(), "{mat}");
        }
        let frict = "Frict(name: \"g\", young: 1e7, friction_angle: 0.5, density: 2600.0)";
        for (sphere, r) in [
            (one, 0.1),
            (
                "Sphere(pos: (0.0, 0.0, 0.0), diameter: 0.3, material: \"g\")",
                0.15,
            ),
            (
                "Lattice(material: \"g\", spacing: 0.5, counts: (2, 1, 1), diameter: 0.2)",
                0.1,
            ),
        ] {
            let s = scene_with(frict, sphere).unwrap_or_else(|e| panic!("{sphere}: {e}"));
            assert!(all(&s).iter().all(|p| p.radius == r), "{sphere}");
        }
        // errors at the field as written (line 2 holds the material, line 3 the spheres)
        for (mat, sphere, want) in [
            (
                "Frict(name: \"g\", young: 1e7, friction_angle: 0.5, friction: 0.4, density: 1.0)",
                one,
                "t.ron:2:65: materials[0].friction: give either",
            ),
            (
                "Hertz(name: \"g\", young: 1e7, poisson: 0.3, coefficientFriction: -1.0, density: 1.0)",
                one,
                "t.ron:2:58: materials[0].coefficientFriction: the friction coefficient must be",
            ),
            (
                "Frict(name: \"g\", young: 1e7, frictionAngle: 30.0, density: 1.0)",
                one,
                "t.ron:2:44: materials[0].frictionAngle: must be in [0, π/2) radians",
            ),
            (
                "Frict(name: \"g\", young: 1e7, density: 1.0)",
                one,
                "materials[0]: missing the friction",
            ),
            (
                frict,
                "Sphere(pos: (0.0, 0.0, 0.0), radius: 0.1, diameter: 0.2, material: \"g\")",
                "t.ron:3:55: spheres[0].diameter: give either `radius` or `diameter`",
            ),
            (
                frict,
                "Sphere(pos: (0.0, 0.0, 0.0), diameter: -0.2, material: \"g\")",
                "t.ron:3:42: spheres[0].diameter: must be positive",
            ),
            (
                frict,
                "Sphere(pos: (0.0, 0.0, 0.0), material: \"g\")",
                "spheres[0]: missing the size",
            ),
        ] {
            let e = scene_with(mat, sphere).unwrap_err().to_string();
            assert!(e.contains(want), "{mat} {sphere}:\n{e}\nwanted {want}");
        }
    }

    /// An inlet's sizes as diameters (`psd`, `diameters`) or radii (`radii`): the same
    /// distribution of diameters.
    #[test]
    fn inlet_radii_are_half_diameters() {
        let psd = |sizes: &str| {
            let text = format!(
                "Scene(\n  materials: [Frict(name: \"g\", young: 1e7, friction: 0.5, \
                 density: 2600.0)],\n  spheres: [Sphere(pos: (0.05, 0.05, 0.05), radius: 0.01, \
                 material: \"g\")],\n  dt: Fixed(1e-5), run: Steps(1),\n  domain: \
                 Domain(lo: (0.0, 0.0, 0.0), hi: (1.0, 1.0, 1.0)),\n  inlets: [Inlet(name: \
                 \"a\", region: Box(lo: (0.1, 0.1, 0.1), hi: (0.9, 0.9, 0.9)), material: \"g\", \
                 {sizes}, rate: Fill(10))],\n)"
            );
            let s = Scene::parse(&text, Path::new("t.ron")).unwrap_or_else(|e| panic!("{e}"));
            match &s.flow[0] {
                crate::engines::FlowEngine::Inlet(i) => i.psd.clone(),
                _ => panic!("not an inlet"),
            }
        };
        let d = psd("psd: Normal(0.02, 0.002, 0.015, 0.025)");
        assert_eq!(psd("diameters: Normal(0.02, 0.002, 0.015, 0.025)"), d);
        assert_eq!(psd("radii: Normal(0.01, 0.001, 0.0075, 0.0125)"), d);
    }
}
