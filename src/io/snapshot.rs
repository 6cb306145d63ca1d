//! Particle snapshots: one HDF5 file per snapshot (`snapshots/snap_<step>.h5`, datasets `gid`,
//! `pos`, `vel`, `angvel`, `radius`, `ncontacts`, `tag`, `material`, `force`, `torque`
//! (the last step's, NaN where none was recorded: step 0, a run stopped by a cell's last
//! stage), `coordination`, sorted by gid; root attributes `step`, `time`, `demhpc_version`;
//! a step-0 snapshot with periodic snapshots) and one XDMF file (`snapshots.xmf`, written by rank 0) listing them as
//! temporal collections side by side — the meshes' `Triangle` grids (with meshes) and the
//! particles' `Polyvertex` grids ([`xdmf`]) — which ParaView opens directly with any of its
//! XDMF readers and meshio's `TimeSeriesReader` reads at every time (CONVENTIONS.md "Files the
//! project writes"; `tests/suite/xdmf_readers.rs` loads it with ParaView and meshio).
//!
//! Writing is collective and no rank holds more than its share of the scene. Gids are dense,
//! 0..N−1: every generator numbers its spheres consecutively from its first gid (a LAMMPS file's
//! atom ids must be 1..n), replication gives tile t the gids t·n_base + g, a restart keeps the
//! checkpoint's gids, and only inlets and outlets (`engines`) create or delete particles
//! (their gids are sparse: the fallback below). So row k of every dataset belongs to gid k: each rank sends its owned particles to
//! the rank whose row block [r·N/P, (r+1)·N/P) holds their gid (one all-to-all with variable
//! counts, `Comm::all_to_all_f64s`), places what it receives at row gid − r·N/P, and all ranks
//! write their blocks of every dataset together through MPI-IO (`h5par::write_rows`, collective
//! transfers). The density is checked at every snapshot (global min and max gid against the
//! count, then every block complete without duplicates); should it ever fail, rank 0 gathers
//! all particles, sorts them by gid and writes every row itself (the other ranks write empty
//! blocks): the same file, only slower, plus a `vertex` dataset (the rows' indices, which the
//! XDMF then names as the particles' connectivity instead of `gid`).
//!
//! Atomic: the file is written as `snap_<step>.h5.tmp` and renamed by rank 0 once every rank
//! reports its part written, so a crash never leaves a partial snapshot under the real name.
//! Without MPI (a plain single process) the same file is written through HDF5's default driver.

use super::contacts::ContactRows;
use super::h5par::{block_of, block_start, dataset, ParFile};
use crate::domain::comm::Comm;
use crate::error::{Error, Result};
use crate::forces::contact_counts;
use crate::sim::Simulation;
use crate::V3;
use hdf5::types::VarLenUnicode;
use std::path::{Path, PathBuf};

/// `f64`s per particle in the redistribution message: gid (bits), pos, vel, angvel, radius,
/// ncontacts, tag, material, force, torque, coordination.
const REC: usize = 21;

/// This rank's rows of a snapshot, in gid order: rows `first..first + gid.len()` of `total`.
#[derive(Default)]
struct Block {
    total: usize,
    first: usize,
    /// Row k holds gid k (dense gids, the usual case): the `gid` dataset is then 0..N−1 and
    /// serves as the XDMF vertex connectivity; otherwise the file gets a `vertex` dataset.
    gid_rows: bool,
    gid: Vec<u64>,
    pos: Vec<f64>,
    vel: Vec<f64>,
    angvel: Vec<f64>,
    radius: Vec<f64>,
    ncontacts: Vec<u32>,
    /// The particles' tags (`Particles::tag`), widened to u32.
    tag: Vec<u32>,
    /// Material index (into the scene's `materials`), widened to u32.
    material: Vec<u32>,
    /// Total force and torque of the last step (NaN where no step recorded them).
    force: Vec<f64>,
    torque: Vec<f64>,
    /// Contacts with other particles (the coordination number; `ncontacts` counts walls and
    /// facets too).
    coordination: Vec<u32>,
}

impl Block {
    /// `rows` zeroed rows starting at row `first` of `total` (capacity kept).
    fn reset(&mut self, total: usize, first: usize, rows: usize) {
        self.total = total;
        self.first = first;
        self.gid.clear();
        self.gid.resize(rows, 0);
        for v in [
            &mut self.pos,
            &mut self.vel,
            &mut self.angvel,
            &mut self.force,
            &mut self.torque,
        ] {
            v.clear();
            v.resize(3 * rows, 0.0);
        }
        self.radius.clear();
        self.radius.resize(rows, 0.0);
        self.ncontacts.clear();
        self.ncontacts.resize(rows, 0);
        for v in [&mut self.tag, &mut self.material, &mut self.coordination] {
            v.clear();
            v.resize(rows, 0);
        }
    }

    /// Fill local row `k` from one record.
    fn set(&mut self, k: usize, r: &[f64]) {
        self.gid[k] = r[0].to_bits();
        self.pos[3 * k..3 * k + 3].copy_from_slice(&r[1..4]);
        self.vel[3 * k..3 * k + 3].copy_from_slice(&r[4..7]);
        self.angvel[3 * k..3 * k + 3].copy_from_slice(&r[7..10]);
        self.radius[k] = r[10];
        self.ncontacts[k] = r[11] as u32;
        self.tag[k] = r[12] as u32;
        self.material[k] = r[13] as u32;
        self.force[3 * k..3 * k + 3].copy_from_slice(&r[14..17]);
        self.torque[3 * k..3 * k + 3].copy_from_slice(&r[17..20]);
        self.coordination[k] = r[20] as u32;
    }
}

/// Buffers kept from one snapshot to the next.
#[derive(Default)]
struct Buffers {
    counts: Vec<[u32; 2]>,
    send: Vec<f64>,
    recv: Vec<f64>,
    seen: Vec<bool>,
    block: Block,
}

/// Owned particle `i` as one record (`counts`: its real contacts, all and with particles).
fn pack(sim: &Simulation, counts: &[[u32; 2]], i: usize, out: &mut [f64]) {
    let ps = &sim.ps;
    out[0] = f64::from_bits(ps.gid[i]);
    out[1..4].copy_from_slice(ps.pos[i].as_slice());
    out[4..7].copy_from_slice(ps.vel[i].as_slice());
    out[7..10].copy_from_slice(ps.angvel[i].as_slice());
    out[10] = ps.radius[i];
    out[11] = counts[i][0] as f64;
    out[12] = ps.tag[i] as f64;
    out[13] = ps.material[i] as f64;
    let known = sim.slots.forces_known();
    let (f, t) = match known {
        true => (ps.force[i], ps.torque[i]),
        false => (V3::repeat(f64::NAN), V3::repeat(f64::NAN)),
    };
    out[14..17].copy_from_slice(f.as_slice());
    out[17..20].copy_from_slice(t.as_slice());
    out[20] = counts[i][1] as f64;
}

/// Fill `b.block` with this rank's rows (collective).
fn collect(sim: &Simulation, b: &mut Buffers) {
    let (comm, ps) = (&sim.comm, &sim.ps);
    let n = ps.n_owned;
    contact_counts(n, &sim.pairs, &sim.wall_pairs, &mut b.counts);
    let gids = &ps.gid[..n];
    let total = comm.sum_u64(n as u64);
    let lo = comm.min_u64(gids.iter().copied().min().unwrap_or(u64::MAX));
    let hi = comm.max_u64(gids.iter().copied().max().unwrap_or(0));
    let dense = total == 0 || (lo == 0 && hi == total - 1);
    let gid_rows = dense && redistribute(sim, total, b);
    if !gid_rows {
        gather_on_root(sim, total, b);
    }
    b.block.gid_rows = gid_rows;
}

/// Dense gids: send every particle to the rank whose block holds its row; false (on every rank)
/// if some block turned out incomplete or doubly filled.
fn redistribute(sim: &Simulation, total: u64, b: &mut Buffers) -> bool {
    let (comm, ps) = (&sim.comm, &sim.ps);
    let (n, p, rank) = (ps.n_owned, comm.size(), comm.rank());
    let dest = |g: u64| block_of(g, p, total);
    // Counting sort of the records by destination rank.
    let mut sendcounts = vec![0usize; p];
    for &g in &ps.gid[..n] {
        sendcounts[dest(g)] += REC;
    }
    let mut at = crate::domain::comm::exclusive_sums(&sendcounts);
    b.send.clear();
    b.send.resize(n * REC, 0.0);
    for i in 0..n {
        let d = dest(ps.gid[i]);
        pack(sim, &b.counts, i, &mut b.send[at[d]..at[d] + REC]);
        at[d] += REC;
    }
    comm.all_to_all_f64s(&b.send, &sendcounts, &mut b.recv);
    let first = block_start(rank, p, total);
    let end = block_start(rank + 1, p, total);
    let rows = (end - first) as usize;
    b.block.reset(total as usize, first as usize, rows);
    b.seen.clear();
    b.seen.resize(rows, false);
    let mut ok = b.recv.len() == rows * REC;
    for r in b.recv.chunks_exact(REC) {
        let g = r[0].to_bits();
        if !(first..end).contains(&g) || b.seen[(g - first) as usize] {
            ok = false;
            break;
        }
        let k = (g - first) as usize;
        b.seen[k] = true;
        b.block.set(k, r);
    }
    !comm.any(!ok)
}

/// Fallback for gids that are not 0..N−1: rank 0 gathers every particle and holds all rows,
/// sorted by gid; the other ranks hold none.
fn gather_on_root(sim: &Simulation, total: u64, b: &mut Buffers) {
    let n = sim.ps.n_owned;
    b.send.clear();
    b.send.resize(n * REC, 0.0);
    for (i, rec) in b.send.chunks_exact_mut(REC).enumerate() {
        pack(sim, &b.counts, i, rec);
    }
    b.block.reset(total as usize, 0, 0);
    if let Some(all) = sim.comm.gather_f64s(&b.send) {
        let mut recs: Vec<&[f64]> = all.chunks_exact(REC).collect();
        recs.sort_by_key(|r| r[0].to_bits());
        b.block.reset(total as usize, 0, recs.len());
        for (k, r) in recs.iter().enumerate() {
            b.block.set(k, r);
        }
    }
}

fn h5err(path: &Path) -> impl Fn(hdf5::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

/// Create the snapshot file `path` and write this rank's rows into it (collective over the
/// ranks of `comm`; every rank passes the same step, time and totals), in agreed steps
/// ([`ParFile`]): a write error on any rank stops every rank at the same dataset, and the
/// partial file is closed by all and removed.
fn write_h5(
    comm: &Comm,
    path: &Path,
    step: u64,
    time: f64,
    b: &Block,
    mesh: &MeshRows,
    contacts: Option<&ContactRows>,
) -> Result<()> {
    let w = ParFile::create(comm, path, 0, 0)?;
    let collective = w.collective();
    let (n, o) = (b.total, b.first);
    let written = (|| -> Result<()> {
        // every rank holds the domain: rank 0 writes its 8 corners
        let (at, k) = if comm.is_root() { (0, 1) } else { (8, 0) };
        let box8 = &mesh.domain[..k * 24];
        w.step(|f| dataset(f, DOMAIN, 8, at, 3, box8, Some("m"), collective))?;
        if mesh.n_tris > 0 {
            // every rank holds the meshes: rank 0 writes them, the others no rows
            let (t, root) = (mesh.n_tris, comm.is_root());
            let (at, k) = if root { (0, 1) } else { (3 * t, 0) };
            let v = &mesh.vertices[..k * mesh.vertices.len()];
            w.step(|f| dataset(f, "mesh_vertices", 3 * t, at, 3, v, Some("m"), collective))?;
            let (at, k) = if root { (0, 1) } else { (t, 0) };
            let c = &mesh.cells[..k * mesh.cells.len()];
            w.step(|f| dataset(f, "mesh_triangles", t, at, 3, c, None, collective))?;
            let id = &mesh.id[..k * mesh.id.len()];
            w.step(|f| dataset(f, "mesh_id", t, at, 1, id, None, collective))?;
        }
        w.step(|f| dataset(f, "gid", n, o, 1, &b.gid, None, collective))?;
        w.step(|f| dataset(f, "pos", n, o, 3, &b.pos, Some("m"), collective))?;
        w.step(|f| dataset(f, "vel", n, o, 3, &b.vel, Some("m/s"), collective))?;
        w.step(|f| dataset(f, "angvel", n, o, 3, &b.angvel, Some("rad/s"), collective))?;
        w.step(|f| dataset(f, "radius", n, o, 1, &b.radius, Some("m"), collective))?;
        w.step(|f| dataset(f, "ncontacts", n, o, 1, &b.ncontacts, None, collective))?;
        w.step(|f| dataset(f, "tag", n, o, 1, &b.tag, None, collective))?;
        w.step(|f| dataset(f, "material", n, o, 1, &b.material, None, collective))?;
        w.step(|f| dataset(f, "force", n, o, 3, &b.force, Some("N"), collective))?;
        w.step(|f| dataset(f, "torque", n, o, 3, &b.torque, Some("N m"), collective))?;
        let z = &b.coordination;
        w.step(|f| dataset(f, "coordination", n, o, 1, z, None, collective))?;
        if !b.gid_rows {
            // the rows' indices, for the XDMF vertex connectivity (`gid` is not 0..N−1)
            let rows: Vec<u64> = (o as u64..(o + b.gid.len()) as u64).collect();
            w.step(|f| dataset(f, VERTEX, n, o, 1, &rows, None, collective))?;
        }
        if let Some(c) = contacts {
            c.write(&w)?;
        }
        w.step(|f| {
            f.new_attr::<u64>().create("step")?.write_scalar(&step)?;
            f.new_attr::<f64>().create("time")?.write_scalar(&time)?;
            let ver: VarLenUnicode = env!("CARGO_PKG_VERSION")
                .parse()
                .map_err(|_| hdf5::Error::from("version string"))?;
            f.new_attr::<VarLenUnicode>()
                .create("demhpc_version")?
                .write_scalar(&ver)
        })
    })();
    match written {
        Ok(()) => w.close(),
        Err(e) => {
            w.abandon();
            Err(e)
        }
    }
}

/// The meshes' triangles at the snapshot's time (XDMF `Triangle` topology): vertices (3 per
/// triangle), connectivity, and the mesh index of each triangle; and the domain's corners.
#[derive(Clone, Debug, Default)]
struct MeshRows {
    n_tris: usize,
    vertices: Vec<f64>,
    cells: Vec<u32>,
    id: Vec<u32>,
    /// The domain's 8 corners o + H (i, j, k), i, j, k ∈ {0, 1}, in VTK's hexahedron order
    /// (the periodic cell's parallelepiped once it deforms).
    domain: Vec<f64>,
}

impl MeshRows {
    fn fill(&mut self, sim: &Simulation) {
        let cell = &sim.domain.cell;
        self.domain.clear();
        for [i, j, k] in [
            [0, 0, 0],
            [1, 0, 0],
            [1, 1, 0],
            [0, 1, 0],
            [0, 0, 1],
            [1, 0, 1],
            [1, 1, 1],
            [0, 1, 1],
        ] {
            let x = cell.origin + cell.h * V3::new(i as f64, j as f64, k as f64);
            self.domain.extend(x.iter());
        }
        let m = &sim.meshes;
        self.n_tris = m.n_facets();
        self.vertices.clear();
        self.vertices
            .extend(m.tri.iter().flatten().flat_map(|v| [v.x, v.y, v.z]));
        self.cells.clear();
        self.cells.extend(0..3 * self.n_tris as u32);
        self.id.clear();
        self.id.extend(m.mesh_of.iter().map(|&k| k as u32));
    }
}

/// The dataset of the domain's corners (8 × 3: the XDMF `domain` grid's hexahedron).
const DOMAIN: &str = "domain";

/// The dataset of a snapshot whose gids are not its row indices (never with dense gids): the
/// row indices 0..N−1, the vertex connectivity of the XDMF `Polyvertex` topology.
const VERTEX: &str = "vertex";

/// One snapshot as listed in `snapshots.xmf`.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub step: u64,
    pub time: f64,
    pub particles: usize,
    /// Mesh triangles (0: no meshes, the time's grid is the particles alone).
    pub triangles: usize,
    /// The file has a `vertex` dataset (its gids are not 0..N−1), which then gives the
    /// particles' connectivity instead of `gid`.
    pub vertex: bool,
    /// Contacts in the file's `contacts` group (0: none, or not written).
    pub contacts: usize,
    /// The file has the domain's corners (`domain`; not before issue 32).
    pub domain: bool,
}

/// Keeps the list of written snapshots and rewrites `snapshots.xmf` after each (rank 0), and
/// the buffers of the redistribution (every rank).
pub struct SnapshotWriter {
    dir: PathBuf,
    entries: Vec<Entry>,
    buf: Buffers,
    mesh: MeshRows,
    /// The contact network's rows, when the scene asks for them (`Output(contacts: true)`).
    contacts: Option<ContactRows>,
}

impl SnapshotWriter {
    /// `root`: this rank creates the directory and writes the XDMF file (rank 0); every rank
    /// writes its rows of each snapshot.
    pub fn new(out_dir: &Path, root: bool) -> Result<Self> {
        let dir = out_dir.join("snapshots");
        if root {
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        }
        Ok(SnapshotWriter {
            dir,
            entries: Vec::new(),
            buf: Buffers::default(),
            mesh: MeshRows::default(),
            contacts: None,
        })
    }

    /// Write the contact network into every snapshot (`contacts`, see `io::contacts`).
    pub fn with_contacts(mut self, on: bool) -> Self {
        self.contacts = on.then(ContactRows::default);
        self
    }

    /// Continue the snapshot series of a restarted run: keep the snapshots up to `step` in the
    /// XDMF collection (later ones belong to the abandoned continuation and are deleted).
    pub fn resume(out_dir: &Path, root: bool, step: u64) -> Result<Self> {
        let mut w = Self::new(out_dir, root)?;
        if !root {
            return Ok(w);
        }
        let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(&w.dir)
            .map_err(|e| Error::io(&w.dir, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter_map(|p| {
                let n = p.file_name()?.to_str()?;
                let s = n.strip_prefix("snap_")?.strip_suffix(".h5")?.parse().ok()?;
                Some((s, p))
            })
            .collect();
        files.sort();
        for (s, p) in files {
            if s > step {
                std::fs::remove_file(&p).map_err(|e| Error::io(&p, e))?;
                continue;
            }
            let f = hdf5::File::open(&p).map_err(h5err(&p))?;
            let time = f
                .attr("time")
                .and_then(|a| a.read_scalar::<f64>())
                .map_err(h5err(&p))?;
            let particles = f.dataset("gid").map_err(h5err(&p))?.shape()[0];
            w.entries.push(Entry {
                step: s,
                time,
                particles,
                triangles: f.dataset("mesh_id").map_or(0, |d| d.shape()[0]),
                vertex: f.link_exists(VERTEX),
                contacts: f
                    .dataset(&format!("{}/id1", super::contacts::GROUP))
                    .map_or(0, |d| d.shape()[0]),
                domain: f.link_exists(DOMAIN),
            });
        }
        Ok(w)
    }

    /// Write a snapshot of the current state (collective: every rank calls it and writes its
    /// rows; rank 0 publishes the file and rewrites the XDMF). Returns the file written (on
    /// rank 0).
    pub fn write(&mut self, sim: &Simulation) -> Result<Option<PathBuf>> {
        let comm = &sim.comm;
        collect(sim, &mut self.buf);
        self.mesh.fill(sim);
        let b = &self.buf.block;
        if let Some(c) = &mut self.contacts {
            c.collect(sim, b.gid_rows.then_some(b.total as u64));
        }
        let path = self.dir.join(format!("snap_{:09}.h5", sim.step));
        let tmp = path.with_extension("h5.tmp");
        // agreed by every rank: the file is complete before it is published
        let c = self.contacts.as_ref();
        write_h5(comm, &tmp, sim.step, sim.time, b, &self.mesh, c)?;
        let published = if comm.is_root() {
            self.publish(&tmp, &path, sim.step, sim.time)
        } else {
            Ok(())
        };
        comm.agree(published)?;
        Ok(comm.is_root().then_some(path))
    }

    /// Rank 0: move the finished file to its name and list it in the XDMF collection.
    fn publish(&mut self, tmp: &Path, path: &Path, step: u64, time: f64) -> Result<()> {
        super::h5par::trim_release(tmp)?;
        std::fs::rename(tmp, path).map_err(|e| Error::io(path, e))?;
        self.entries.retain(|e| e.step != step);
        self.entries.push(Entry {
            step,
            time,
            particles: self.buf.block.total,
            triangles: self.mesh.n_tris,
            vertex: !self.buf.block.gid_rows,
            contacts: self.contacts.as_ref().map_or(0, |c| c.total),
            domain: true,
        });
        let xmf = self
            .dir
            .parent()
            .unwrap_or(Path::new("."))
            .join("snapshots.xmf");
        super::write_atomic(&xmf, xdmf(&self.entries).as_bytes())
    }
}
/// XDMF 3 document: side by side in the domain, one temporal collection per kind of grid —
/// the simulation domain (one Hexahedron: the box, or the periodic cell's parallelepiped as it
/// deforms), the meshes' triangles (Triangle topology, a cell attribute `mesh` naming each
/// triangle's mesh; only with meshes), the contacts (Polyline topology, one 2-point line per
/// contact; only with `contacts: true`, `io::contacts`), then the particles (Polyvertex
/// topology, one vertex cell per particle) — each holding one uniform grid per snapshot. The
/// domain comes first because it is there at every time: ParaView's XDMF 2 reader takes the
/// times of the first collection and reads nothing when a later one has a time that it
/// lacks (contacts are absent at step 0, particles before a pour's first sphere).
///
/// Why this layout (issue 32): ParaView's three XDMF readers take any number of temporal
/// collections (a multiblock of one block per collection at each time), but meshio reads time
/// series only through its `TimeSeriesReader`, which takes the *last* temporal collection of
/// the domain and needs its entries to be uniform grids: with each time a spatial collection
/// of meshes and particles (the layout before) it found no grid at all. It also reads the
/// points and cells of the first entry only, for every time; so each particle grid also
/// carries the positions as a point attribute `pos`, which meshio reads at every time. A grid
/// with no rows (no particles yet in a pour) is left out of its collection: ParaView's XDMF 2
/// reader fails on an empty topology (its file is still written, and h5py reads it); a
/// collection without a grid at a time shows nothing there.
///
/// The Polyvertex topology names its connectivity: row k's vertex is point k, and `gid` holds
/// exactly 0..N−1 (row k is gid k), so it serves without a dataset of its own (`vertex` where
/// it does not). Without one, ParaView's Xdmf3 readers (`Xdmf3ReaderS`/`T`) and meshio make
/// no cells: the points carry the attributes but the Points and Surface representations show
/// nothing (`tests/suite/xdmf_readers.rs`).
pub fn xdmf(entries: &[Entry]) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n<Xdmf Version=\"3.0\">\n <Domain>\n",
    );
    let file = |e: &Entry| format!("snapshots/snap_{:09}.h5", e.step);
    let time = |e: &Entry| format!("<Time Value=\"{:.12e}\"/>", e.time);
    let mut collection = |name: &str, grids: Vec<String>| {
        // (a collection of no grid is left out)
        if !grids.is_empty() {
            s += &format!(
                "  <Grid Name=\"{name}\" GridType=\"Collection\" CollectionType=\"Temporal\">\n"
            );
            grids.iter().for_each(|g| s += g);
            s += "  </Grid>\n";
        }
    };
    let domain = entries.iter().filter(|e| e.domain);
    collection(
        "domain",
        domain
            .map(|e| domain_grid(&file(e), e.step, &time(e)))
            .collect(),
    );
    let meshes = entries.iter().filter(|e| e.triangles > 0);
    collection(
        "meshes",
        meshes
            .map(|e| mesh_grid(&file(e), e.triangles, e.step, &time(e)))
            .collect(),
    );
    let contacts = entries.iter().filter(|e| e.contacts > 0);
    collection(
        "contacts",
        contacts
            .map(|e| super::contacts::xdmf_grid(&file(e), e.contacts, e.step, &time(e)))
            .collect(),
    );
    let particles = entries.iter().filter(|e| e.particles > 0);
    collection(
        "particles",
        particles
            .map(|e| particle_grid(&file(e), e, &time(e)))
            .collect(),
    );
    s += " </Domain>\n</Xdmf>\n";
    s
}

/// One attribute of a grid: `dims` of the dataset `name` of file `f`, of type `nt` with
/// `prec` bytes, at the nodes (`Node`) or cells (`Cell`).
fn attribute(
    f: &str,
    name: &str,
    ty: &str,
    center: &str,
    dims: &str,
    nt: &str,
    prec: u32,
) -> String {
    format!("    <Attribute Name=\"{name}\" AttributeType=\"{ty}\" Center=\"{center}\">\n     <DataItem Dimensions=\"{dims}\" NumberType=\"{nt}\" Precision=\"{prec}\" Format=\"HDF\">{f}:/{name}</DataItem>\n    </Attribute>\n")
}

/// The particles' grid of snapshot `e` (file `f`).
fn particle_grid(f: &str, e: &Entry, time: &str) -> String {
    let (step, n) = (e.step, e.particles);
    let mut s = format!("   <Grid Name=\"step{step}\" GridType=\"Uniform\">\n    {time}\n");
    let conn = if e.vertex { VERTEX } else { "gid" };
    s += &format!("    <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"{n}\" NodesPerElement=\"1\">\n     <DataItem Dimensions=\"{n}\" NumberType=\"UInt\" Precision=\"8\" Format=\"HDF\">{f}:/{conn}</DataItem>\n    </Topology>\n");
    s += &format!("    <Geometry GeometryType=\"XYZ\">\n     <DataItem Dimensions=\"{n} 3\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">{f}:/pos</DataItem>\n    </Geometry>\n");
    let (v, d) = (format!("{n} 3"), format!("{n}"));
    for (name, ty, dims, nt, prec) in [
        ("radius", "Scalar", &d, "Float", 8),
        ("vel", "Vector", &v, "Float", 8),
        ("angvel", "Vector", &v, "Float", 8),
        ("gid", "Scalar", &d, "UInt", 8),
        ("ncontacts", "Scalar", &d, "UInt", 4),
        ("tag", "Scalar", &d, "UInt", 4),
        ("material", "Scalar", &d, "UInt", 4),
        ("force", "Vector", &v, "Float", 8),
        ("torque", "Vector", &v, "Float", 8),
        ("coordination", "Scalar", &d, "UInt", 4),
        // the positions again, as data: meshio's TimeSeriesReader reads the geometry of the
        // first time only
        ("pos", "Vector", &v, "Float", 8),
    ] {
        s += &attribute(f, name, ty, "Node", dims, nt, prec);
    }
    s += "   </Grid>\n";
    s
}

/// The domain's grid of snapshot file `f` (snapshot `step`, `time`): one hexahedron, its
/// connectivity written inline.
fn domain_grid(f: &str, step: u64, time: &str) -> String {
    format!(
        "   <Grid Name=\"domain{step}\" GridType=\"Uniform\">\n    {time}\n    <Topology TopologyType=\"Hexahedron\" NumberOfElements=\"1\">\n     <DataItem Dimensions=\"1 8\" NumberType=\"UInt\" Precision=\"4\" Format=\"XML\">0 1 2 3 4 5 6 7</DataItem>\n    </Topology>\n    <Geometry GeometryType=\"XYZ\">\n     <DataItem Dimensions=\"8 3\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">{f}:/{DOMAIN}</DataItem>\n    </Geometry>\n   </Grid>\n"
    )
}

/// The meshes' grid of one snapshot file `f` with `t` triangles (snapshot `step`, `time`).
fn mesh_grid(f: &str, t: usize, step: u64, time: &str) -> String {
    let v = 3 * t;
    format!(
        "   <Grid Name=\"meshes{step}\" GridType=\"Uniform\">\n    {time}\n    <Topology TopologyType=\"Triangle\" NumberOfElements=\"{t}\">\n     <DataItem Dimensions=\"{t} 3\" NumberType=\"UInt\" Precision=\"4\" Format=\"HDF\">{f}:/mesh_triangles</DataItem>\n    </Topology>\n    <Geometry GeometryType=\"XYZ\">\n     <DataItem Dimensions=\"{v} 3\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">{f}:/mesh_vertices</DataItem>\n    </Geometry>\n    <Attribute Name=\"mesh\" AttributeType=\"Scalar\" Center=\"Cell\">\n     <DataItem Dimensions=\"{t}\" NumberType=\"UInt\" Precision=\"4\" Format=\"HDF\">{f}:/mesh_id</DataItem>\n    </Attribute>\n   </Grid>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(step: u64, triangles: usize, vertex: bool) -> Entry {
        Entry {
            step,
            time: step as f64 * 1e-3,
            particles: 5,
            triangles,
            vertex,
            contacts: 0,
            domain: true,
        }
    }

    /// Every Polyvertex topology names its connectivity: `gid` (dense gids, row k is gid k),
    /// or the file's `vertex` dataset; grids and collections are balanced.
    #[test]
    fn xdmf_polyvertex_has_connectivity() {
        let x = xdmf(&[entry(10, 0, false), entry(20, 4, false), entry(30, 4, true)]);
        let topo = |step: u64, ds: &str| {
            format!("<Topology TopologyType=\"Polyvertex\" NumberOfElements=\"5\" NodesPerElement=\"1\">\n     <DataItem Dimensions=\"5\" NumberType=\"UInt\" Precision=\"8\" Format=\"HDF\">snapshots/snap_{step:09}.h5:/{ds}</DataItem>\n    </Topology>")
        };
        for (step, ds) in [(10, "gid"), (20, "gid"), (30, "vertex")] {
            assert_eq!(x.matches(&topo(step, ds)).count(), 1, "{x}");
        }
        assert_eq!(x.matches("TopologyType=\"Polyvertex\"").count(), 3);
        assert!(!x.contains("/>\n    <Geometry"), "{x}");
        assert_eq!(x.matches("<Grid ").count(), x.matches("</Grid>").count());
        assert_eq!(x.matches("<Topology ").count(), 8);
    }

    /// The domain holds one temporal collection per kind — the domain box first (every
    /// time: ParaView's XDMF 2 reader takes its times from the first collection and fails on a
    /// later one with a time it lacks), meshes, contacts, the particles last (where meshio's
    /// `TimeSeriesReader` looks) — each of uniform grids with their time; a grid without rows
    /// is left out (ParaView's XDMF 2 reader fails on an empty topology), and so is a
    /// collection without grids.
    #[test]
    fn xdmf_is_one_temporal_collection_per_kind() {
        let mut empty = entry(0, 4, false);
        empty.particles = 0;
        let mut es = [empty, entry(10, 4, false), entry(20, 4, false)];
        es[2].contacts = 7;
        let x = xdmf(&es);
        let top: Vec<&str> = x.lines().filter(|l| l.starts_with("  <Grid ")).collect();
        let names: Vec<&str> = top.iter().map(|l| l.split('"').nth(1).unwrap()).collect();
        assert_eq!(names, ["domain", "meshes", "contacts", "particles"], "{x}");
        assert!(top
            .iter()
            .all(|l| l.contains("CollectionType=\"Temporal\"")));
        assert_eq!(x.matches("TopologyType=\"Hexahedron\"").count(), 3);
        assert_eq!(x.matches("TopologyType=\"Triangle\"").count(), 3);
        assert_eq!(x.matches("TopologyType=\"Polyline\"").count(), 1);
        assert!(x.contains("snap_000000020.h5:/contacts/lines"));
        assert_eq!(x.matches("TopologyType=\"Polyvertex\"").count(), 2);
        assert!(!x.contains("snap_000000000.h5:/pos"), "{x}");
        assert!(!x.contains("Spatial"));
        // every uniform grid has its time
        assert_eq!(
            x.matches("GridType=\"Uniform\"").count(),
            x.matches("<Time ").count()
        );
        // nothing at all: no grid
        let mut e = entry(0, 0, false);
        (e.particles, e.domain) = (0, false);
        assert!(!xdmf(&[e]).contains("<Grid "));
    }

    /// A block whose rows are not its gids (the gather fallback) gets the `vertex` dataset of
    /// its row indices; dense rows do not.
    #[test]
    fn vertex_dataset_only_without_gid_rows() {
        let dir = std::env::temp_dir().join(format!("demhpc-snap-vertex-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for gid_rows in [true, false] {
            let mut b = Block::default();
            b.reset(3, 0, 3);
            b.gid_rows = gid_rows;
            b.gid = if gid_rows {
                vec![0, 1, 2]
            } else {
                vec![4, 7, 9]
            };
            let path = dir.join(format!("s{gid_rows}.h5"));
            let mesh = MeshRows {
                domain: vec![0.0; 24],
                ..MeshRows::default()
            };
            write_h5(&Comm::Serial, &path, 1, 0.5, &b, &mesh, None).unwrap();
            let f = hdf5::File::open(&path).unwrap();
            assert_eq!(f.link_exists(VERTEX), !gid_rows);
            if !gid_rows {
                let v = f.dataset(VERTEX).unwrap().read_raw::<u64>().unwrap();
                assert_eq!(v, [0, 1, 2]);
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Blocks [r·N/P, (r+1)·N/P) tile 0..N, and `block_of` finds the block of every row, also
    /// with more ranks than rows (empty blocks).
    #[test]
    fn row_blocks_tile_the_rows() {
        for total in [1u64, 2, 3, 10, 97, 1000] {
            for p in 1..=9usize {
                assert_eq!(block_start(0, p, total), 0);
                assert_eq!(block_start(p, p, total), total);
                for r in 0..p {
                    for g in block_start(r, p, total)..block_start(r + 1, p, total) {
                        assert_eq!(block_of(g, p, total), r, "N {total} P {p} gid {g}");
                    }
                }
            }
        }
    }
}
