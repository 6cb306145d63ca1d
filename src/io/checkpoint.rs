//! Checkpoints: one HDF5 file per checkpoint, written by all ranks together through MPI-IO
//! (each rank writes its block of every dataset at the offset of an exclusive prefix sum),
//! read back on any rank count. Layout: `docs/checkpoint-format.md`.
//!
//! Atomic: the file is written as `NAME.h5.tmp`, fsynced and renamed; the `latest` pointer (a
//! small text file holding the file name) moves only after the rename, so a crash at any
//! moment leaves the previous checkpoint and pointer intact.

use super::h5par::{read_rows, write_rows};
use crate::contact::store::ContactState;
use crate::error::{Error, Result};
use crate::particles::Particles;
use crate::sim::{Restored, Simulation};
use crate::{Quat, V3};
use hdf5::types::VarLenUnicode;
use hdf5::{File, H5Type};
use std::path::{Path, PathBuf};

/// Value of the root attribute `format`.
pub const FORMAT: &str = "demhpc-checkpoint";
/// Layout version; a reader accepts files of this version only (bumped when the layout changes).
pub const FORMAT_VERSION: u64 = 1;
/// Rows read per block on restart (bounds the memory of a rank scanning the file).
const READ_BLOCK: usize = 1 << 18;

/// Everything a checkpoint says about itself (root attributes).
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointInfo {
    pub format_version: u64,
    pub demhpc_version: String,
    pub step: u64,
    pub time: f64,
    pub dt: f64,
    pub reproducible: bool,
    pub n_particles: u64,
    pub n_contacts: u64,
    pub n_wall_contacts: u64,
    /// Ranks that wrote the file and their grid.
    pub ranks: u64,
    pub grid: [u64; 3],
    /// The box over which open axes were cut (see `Simulation::decomp_bbox`).
    pub bbox_lo: V3,
    pub bbox_hi: V3,
    pub need_rebuild: bool,
    pub n_rebuilds: u64,
    pub scene_text: String,
    pub scene_file: String,
    /// Engine and controller state (RON; empty when the scene has none).
    pub engines: String,
}

fn h5e(path: &Path) -> impl Fn(hdf5::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

// ---------------------------------------------------------------------------------- writing

/// This rank's rows of every dataset.
#[derive(Default)]
struct Local {
    gid: Vec<u64>,
    pos: Vec<f64>,
    vel: Vec<f64>,
    angvel: Vec<f64>,
    ori: Vec<f64>,
    radius: Vec<f64>,
    mass: Vec<f64>,
    inertia: Vec<f64>,
    material: Vec<u16>,
    blocked: Vec<u8>,
    wrap: Vec<i32>,
    ref_pos: Vec<f64>,
    c_gid1: Vec<u64>,
    c_gid2: Vec<u64>,
    c_image: Vec<i32>,
    c_state: Vec<f64>,
    w_gid: Vec<u64>,
    w_wall: Vec<u64>,
    w_state: Vec<f64>,
    lead_gid1: Vec<u64>,
    lead_gid2: Vec<u64>,
}

fn collect(sim: &Simulation) -> Local {
    let ps = &sim.ps;
    let n = ps.n_owned;
    let mut l = Local::default();
    let flat = |v: &[V3]| -> Vec<f64> { v.iter().flat_map(|x| [x.x, x.y, x.z]).collect() };
    l.gid = ps.gid[..n].to_vec();
    l.pos = flat(&ps.pos[..n]);
    l.vel = flat(&ps.vel[..n]);
    l.angvel = flat(&ps.angvel[..n]);
    l.ori = ps.ori[..n]
        .iter()
        .flat_map(|q| [q.w, q.i, q.j, q.k])
        .collect();
    l.radius = ps.radius[..n].to_vec();
    l.mass = ps.mass[..n].to_vec();
    l.inertia = ps.inertia[..n].to_vec();
    l.material = ps.material[..n].to_vec();
    l.blocked = ps.blocked[..n].to_vec();
    l.wrap = ps.wrap[..n].iter().flatten().copied().collect();
    l.ref_pos = flat(sim.reference());
    // Every contact once: the copy whose particle 1 is owned here.
    let pl = &sim.pairs;
    for k in 0..pl.len() {
        let (i, j) = (pl.i[k] as usize, pl.j[k] as usize);
        if pl.active[k] && i < n {
            l.c_gid1.push(pl.key[k].0);
            l.c_gid2.push(pl.key[k].1);
            for a in 0..3 {
                l.c_image.push(ps.image[j][a] - ps.image[i][a]);
            }
            pl.record(k).pack(&mut l.c_state);
        }
        if pl.leading[k] && i < n {
            l.lead_gid1.push(pl.key[k].0);
            l.lead_gid2.push(pl.key[k].1);
        }
    }
    let wl = &sim.wall_pairs;
    for k in 0..wl.len() {
        if wl.active[k] && (wl.i[k] as usize) < n {
            l.w_gid.push(wl.key[k].0);
            l.w_wall.push(wl.key[k].1);
            wl.record(k).pack(&mut l.w_state);
        }
    }
    l
}

fn attr_str(f: &File, name: &str, v: &str) -> hdf5::Result<()> {
    let s: VarLenUnicode = v
        .parse()
        .map_err(|_| hdf5::Error::from("string attribute"))?;
    f.new_attr::<VarLenUnicode>().create(name)?.write_scalar(&s)
}

fn attr<T: H5Type>(f: &File, name: &str, v: T) -> hdf5::Result<()> {
    f.new_attr::<T>().create(name)?.write_scalar(&v)
}

fn attr_vec<T: H5Type>(f: &File, name: &str, v: &[T]) -> hdf5::Result<()> {
    f.new_attr::<T>()
        .shape([v.len()])
        .create(name)?
        .write_raw(v)
}

/// Create `name` with `total` rows of `cols` (1 = a 1-D dataset) and write this rank's block
/// at `offset` (collective over the file's ranks).
fn dataset<T: H5Type>(
    g: &hdf5::Group,
    name: &str,
    total: u64,
    offset: u64,
    cols: usize,
    data: &[T],
    collective: bool,
) -> hdf5::Result<()> {
    let b = g.new_dataset::<T>();
    let ds = if cols == 1 {
        b.shape([total as usize]).create(name)?
    } else {
        b.shape([total as usize, cols]).create(name)?
    };
    write_rows(&ds, offset as usize, cols, data, collective)
}

/// Write the checkpoint of the current state to `path` (collective: every rank calls it).
/// `engines` is the engine/controller state as text.
pub fn write(sim: &Simulation, scene_text: &str, scene_file: &str, path: &Path) -> Result<()> {
    let comm = &sim.comm;
    let l = collect(sim);
    let counts = [l.gid.len(), l.c_gid1.len(), l.w_gid.len()].map(|c| c as u64);
    let offs = counts.map(|c| comm.exscan_u64(c));
    let tots = counts.map(|c| comm.sum_u64(c));
    let n_lead = l.lead_gid1.len() as u64;
    let lead = (comm.sum_u64(n_lead), comm.exscan_u64(n_lead));
    let tmp = path.with_extension("h5.tmp");
    let e = h5e(&tmp);
    let collective = comm.raw_world().is_some();
    let result = (|| -> hdf5::Result<()> {
        let f = match comm.raw_world() {
            Some(raw) => File::with_options()
                .with_fapl(|p| p.mpio(raw, None))
                .create(&tmp)?,
            None => File::create(&tmp)?,
        };
        write_contents(&f, sim, scene_text, scene_file, &l, tots, offs, collective)?;
        let g = f.create_group("leading")?;
        dataset(&g, "gid1", lead.0, lead.1, 1, &l.lead_gid1, collective)?;
        dataset(&g, "gid2", lead.0, lead.1, 1, &l.lead_gid2, collective)?;
        drop(g);
        // Closed explicitly once every group and dataset handle is gone: with MPI-IO HDF5
        // refuses to close a file with open objects, and a failed implicit close (on drop)
        // would leave the metadata unwritten while the file is published.
        f.close()
    })()
    .map_err(&e);
    // Every rank must know whether the file is complete before it is published.
    let failed = comm.any(result.is_err());
    if failed {
        return Err(result
            .err()
            .unwrap_or_else(|| Error::io(&tmp, "writing the checkpoint failed on another rank")));
    }
    let published = if comm.is_root() {
        publish(&tmp, path)
    } else {
        Ok(())
    };
    if comm.any(published.is_err()) {
        return Err(published
            .err()
            .unwrap_or_else(|| Error::io(path, "publishing the checkpoint failed on rank 0")));
    }
    Ok(())
}

/// Everything inside the checkpoint file (collective): root attributes, then this rank's rows
/// of every dataset at its offsets.
#[allow(clippy::too_many_arguments)]
fn write_contents(
    f: &File,
    sim: &Simulation,
    scene_text: &str,
    scene_file: &str,
    l: &Local,
    tots: [u64; 3],
    offs: [u64; 3],
    collective: bool,
) -> hdf5::Result<()> {
    write_root_attrs(f, sim, scene_text, scene_file, tots)?;
    let s = ContactState::N_F64;
    let (np, op) = (tots[0], offs[0]);
    let g = f.create_group("particles")?;
    dataset(&g, "gid", np, op, 1, &l.gid, collective)?;
    for (name, v) in [
        ("pos", &l.pos),
        ("vel", &l.vel),
        ("angvel", &l.angvel),
        ("ref_pos", &l.ref_pos),
    ] {
        dataset(&g, name, np, op, 3, v, collective)?;
    }
    dataset(&g, "ori", np, op, 4, &l.ori, collective)?;
    for (name, v) in [
        ("radius", &l.radius),
        ("mass", &l.mass),
        ("inertia", &l.inertia),
    ] {
        dataset(&g, name, np, op, 1, v, collective)?;
    }
    dataset(&g, "material", np, op, 1, &l.material, collective)?;
    dataset(&g, "blocked", np, op, 1, &l.blocked, collective)?;
    dataset(&g, "wrap", np, op, 3, &l.wrap, collective)?;
    fault_injection(sim.step);
    let (nc, oc) = (tots[1], offs[1]);
    let g = f.create_group("contacts")?;
    dataset(&g, "gid1", nc, oc, 1, &l.c_gid1, collective)?;
    dataset(&g, "gid2", nc, oc, 1, &l.c_gid2, collective)?;
    dataset(&g, "image", nc, oc, 3, &l.c_image, collective)?;
    dataset(&g, "state", nc, oc, s, &l.c_state, collective)?;
    let (nw, ow) = (tots[2], offs[2]);
    let g = f.create_group("wall_contacts")?;
    dataset(&g, "gid", nw, ow, 1, &l.w_gid, collective)?;
    dataset(&g, "wall", nw, ow, 1, &l.w_wall, collective)?;
    dataset(&g, "state", nw, ow, s, &l.w_state, collective)?;
    write_walls(f, sim, collective)?;
    Ok(())
}

/// Test hook: `DEMHPC_FAULT_KILL_IN_CHECKPOINT=STEP` makes the process SIGKILL itself half-way
/// through writing the checkpoint of that step (particles written, contacts not), as the OOM
/// killer or `scancel --signal=KILL` would. tests/checkpoint.rs uses it to show that a crash
/// mid-write leaves the previous checkpoint and `latest` intact.
fn fault_injection(step: u64) {
    let hit = std::env::var("DEMHPC_FAULT_KILL_IN_CHECKPOINT")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        == Some(step);
    if hit {
        // SAFETY: raise() is async-signal-safe and only sends a signal to this process.
        unsafe {
            libc::raise(libc::SIGKILL);
        }
    }
}

fn write_root_attrs(
    f: &File,
    sim: &Simulation,
    scene_text: &str,
    scene_file: &str,
    tots: [u64; 3],
) -> hdf5::Result<()> {
    attr_str(f, "format", FORMAT)?;
    attr(f, "format_version", FORMAT_VERSION)?;
    attr_str(f, "demhpc_version", env!("CARGO_PKG_VERSION"))?;
    attr(f, "step", sim.step)?;
    attr(f, "time", sim.time)?;
    attr(f, "dt", sim.dt)?;
    attr(f, "reproducible", sim.reproducible as u8)?;
    attr(f, "n_particles", tots[0])?;
    attr(f, "n_contacts", tots[1])?;
    attr(f, "n_wall_contacts", tots[2])?;
    attr(f, "contact_state_len", ContactState::N_F64 as u64)?;
    attr(f, "ranks", sim.comm.size() as u64)?;
    attr_vec(f, "grid", &sim.dec.dims.map(|d| d as u64))?;
    attr_vec(f, "decomp_bbox_lo", sim.decomp_bbox.0.as_slice())?;
    attr_vec(f, "decomp_bbox_hi", sim.decomp_bbox.1.as_slice())?;
    attr(f, "need_rebuild", sim.need_rebuild() as u8)?;
    attr(f, "n_rebuilds", sim.n_rebuilds)?;
    attr_str(f, "scene_text", scene_text)?;
    attr_str(f, "scene_file", scene_file)?;
    attr_str(f, "engines", &sim.engine_state())?;
    Ok(())
}

/// Walls (replicated on every rank: written by rank 0's block only).
fn write_walls(f: &File, sim: &Simulation, collective: bool) -> hdf5::Result<()> {
    let g = f.create_group("walls")?;
    let nw = sim.walls.len() as u64;
    let mine = sim.comm.is_root();
    let rows = |v: Vec<V3>| -> Vec<f64> {
        if mine {
            v.iter().flat_map(|x| [x.x, x.y, x.z]).collect()
        } else {
            Vec::new()
        }
    };
    let w = &sim.walls;
    dataset(
        &g,
        "point",
        nw,
        0,
        3,
        &rows(w.iter().map(|w| w.point).collect()),
        collective,
    )?;
    dataset(
        &g,
        "normal",
        nw,
        0,
        3,
        &rows(w.iter().map(|w| w.normal).collect()),
        collective,
    )?;
    dataset(
        &g,
        "vel",
        nw,
        0,
        3,
        &rows(w.iter().map(|w| w.vel).collect()),
        collective,
    )?;
    dataset(
        &g,
        "ref_point",
        nw,
        0,
        3,
        &rows(sim.wall_reference().to_vec()),
        collective,
    )?;
    Ok(())
}

/// fsync the temporary file, rename it, fsync the directory (rank 0).
fn publish(tmp: &Path, path: &Path) -> Result<()> {
    std::fs::File::open(tmp)
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io(tmp, e))?;
    std::fs::rename(tmp, path).map_err(|e| Error::io(path, e))?;
    if let Some(dir) = path.parent() {
        if let Ok(d) = std::fs::File::open(dir) {
            d.sync_all().ok();
        }
    }
    Ok(())
}

/// Point `DIR/latest` at `file` (a file name in DIR): temporary file, fsync, rename.
pub fn set_latest(dir: &Path, file: &str) -> Result<()> {
    let tmp = dir.join("latest.tmp");
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        writeln!(f, "{file}")?;
        f.sync_all()
    };
    write().map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, dir.join("latest")).map_err(|e| Error::io(dir.join("latest"), e))
}

/// The checkpoint `DIR/latest` points to, if any.
pub fn latest(dir: &Path) -> Option<PathBuf> {
    let name = std::fs::read_to_string(dir.join("latest")).ok()?;
    let p = dir.join(name.trim());
    p.exists().then_some(p)
}

/// File name of the checkpoint at `step`.
pub fn file_name(step: u64) -> String {
    format!("ckpt_{step:010}.h5")
}

/// Delete all but the newest `keep` checkpoints in `dir` (never the one `latest` names).
pub fn prune(dir: &Path, keep: usize) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let cur = latest(dir);
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            // a `.h5.tmp` left by a crash mid-write is garbage once a later file is published
            if n.starts_with("ckpt_") && n.ends_with(".h5.tmp") {
                std::fs::remove_file(p).ok();
            }
            n.starts_with("ckpt_") && n.ends_with(".h5")
        })
        .collect();
    files.sort();
    let n = files.len();
    for p in files.into_iter().take(n.saturating_sub(keep)) {
        if Some(&p) != cur.as_ref() {
            std::fs::remove_file(&p).ok();
        }
    }
}

// ---------------------------------------------------------------------------------- reading

/// Turn any HDF5 failure while reading into a clear input error naming the file.
fn bad(path: &Path) -> impl Fn(hdf5::Error) -> Error + '_ {
    move |e| {
        Error::Input(format!(
            "{}: not a readable demhpc checkpoint ({e})",
            path.display()
        ))
    }
}

fn get_str(f: &File, name: &str) -> hdf5::Result<String> {
    Ok(f.attr(name)?.read_scalar::<VarLenUnicode>()?.to_string())
}

fn get<T: H5Type>(f: &File, name: &str) -> hdf5::Result<T> {
    f.attr(name)?.read_scalar::<T>()
}

fn get3(f: &File, name: &str) -> hdf5::Result<V3> {
    let v = f.attr(name)?.read_raw::<f64>()?;
    if v.len() != 3 {
        return Err(format!("attribute {name} must have 3 values").into());
    }
    Ok(V3::new(v[0], v[1], v[2]))
}

fn open(path: &Path) -> Result<File> {
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::Input(format!("{}: cannot read checkpoint: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(Error::Input(format!("{}: not a file", path.display())));
    }
    File::open(path).map_err(bad(path))
}

/// Read the root attributes (cheap: no datasets).
pub fn read_info(path: &Path) -> Result<CheckpointInfo> {
    let f = open(path)?;
    info_of(&f).map_err(bad(path))
}

fn info_of(f: &File) -> hdf5::Result<CheckpointInfo> {
    let format = get_str(f, "format").map_err(|_| "no `format` attribute")?;
    if format != FORMAT {
        return Err(format!("format is `{format}`, expected `{FORMAT}`").into());
    }
    let version: u64 = get(f, "format_version")?;
    if version != FORMAT_VERSION {
        return Err(format!(
            "format version {version}; this demhpc reads version {FORMAT_VERSION}"
        )
        .into());
    }
    let s: u64 = get(f, "contact_state_len")?;
    if s != ContactState::N_F64 as u64 {
        return Err(format!(
            "contact state has {s} values per contact; this demhpc stores {}",
            ContactState::N_F64
        )
        .into());
    }
    let grid = f.attr("grid")?.read_raw::<u64>()?;
    Ok(CheckpointInfo {
        format_version: version,
        demhpc_version: get_str(f, "demhpc_version")?,
        step: get(f, "step")?,
        time: get(f, "time")?,
        dt: get(f, "dt")?,
        reproducible: get::<u8>(f, "reproducible")? != 0,
        n_particles: get(f, "n_particles")?,
        n_contacts: get(f, "n_contacts")?,
        n_wall_contacts: get(f, "n_wall_contacts")?,
        ranks: get(f, "ranks")?,
        grid: [
            *grid.first().unwrap_or(&0),
            *grid.get(1).unwrap_or(&0),
            *grid.get(2).unwrap_or(&0),
        ],
        bbox_lo: get3(f, "decomp_bbox_lo")?,
        bbox_hi: get3(f, "decomp_bbox_hi")?,
        need_rebuild: get::<u8>(f, "need_rebuild")? != 0,
        n_rebuilds: get(f, "n_rebuilds")?,
        scene_text: get_str(f, "scene_text")?,
        scene_file: get_str(f, "scene_file")?,
        engines: get_str(f, "engines")?,
    })
}

fn ds(f: &File, name: &str, rows: u64, cols: usize) -> hdf5::Result<hdf5::Dataset> {
    let d = f.dataset(name)?;
    let shape = d.shape();
    let want: Vec<usize> = if cols == 1 {
        vec![rows as usize]
    } else {
        vec![rows as usize, cols]
    };
    if shape != want {
        return Err(format!("dataset {name} has shape {shape:?}, expected {want:?}").into());
    }
    Ok(d)
}

fn v3(v: &[f64], k: usize) -> V3 {
    V3::new(v[3 * k], v[3 * k + 1], v[3 * k + 2])
}

/// Read this rank's part of a checkpoint: the particles whose position at the last neighbour
/// rebuild (`ref_pos`, inside the cell) `owns` accepts, and every contact touching one of them.
/// Each rank scans the file in blocks of `READ_BLOCK` rows.
pub fn read_local(
    path: &Path,
    info: &CheckpointInfo,
    owns: impl Fn(&V3) -> bool,
) -> Result<Restored> {
    let f = open(path)?;
    read_local_h5(&f, info, owns).map_err(bad(path))
}

fn read_local_h5(
    f: &File,
    info: &CheckpointInfo,
    owns: impl Fn(&V3) -> bool,
) -> hdf5::Result<Restored> {
    let n = info.n_particles;
    let p = |name: &str, cols| ds(f, &format!("particles/{name}"), n, cols);
    let (d_gid, d_pos, d_vel, d_w, d_ref) = (
        p("gid", 1)?,
        p("pos", 3)?,
        p("vel", 3)?,
        p("angvel", 3)?,
        p("ref_pos", 3)?,
    );
    let (d_ori, d_r, d_m, d_i) = (
        p("ori", 4)?,
        p("radius", 1)?,
        p("mass", 1)?,
        p("inertia", 1)?,
    );
    let (d_mat, d_blk, d_wrap) = (p("material", 1)?, p("blocked", 1)?, p("wrap", 3)?);
    let mut ps = Particles::default();
    let mut reference = Vec::new();
    let mut off = 0usize;
    while off < n as usize {
        let rows = READ_BLOCK.min(n as usize - off);
        let rf = read_rows::<f64>(&d_ref, off, rows, 3)?;
        let mine: Vec<usize> = (0..rows).filter(|&k| owns(&v3(&rf, k))).collect();
        if !mine.is_empty() {
            let gid = read_rows::<u64>(&d_gid, off, rows, 1)?;
            let pos = read_rows::<f64>(&d_pos, off, rows, 3)?;
            let vel = read_rows::<f64>(&d_vel, off, rows, 3)?;
            let w = read_rows::<f64>(&d_w, off, rows, 3)?;
            let ori = read_rows::<f64>(&d_ori, off, rows, 4)?;
            let r = read_rows::<f64>(&d_r, off, rows, 1)?;
            let m = read_rows::<f64>(&d_m, off, rows, 1)?;
            let inertia = read_rows::<f64>(&d_i, off, rows, 1)?;
            let mat = read_rows::<u16>(&d_mat, off, rows, 1)?;
            let blk = read_rows::<u8>(&d_blk, off, rows, 1)?;
            let wrap = read_rows::<i32>(&d_wrap, off, rows, 3)?;
            for &k in &mine {
                let q = &ori[4 * k..4 * k + 4];
                ps.push_owned(&crate::particles::Particle {
                    gid: gid[k],
                    pos: v3(&pos, k),
                    vel: v3(&vel, k),
                    angvel: v3(&w, k),
                    ori: Quat::new_unchecked(nalgebra::Quaternion::new(q[0], q[1], q[2], q[3])),
                    radius: r[k],
                    mass: m[k],
                    inertia: inertia[k],
                    material: mat[k],
                    blocked: blk[k],
                    image: [0; 3],
                    wrap: [wrap[3 * k], wrap[3 * k + 1], wrap[3 * k + 2]],
                });
                reference.push(v3(&rf, k));
            }
        }
        off += rows;
    }
    let mut owned: Vec<u64> = ps.gid.clone();
    owned.sort_unstable();
    let is_owned = |g: u64| owned.binary_search(&g).is_ok();
    let s = ContactState::N_F64;
    let c = |name: &str, rows, cols| ds(f, &format!("contacts/{name}"), rows, cols);
    let nc = info.n_contacts;
    let (d1, d2, dst) = (c("gid1", nc, 1)?, c("gid2", nc, 1)?, c("state", nc, s)?);
    c("image", nc, 3)?;
    let mut contacts = Vec::new();
    let mut off = 0usize;
    while off < nc as usize {
        let rows = READ_BLOCK.min(nc as usize - off);
        let g1 = read_rows::<u64>(&d1, off, rows, 1)?;
        let g2 = read_rows::<u64>(&d2, off, rows, 1)?;
        let mine: Vec<usize> = (0..rows)
            .filter(|&k| is_owned(g1[k]) || is_owned(g2[k]))
            .collect();
        if !mine.is_empty() {
            let st = read_rows::<f64>(&dst, off, rows, s)?;
            for &k in &mine {
                contacts.push((
                    (g1[k], g2[k]),
                    ContactState::unpack(&st[s * k..s * (k + 1)]),
                ));
            }
        }
        off += rows;
    }
    let w = |name: &str, rows, cols| ds(f, &format!("wall_contacts/{name}"), rows, cols);
    let nw = info.n_wall_contacts;
    let (dg, dw, dst) = (w("gid", nw, 1)?, w("wall", nw, 1)?, w("state", nw, s)?);
    let mut wall_contacts = Vec::new();
    let mut off = 0usize;
    while off < nw as usize {
        let rows = READ_BLOCK.min(nw as usize - off);
        let g = read_rows::<u64>(&dg, off, rows, 1)?;
        let wi = read_rows::<u64>(&dw, off, rows, 1)?;
        let mine: Vec<usize> = (0..rows).filter(|&k| is_owned(g[k])).collect();
        if !mine.is_empty() {
            let st = read_rows::<f64>(&dst, off, rows, s)?;
            for &k in &mine {
                wall_contacts.push(((g[k], wi[k]), ContactState::unpack(&st[s * k..s * (k + 1)])));
            }
        }
        off += rows;
    }
    let leading = read_leading(f, &is_owned)?;
    let walls_n = f
        .dataset("walls/point")?
        .shape()
        .first()
        .copied()
        .unwrap_or(0);
    let wr = |name: &str| -> hdf5::Result<Vec<V3>> {
        let d = ds(f, &format!("walls/{name}"), walls_n as u64, 3)?;
        let v = read_rows::<f64>(&d, 0, walls_n, 3)?;
        Ok((0..walls_n).map(|k| v3(&v, k)).collect())
    };
    Ok(Restored {
        step: info.step,
        time: info.time,
        need_rebuild: info.need_rebuild,
        n_rebuilds: info.n_rebuilds,
        wall_point: wr("point")?,
        wall_vel: wr("vel")?,
        wall_ref: wr("ref_point")?,
        particles: ps,
        reference,
        contacts,
        wall_contacts,
        leading,
        engines: info.engines.clone(),
    })
}

/// The keys of `leading/` (pairs touching at the last rebuild) that touch a particle this rank
/// keeps.
fn read_leading(f: &File, is_owned: &dyn Fn(u64) -> bool) -> hdf5::Result<Vec<(u64, u64)>> {
    let (d1, d2) = (f.dataset("leading/gid1")?, f.dataset("leading/gid2")?);
    let n = d1.shape().first().copied().unwrap_or(0);
    let mut out = Vec::new();
    let mut off = 0usize;
    while off < n {
        let rows = READ_BLOCK.min(n - off);
        let g1 = read_rows::<u64>(&d1, off, rows, 1)?;
        let g2 = read_rows::<u64>(&d2, off, rows, 1)?;
        out.extend(
            (0..rows)
                .filter(|&k| is_owned(g1[k]) || is_owned(g2[k]))
                .map(|k| (g1[k], g2[k])),
        );
        off += rows;
    }
    Ok(out)
}
