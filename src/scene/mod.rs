//! Scene files: RON schema ([`schema`]), validation with `file:line:col: field: message` errors
//! ([`locate`]), and construction of the initial state from generators ([`gen`]).
//! Everything is checked before anything is written (exit code 2 on bad input).

pub mod gen;
pub mod locate;
pub mod schema;

use crate::contact::Wall;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::material::{CpmNamed, FrictMat, Material};
use crate::particles::{Particle, Particles};
use crate::timestep;
use crate::V3;
use locate::Locations;
use schema::*;
use std::path::{Path, PathBuf};

/// A validated scene, ready to run on one rank.
#[derive(Clone, Debug)]
pub struct Scene {
    pub name: String,
    pub file: PathBuf,
    /// The scene text (stored in checkpoints).
    pub text: String,
    pub materials: Vec<Material>,
    pub walls: Vec<Wall>,
    pub particles: Particles,
    pub gravity: V3,
    pub damping: f64,
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
}

/// Parse context: turns a field path into a positioned error.
struct Ctx<'a> {
    file: &'a Path,
    locs: Locations,
}

impl Ctx<'_> {
    fn err(&self, path: &str, msg: impl std::fmt::Display) -> Error {
        let (line, col) = self.locs.find(path);
        Error::Scene {
            file: self.file.display().to_string(),
            line,
            col,
            msg: format!("{path}: {msg}"),
        }
    }
    fn positive(&self, path: &str, v: f64) -> Result<f64> {
        if v > 0.0 && v.is_finite() {
            Ok(v)
        } else {
            Err(self.err(path, format!("must be positive and finite, got {v}")))
        }
    }
    fn non_negative(&self, path: &str, v: f64) -> Result<f64> {
        if v >= 0.0 && v.is_finite() {
            Ok(v)
        } else {
            Err(self.err(path, format!("must be ≥ 0 and finite, got {v}")))
        }
    }
    fn finite3(&self, path: &str, v: Vec3) -> Result<V3> {
        if v.iter().all(|x| x.is_finite()) {
            Ok(V3::from(v))
        } else {
            Err(self.err(path, format!("components must be finite, got {v:?}")))
        }
    }
    fn material(&self, path: &str, name: &str, mats: &[Material]) -> Result<u16> {
        mats.iter()
            .position(|m| m.name() == name)
            .map(|k| k as u16)
            .ok_or_else(|| {
                let known: Vec<&str> = mats.iter().map(|m| m.name()).collect();
                self.err(
                    path,
                    format!("unknown material `{name}` (defined: {known:?})"),
                )
            })
    }
    fn data_path(&self, path: &str, rel: &str) -> Result<PathBuf> {
        let base = self.file.parent().unwrap_or(Path::new("."));
        let p = base.join(rel);
        if p.is_file() {
            Ok(p)
        } else {
            Err(self.err(path, format!("file `{}` not found", p.display())))
        }
    }
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

impl Scene {
    /// Read and validate a scene file.
    pub fn load(path: &Path) -> Result<Scene> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Input(format!("{}: cannot read scene: {e}", path.display())))?;
        Scene::parse(&text, path)
    }

    /// Validate scene text; `file` names it in errors and anchors relative data paths.
    pub fn parse(text: &str, file: &Path) -> Result<Scene> {
        let opts = ron_options();
        let locs = Locations::scan(text);
        let sf: SceneFile = opts.from_str(text).map_err(|e| {
            let (line, col) = (e.position.line, e.position.col);
            let msg = match locs.path_at(line, col) {
                Some(p) => format!("{p}: {}", e.code),
                None => e.code.to_string(),
            };
            Error::Scene {
                file: file.display().to_string(),
                line,
                col,
                msg,
            }
        })?;
        let ctx = Ctx { file, locs };
        build(&ctx, sf, text)
    }
}

fn build(ctx: &Ctx, sf: SceneFile, text: &str) -> Result<Scene> {
    let materials = build_materials(ctx, &sf.materials)?;
    let walls = build_walls(ctx, &sf.walls, &materials)?;
    let particles = build_spheres(ctx, &sf.spheres, &materials)?;
    if particles.n_owned == 0 {
        return Err(ctx.err("spheres", "the scene has no spheres"));
    }
    let gravity = ctx.finite3("gravity", sf.gravity)?;
    if !(0.0..1.0).contains(&sf.damping) {
        return Err(ctx.err("damping", format!("must be in [0, 1), got {}", sf.damping)));
    }
    let dt = match sf.dt {
        TimeStepSpec::Fixed(dt) => ctx.positive("dt", dt)?,
        TimeStepSpec::PWave(s) => {
            if !(s > 0.0 && s <= 1.0) {
                return Err(ctx.err(
                    "dt",
                    format!("p-wave safety factor must be in (0, 1], got {s}"),
                ));
            }
            s * timestep::pwave(&particles, &materials)
        }
    };
    let mean_r = particles.radius.iter().sum::<f64>() / particles.n_owned as f64;
    let skin = match sf.skin {
        Some(s) => ctx.positive("skin", s)?,
        None => 0.2 * mean_r,
    };
    let steps = match sf.run {
        RunSpec::Steps(n) if n > 0 => n,
        RunSpec::Time(t) if t > 0.0 && t.is_finite() => (t / dt).ceil() as u64,
        _ => {
            return Err(ctx.err(
                "run",
                "must be a positive number of steps or a positive time",
            ))
        }
    };
    let domain = build_domain(ctx, sf.domain.as_ref(), &particles, &walls)?;
    check_placement(ctx, &particles, &walls, &domain)?;
    let rmax = particles.radius.iter().cloned().fold(0.0, f64::max);
    domain
        .check_halo(2.0 * rmax + skin)
        .map_err(|e| ctx.err("domain", e))?;
    if sf.output.progress_s < 0.0 || sf.output.progress_s.is_nan() {
        return Err(ctx.err("output.progress_s", "must be ≥ 0"));
    }
    check_checkpoint(ctx, &sf.checkpoint)?;
    let n_cpm = materials.iter().filter(|m| m.cpm().is_some()).count();
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
    if let Some(st) = &sf.strainer {
        if st.axis > 2 {
            return Err(ctx.err("strainer.axis", "must be 0, 1 or 2"));
        }
        if !(st.strain_rate.is_finite() && st.strain_rate != 0.0) {
            return Err(ctx.err("strainer.strain_rate", "must be finite and non-zero"));
        }
        if let Some(s) = st.support {
            ctx.positive("strainer.support", s)?;
        }
        if let Some(a) = st.area {
            ctx.positive("strainer.area", a)?;
        }
        if !(0.0..1.0).contains(&st.stop_fraction) {
            return Err(ctx.err("strainer.stop_fraction", "must be in [0, 1)"));
        }
    }
    let name = sf.name.clone().unwrap_or_else(|| {
        ctx.file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scene".into())
    });
    if name.is_empty() || name.contains(['/', '\\']) {
        return Err(ctx.err("name", "must be a non-empty file name without slashes"));
    }
    Ok(Scene {
        name,
        file: ctx.file.to_path_buf(),
        text: text.to_string(),
        materials,
        walls,
        particles,
        gravity,
        damping: sf.damping,
        dt,
        skin,
        steps,
        domain,
        output: sf.output,
        checkpoint: sf.checkpoint,
        reproducible: sf.reproducible,
        interaction_radius,
        strainer: sf.strainer,
    })
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
        ("materials", ron_of(&a.materials) == ron_of(&b.materials)),
        ("walls", ron_of(&a.walls) == ron_of(&b.walls)),
        ("spheres", ron_of(&a.spheres) == ron_of(&b.spheres)),
        ("gravity", a.gravity == b.gravity),
        ("damping", a.damping == b.damping),
        ("dt", ron_of(&a.dt) == ron_of(&b.dt)),
        ("skin", a.skin == b.skin),
        ("domain", ron_of(&a.domain) == ron_of(&b.domain)),
        ("reproducible", a.reproducible == b.reproducible),
        ("cpm", ron_of(&a.cpm) == ron_of(&b.cpm)),
        ("strainer", ron_of(&a.strainer) == ron_of(&b.strainer)),
    ];
    same.iter().filter(|(_, s)| !s).map(|(n, _)| *n).collect()
}

fn ron_options() -> ron::Options {
    ron::Options::default().with_default_extension(
        ron::extensions::Extensions::IMPLICIT_SOME
            | ron::extensions::Extensions::UNWRAP_VARIANT_NEWTYPES,
    )
}

fn build_materials(ctx: &Ctx, specs: &[MaterialSpec]) -> Result<Vec<Material>> {
    if specs.is_empty() {
        return Err(ctx.err("materials", "at least one material is needed"));
    }
    let mut out: Vec<Material> = Vec::new();
    for (k, m) in specs.iter().enumerate() {
        let p = format!("materials[{k}]");
        match m {
            MaterialSpec::Frict(f) => {
                if f.name.is_empty() {
                    return Err(ctx.err(&format!("{p}.name"), "must not be empty"));
                }
                if out.iter().any(|o| o.name() == f.name) {
                    return Err(ctx.err(
                        &format!("{p}.name"),
                        format!("material `{}` defined twice", f.name),
                    ));
                }
                ctx.positive(&format!("{p}.young"), f.young)?;
                ctx.non_negative(&format!("{p}.poisson"), f.poisson)?;
                ctx.positive(&format!("{p}.density"), f.density)?;
                if !(0.0..std::f64::consts::FRAC_PI_2).contains(&f.friction_angle) {
                    return Err(ctx.err(
                        &format!("{p}.friction_angle"),
                        format!("must be in [0, π/2) radians, got {}", f.friction_angle),
                    ));
                }
                if let Some(e) = f.restitution {
                    if !(e > 0.0 && e <= 1.0) {
                        return Err(ctx.err(
                            &format!("{p}.restitution"),
                            format!("must be in (0, 1], got {e}"),
                        ));
                    }
                }
                out.push(Material::Frict(FrictMat {
                    name: f.name.clone(),
                    young: f.young,
                    poisson: f.poisson,
                    friction_angle: f.friction_angle,
                    density: f.density,
                    restitution: f.restitution,
                }));
            }
            MaterialSpec::Cpm(c) => {
                if c.name.is_empty() {
                    return Err(ctx.err(&format!("{p}.name"), "must not be empty"));
                }
                if out.iter().any(|o| o.name() == c.name) {
                    return Err(ctx.err(
                        &format!("{p}.name"),
                        format!("material `{}` defined twice", c.name),
                    ));
                }
                c.params
                    .validate()
                    .map_err(|e| ctx.err(&format!("{p}.params"), e))?;
                out.push(Material::Cpm(CpmNamed {
                    name: c.name.clone(),
                    params: c.params,
                }));
            }
        }
    }
    Ok(out)
}

fn build_walls(ctx: &Ctx, specs: &[WallSpec], mats: &[Material]) -> Result<Vec<Wall>> {
    let mut out: Vec<Wall> = Vec::new();
    for (k, w) in specs.iter().enumerate() {
        let p = format!("walls[{k}]");
        let point = ctx.finite3(&format!("{p}.point"), w.point)?;
        let normal = ctx.finite3(&format!("{p}.normal"), w.normal)?;
        let vel = ctx.finite3(&format!("{p}.velocity"), w.velocity)?;
        if normal.norm() == 0.0 {
            return Err(ctx.err(&format!("{p}.normal"), "must not be zero"));
        }
        let normal = normal.normalize();
        let material = ctx.material(&format!("{p}.material"), &w.material, mats)?;
        for (m, o) in out.iter().enumerate() {
            let c = normal.dot(&o.normal);
            let gap = (point - o.point).dot(&o.normal);
            if c > 1.0 - 1e-12 && gap.abs() <= 1e-12 * (1.0 + point.norm()) {
                return Err(ctx.err(&p, format!("overlaps walls[{m}]: same plane and side")));
            }
            if c < -1.0 + 1e-12 && gap <= 0.0 {
                return Err(ctx.err(
                    &p,
                    format!("overlaps walls[{m}]: the two facing walls leave no room between them"),
                ));
            }
        }
        out.push(Wall {
            point,
            normal,
            vel,
            material,
        });
    }
    Ok(out)
}

/// Most spheres one scene may hold: local indices are `u32`.
const MAX_SPHERES: u64 = u32::MAX as u64 / 2;

fn build_spheres(ctx: &Ctx, specs: &[SphereSpec], mats: &[Material]) -> Result<Particles> {
    let mut ps = Particles::default();
    // first gid of each source, for naming the source of a particle in errors
    let mut first_gid = Vec::with_capacity(specs.len());
    for (k, s) in specs.iter().enumerate() {
        let p = format!("spheres[{k}]");
        let offset = ps.n_owned as u64;
        first_gid.push(offset);
        match s {
            SphereSpec::Sphere(o) => {
                let m = ctx.material(&format!("{p}.material"), &o.material, mats)?;
                let r = ctx.positive(&format!("{p}.radius"), o.radius)?;
                let pos = ctx.finite3(&format!("{p}.pos"), o.pos)?;
                let mut q = Particle::sphere(offset, pos, r, mats[m as usize].density(), m);
                q.vel = ctx.finite3(&format!("{p}.vel"), o.vel)?;
                q.angvel = ctx.finite3(&format!("{p}.angvel"), o.angvel)?;
                q.blocked =
                    parse_blocked(&o.blocked).map_err(|e| ctx.err(&format!("{p}.blocked"), e))?;
                ps.push_owned(&q);
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
                    _ => {
                        return Err(ctx.err(
                            &format!("{p}.counts"),
                            format!("too many spheres (at most {MAX_SPHERES} per scene)"),
                        ))
                    }
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
                for mm in 0..gen::lattice_count(l).unwrap_or(0) {
                    let (x, r) = gen::lattice_sphere(l, mm);
                    ps.push_owned(&Particle::sphere(
                        offset + mm,
                        x,
                        r,
                        mats[m as usize].density(),
                        m,
                    ));
                }
            }
            SphereSpec::RandomFill(f) => {
                let m = ctx.material(&format!("{p}.material"), &f.material, mats)?;
                ctx.positive(&format!("{p}.radius"), f.radius)?;
                if f.count + offset > MAX_SPHERES {
                    return Err(ctx.err(
                        &format!("{p}.count"),
                        format!("too many spheres (at most {MAX_SPHERES} per scene)"),
                    ));
                }
                if !(0.0..1.0).contains(&f.polydispersity) {
                    return Err(ctx.err(&format!("{p}.polydispersity"), "must be in [0, 1)"));
                }
                let lo = ctx.finite3(&format!("{p}.lo"), f.lo)?;
                let hi = ctx.finite3(&format!("{p}.hi"), f.hi)?;
                if (0..3).any(|a| hi[a] <= lo[a]) {
                    return Err(ctx.err(&format!("{p}.hi"), "must exceed lo on every axis"));
                }
                let v = gen::random_fill(f).map_err(|e| ctx.err(&p, e))?;
                for (mm, (x, r)) in v.into_iter().enumerate() {
                    ps.push_owned(&Particle::sphere(
                        offset + mm as u64,
                        x,
                        r,
                        mats[m as usize].density(),
                        m,
                    ));
                }
            }
            SphereSpec::DensePack(d) => {
                let m = ctx.material(&format!("{p}.material"), &d.material, mats)?;
                ctx.positive(&format!("{p}.radius"), d.radius)?;
                if !(0.3..0.9).contains(&d.porosity) {
                    return Err(ctx.err(&format!("{p}.porosity"), "must be in [0.3, 0.9)"));
                }
                let (v, ov) = gen::dense_pack(d).map_err(|e| ctx.err(&p, e))?;
                log::info!("{p}: {} spheres, largest overlap {ov:.3e} r", v.len());
                if v.len() as u64 + offset > MAX_SPHERES {
                    return Err(ctx.err(&p, "too many spheres"));
                }
                for (mm, (x, r)) in v.into_iter().enumerate() {
                    ps.push_owned(&Particle::sphere(
                        offset + mm as u64,
                        x,
                        r,
                        mats[m as usize].density(),
                        m,
                    ));
                }
            }
            SphereSpec::TextFile(t) => {
                let m = ctx.material(&format!("{p}.material"), &t.material, mats)?;
                let path = ctx.data_path(&format!("{p}.path"), &t.path)?;
                for (mm, (x, r)) in gen::read_text(&path)?.into_iter().enumerate() {
                    ps.push_owned(&Particle::sphere(
                        offset + mm as u64,
                        x,
                        r,
                        mats[m as usize].density(),
                        m,
                    ));
                }
            }
            SphereSpec::LammpsData(d) => {
                let path = ctx.data_path(&format!("{p}.path"), &d.path)?;
                if d.materials.is_empty() {
                    return Err(
                        ctx.err(&format!("{p}.materials"), "give one material per atom type")
                    );
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
                for q in gen::read_lammps(&path, d, &idx, offset)? {
                    ps.push_owned(&q);
                }
            }
        }
    }
    check_coincident(ctx, &ps, &first_gid)?;
    Ok(ps)
}

/// Refuse spheres with coincident centres (the contact normal is undefined) and warn about
/// initial overlaps deeper than 10 % of the smaller radius (they start with a large force).
fn check_coincident(ctx: &Ctx, ps: &Particles, first_gid: &[u64]) -> Result<()> {
    let mut grid = crate::collide::CellGrid::default();
    let mut cands = Vec::new();
    crate::collide::sphere_candidates(ps, 0.0, &V3::repeat(1.0), &mut grid, &mut cands);
    let mut deep = 0usize;
    for c in &cands {
        let (i, j) = (c.i as usize, c.j as usize);
        let (r1, r2) = (ps.radius[i], ps.radius[j]);
        let d = (ps.pos[j] - ps.pos[i]).norm();
        if d <= 1e-9 * (r1 + r2) {
            let src = first_gid.partition_point(|&g| g <= c.key.1) - 1;
            return Err(ctx.err(
                &format!("spheres[{src}]"),
                format!(
                    "spheres gid {} and gid {} have the same centre",
                    c.key.0, c.key.1
                ),
            ));
        }
        deep += (r1 + r2 - d > 0.1 * r1.min(r2)) as usize;
    }
    if deep > 0 {
        log::warn!(
            "{}: {deep} pairs of spheres overlap by more than 10 % of a radius at the start",
            ctx.file.display()
        );
    }
    Ok(())
}

fn build_domain(
    ctx: &Ctx,
    spec: Option<&DomainSpec>,
    ps: &Particles,
    walls: &[Wall],
) -> Result<Domain> {
    if let Some(d) = spec {
        let lo = ctx.finite3("domain.lo", d.lo)?;
        let hi = ctx.finite3("domain.hi", d.hi)?;
        if (0..3).any(|a| hi[a] <= lo[a]) {
            return Err(ctx.err("domain.hi", "must exceed domain.lo on every axis"));
        }
        return Ok(Domain {
            lo,
            hi,
            periodic: d.periodic,
        });
    }
    // Default: bounding box of spheres and wall points, enlarged by half its size (at least
    // 10 max radii) on every side.
    let mut lo = V3::repeat(f64::INFINITY);
    let mut hi = V3::repeat(f64::NEG_INFINITY);
    for i in 0..ps.n_owned {
        lo = lo.inf(&(ps.pos[i] - V3::repeat(ps.radius[i])));
        hi = hi.sup(&(ps.pos[i] + V3::repeat(ps.radius[i])));
    }
    for w in walls {
        lo = lo.inf(&w.point);
        hi = hi.sup(&w.point);
    }
    let rmax = ps.radius.iter().cloned().fold(0.0, f64::max);
    let pad = ((hi - lo) * 0.5).sup(&V3::repeat(10.0 * rmax));
    Ok(Domain {
        lo: lo - pad,
        hi: hi + pad,
        periodic: [false; 3],
    })
}

fn check_placement(ctx: &Ctx, ps: &Particles, walls: &[Wall], domain: &Domain) -> Result<()> {
    for i in 0..ps.n_owned {
        for (k, w) in walls.iter().enumerate() {
            let s = (ps.pos[i] - w.point).dot(&w.normal);
            if s < 0.0 {
                return Err(ctx.err(
                    &format!("walls[{k}]"),
                    format!(
                        "sphere gid {} at {:?} lies behind this wall",
                        ps.gid[i],
                        ps.pos[i].as_slice()
                    ),
                ));
            }
        }
        for a in 0..3 {
            let x = ps.pos[i][a];
            if !domain.periodic[a] && (x < domain.lo[a] || x > domain.hi[a]) {
                return Err(ctx.err(
                    "domain",
                    format!(
                        "sphere gid {} at {:?} lies outside the domain",
                        ps.gid[i],
                        ps.pos[i].as_slice()
                    ),
                ));
            }
        }
    }
    Ok(())
}
