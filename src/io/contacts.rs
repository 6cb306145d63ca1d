//! The contact network of a snapshot (issue 32; scene `Output(contacts: true)`): Yade's
//! VTKRecorder `intr`, LIGGGHTS' `dump local` of `pair/gran/local` and `wall/gran/local`. One
//! row per contact in the group `contacts/` of the snapshot file, each contact once:
//!
//! | dataset | type | what |
//! |---|---|---|
//! | `kind` | u32 [C] | 0 sphere–sphere, 1 sphere–plane wall, 2 sphere–mesh facet |
//! | `id1` | u64 [C] | gid of body 1: the particle of lower gid, or the particle of a wall contact |
//! | `id2` | u64 [C] | gid of particle 2, or the wall's index (`walls`), or the facet's (the `mesh_*` rows) |
//! | `point` | f64 [C, 3] | contact point [m] |
//! | `normal` | f64 [C, 3] | unit normal from body 1 to body 2 (the law's, of the last step) |
//! | `force` | f64 [C, 3] | force on body 1 [N] (body 2 takes the opposite) |
//! | `fn` | f64 [C] | normal force −F · n [N], compression positive |
//! | `ft` | f64 [C] | tangential force magnitude [N] |
//! | `overlap` | f64 [C] | overlap [m] (negative: a stretched CPM link) |
//! | `damage` | f64 [C] | CPM damage ω (0 for frictional contacts) |
//! | `sliding` | u32 [C] | 1 where Coulomb's limit held the tangential force |
//! | `ends` | f64 [2C, 3] | the line of contact k: rows 2k, 2k + 1 — the centre of body 1 and that of body 2 as seen from it (across a periodic boundary too), or the contact point on a wall |
//! | `lines` | u64 [C, 2] | 2k, 2k + 1: the XDMF `Polyline` connectivity of the lines |
//!
//! (`sim::ContactView` defines each quantity.) The rows are sorted by (id1, kind, id2), the
//! same file on any rank count: each rank takes the contacts whose particle 1 it owns (pairs
//! with another rank's ghost exist on both ranks, and each is taken once) and sends them to
//! the rank whose particle rows hold id1 (the snapshot's row blocks, one all-to-all), which
//! sorts them; the blocks follow in rank order (an exclusive scan of the counts) and are
//! written collectively like the particles' datasets. With sparse gids (inlets, outlets) rank
//! 0 gathers and sorts all, as the particles' fallback does. Only at snapshot steps, only
//! when asked: the step itself records nothing more (the pair forces of recorded steps).

use super::h5par::ParFile;
use super::h5par::{block_of, dataset};
use crate::domain::comm::{exclusive_sums, Comm};
use crate::sim::{ContactView, Simulation};
use crate::V3;

/// `f64`s per contact in the redistribution message: kind, id1 (bits), id2 (bits), point,
/// normal, force, fn, ft, overlap, damage, sliding, the two ends.
const REC: usize = 23;

/// The group of the contact datasets in a snapshot file.
pub const GROUP: &str = "contacts";

/// This rank's rows of the contact datasets (rows `first..first + n` of `total`), and the
/// buffers of the redistribution, kept from one snapshot to the next.
#[derive(Default)]
pub struct ContactRows {
    pub total: usize,
    pub first: usize,
    kind: Vec<u32>,
    id1: Vec<u64>,
    id2: Vec<u64>,
    point: Vec<f64>,
    normal: Vec<f64>,
    force: Vec<f64>,
    f_n: Vec<f64>,
    f_t: Vec<f64>,
    overlap: Vec<f64>,
    damage: Vec<f64>,
    sliding: Vec<u32>,
    ends: Vec<f64>,
    lines: Vec<u64>,
    send: Vec<f64>,
    /// The records received (scratch of `local` before that).
    recv: Vec<f64>,
    /// The rows' order (the records' destination ranks in `local`).
    order: Vec<u32>,
}

/// One contact as a record (see [`REC`]).
fn record(out: &mut Vec<f64>, kind: u32, ids: (u64, u64), v: &ContactView, ends: (V3, V3)) {
    out.extend([kind as f64, f64::from_bits(ids.0), f64::from_bits(ids.1)]);
    for x in [v.point, v.normal, v.force] {
        out.extend(x.iter());
    }
    out.extend([v.f_n, v.f_t, v.overlap, v.damage, v.sliding as u32 as f64]);
    out.extend(ends.0.iter().chain(ends.1.iter()));
}

impl ContactRows {
    /// This rank's contacts as records in `self.send`, grouped by the rank their rows go to
    /// (`dest(id1)`); returns the number of `f64`s for each rank.
    fn local(&mut self, sim: &Simulation, dest: impl Fn(u64) -> usize) -> Vec<usize> {
        let (ps, n) = (&sim.ps, sim.ps.n_owned);
        // the records in list order in `recv` (scratch here), their ranks in `order`
        let (recs, dests) = (&mut self.recv, &mut self.order);
        recs.clear();
        dests.clear();
        let (pairs, walls) = (&sim.pairs, &sim.wall_pairs);
        for k in 0..pairs.len() {
            let (i, j) = (pairs.i[k] as usize, pairs.j[k] as usize);
            // each contact once: on the rank owning particle 1
            if pairs.active[k] && i < n {
                let v = sim.sphere_contact(k);
                let ends = (ps.pos[i], ps.pos[i] + pairs.branch(k, &ps.pos));
                record(recs, 0, (ps.gid[i], ps.gid[j]), &v, ends);
                dests.push(dest(ps.gid[i]) as u32);
            }
        }
        let nw = sim.walls.len();
        for k in 0..walls.len() {
            if walls.active[k] {
                let (i, w) = (walls.i[k] as usize, walls.j[k] as u64);
                let v = sim.wall_contact_view(k);
                let (kind, id2) = match (w as usize) < nw {
                    true => (1, w),
                    false => (2, w - nw as u64),
                };
                record(recs, kind, (ps.gid[i], id2), &v, (ps.pos[i], v.point));
                dests.push(dest(ps.gid[i]) as u32);
            }
        }
        // counting sort by destination rank
        let mut counts = vec![0usize; sim.comm.size()];
        for &d in dests.iter() {
            counts[d as usize] += REC;
        }
        let mut at = exclusive_sums(&counts);
        self.send.clear();
        self.send.resize(recs.len(), 0.0);
        for (r, &d) in recs.chunks_exact(REC).zip(dests.iter()) {
            let a = &mut at[d as usize];
            self.send[*a..*a + REC].copy_from_slice(r);
            *a += REC;
        }
        counts
    }

    /// Collect this rank's rows (collective). `rows`: the snapshot's particle row blocks
    /// (`Some((total particles))` when row k is gid k, so contacts go to the rank whose block
    /// holds id1), else rank 0 takes every contact.
    pub fn collect(&mut self, sim: &Simulation, dense: Option<u64>) {
        let comm: &Comm = &sim.comm;
        let p = comm.size();
        match dense {
            Some(n_particles) => {
                let dest = |g: u64| block_of(g, p, n_particles.max(1));
                let counts = self.local(sim, dest);
                let mut recv = std::mem::take(&mut self.recv);
                comm.all_to_all_f64s(&self.send, &counts, &mut recv);
                self.recv = recv;
            }
            None => {
                self.local(sim, |_| 0);
                self.recv = comm.gather_f64s(&self.send).unwrap_or_default();
            }
        }
        let n = self.recv.len() / REC;
        self.total = comm.sum_u64(n as u64) as usize;
        self.first = comm.exscan_u64(n as u64) as usize;
        self.fill(n);
    }

    /// The rows from the received records, sorted by (id1, kind, id2).
    fn fill(&mut self, n: usize) {
        let r = |k: usize| &self.recv[k * REC..(k + 1) * REC];
        let key = |k: usize| (r(k)[1].to_bits(), r(k)[0] as u32, r(k)[2].to_bits());
        self.order.clear();
        self.order.extend(0..n as u32);
        let mut order = std::mem::take(&mut self.order);
        order.sort_unstable_by_key(|&k| key(k as usize));
        self.order = order;
        for v in [&mut self.kind, &mut self.sliding] {
            v.clear();
        }
        for v in [&mut self.id1, &mut self.id2, &mut self.lines] {
            v.clear();
        }
        for v in [
            &mut self.point,
            &mut self.normal,
            &mut self.force,
            &mut self.f_n,
            &mut self.f_t,
            &mut self.overlap,
            &mut self.damage,
            &mut self.ends,
        ] {
            v.clear();
        }
        for (row, &k) in self.order.iter().enumerate() {
            let x = &self.recv[k as usize * REC..(k as usize + 1) * REC];
            self.kind.push(x[0] as u32);
            self.id1.push(x[1].to_bits());
            self.id2.push(x[2].to_bits());
            self.point.extend_from_slice(&x[3..6]);
            self.normal.extend_from_slice(&x[6..9]);
            self.force.extend_from_slice(&x[9..12]);
            self.f_n.push(x[12]);
            self.f_t.push(x[13]);
            self.overlap.push(x[14]);
            self.damage.push(x[15]);
            self.sliding.push(x[16] as u32);
            self.ends.extend_from_slice(&x[17..23]);
            let g = 2 * (self.first + row) as u64;
            self.lines.extend([g, g + 1]);
        }
    }

    /// Write the group `contacts` and its datasets into `w`: this rank's rows, one agreed
    /// step per dataset (collective: every rank calls it).
    pub fn write(&self, w: &ParFile) -> crate::error::Result<()> {
        let (c, o, coll) = (self.total, self.first, w.collective());
        w.step(|f| f.create_group(GROUP).map(|_| ()))?;
        let ds = |name: &str| format!("{GROUP}/{name}");
        macro_rules! put {
            ($name:expr, $rows:expr, $at:expr, $cols:expr, $data:expr, $unit:expr) => {
                w.step(|f| dataset(f, &ds($name), $rows, $at, $cols, $data, $unit, coll))?
            };
        }
        put!("kind", c, o, 1, &self.kind, None);
        put!("id1", c, o, 1, &self.id1, None);
        put!("id2", c, o, 1, &self.id2, None);
        put!("point", c, o, 3, &self.point, Some("m"));
        put!("normal", c, o, 3, &self.normal, None);
        put!("force", c, o, 3, &self.force, Some("N"));
        put!("fn", c, o, 1, &self.f_n, Some("N"));
        put!("ft", c, o, 1, &self.f_t, Some("N"));
        put!("overlap", c, o, 1, &self.overlap, Some("m"));
        put!("damage", c, o, 1, &self.damage, None);
        put!("sliding", c, o, 1, &self.sliding, None);
        put!("ends", 2 * c, 2 * o, 3, &self.ends, Some("m"));
        put!("lines", c, o, 2, &self.lines, None);
        Ok(())
    }
}

/// The XDMF grid of the contacts of snapshot file `f` (`c` contacts, snapshot `step`): lines
/// between the bodies' centres (`Polyline` of 2 nodes), the quantities as cell attributes.
pub fn xdmf_grid(f: &str, c: usize, step: u64, time: &str) -> String {
    let mut s = format!("   <Grid Name=\"contacts{step}\" GridType=\"Uniform\">\n    {time}\n");
    s += &format!("    <Topology TopologyType=\"Polyline\" NumberOfElements=\"{c}\" NodesPerElement=\"2\">\n     <DataItem Dimensions=\"{c} 2\" NumberType=\"UInt\" Precision=\"8\" Format=\"HDF\">{f}:/{GROUP}/lines</DataItem>\n    </Topology>\n");
    s += &format!("    <Geometry GeometryType=\"XYZ\">\n     <DataItem Dimensions=\"{} 3\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">{f}:/{GROUP}/ends</DataItem>\n    </Geometry>\n", 2 * c);
    let (v, d) = (format!("{c} 3"), format!("{c}"));
    for (name, ty, dims, nt, prec) in [
        ("fn", "Scalar", &d, "Float", 8),
        ("ft", "Scalar", &d, "Float", 8),
        ("force", "Vector", &v, "Float", 8),
        ("normal", "Vector", &v, "Float", 8),
        ("point", "Vector", &v, "Float", 8),
        ("overlap", "Scalar", &d, "Float", 8),
        ("damage", "Scalar", &d, "Float", 8),
        ("sliding", "Scalar", &d, "UInt", 4),
        ("kind", "Scalar", &d, "UInt", 4),
        ("id1", "Scalar", &d, "UInt", 8),
        ("id2", "Scalar", &d, "UInt", 8),
    ] {
        s += &format!("    <Attribute Name=\"{name}\" AttributeType=\"{ty}\" Center=\"Cell\">\n     <DataItem Dimensions=\"{dims}\" NumberType=\"{nt}\" Precision=\"{prec}\" Format=\"HDF\">{f}:/{GROUP}/{name}</DataItem>\n    </Attribute>\n");
    }
    s += "   </Grid>\n";
    s
}
