//! Particle snapshots: one HDF5 file per snapshot (`snapshots/snap_<step>.h5`, datasets `gid`,
//! `pos`, `vel`, `angvel`, `radius`, `ncontacts`, sorted by gid) and one XDMF file
//! (`snapshots.xmf`) listing them as a temporal collection of `Polyvertex` grids, which ParaView
//! opens directly (CONVENTIONS.md "Files the project writes").

use crate::error::{Error, Result};
use crate::forces::contact_counts;
use crate::sim::Simulation;
use std::path::{Path, PathBuf};

/// What one snapshot holds, gathered and sorted by gid.
pub struct SnapshotData {
    pub step: u64,
    pub time: f64,
    pub gid: Vec<u64>,
    pub pos: Vec<f64>,
    pub vel: Vec<f64>,
    pub angvel: Vec<f64>,
    pub radius: Vec<f64>,
    pub ncontacts: Vec<u32>,
}

/// `f64`s per particle in the gather message: gid, pos, vel, angvel, radius, ncontacts.
const REC: usize = 12;

impl SnapshotData {
    /// Gather the owned particles of every rank on rank 0, sorted by gid (collective; `None`
    /// on the other ranks).
    pub fn from_sim(sim: &Simulation) -> Option<Self> {
        let ps = &sim.ps;
        let n = ps.n_owned;
        let mut counts = Vec::new();
        contact_counts(n, &sim.pairs, &sim.wall_pairs, &mut counts);
        let mut buf = Vec::with_capacity(n * REC);
        for (i, &c) in counts.iter().enumerate() {
            buf.push(f64::from_bits(ps.gid[i]));
            for v in [ps.pos[i], ps.vel[i], ps.angvel[i]] {
                buf.extend_from_slice(v.as_slice());
            }
            buf.push(ps.radius[i]);
            buf.push(c as f64);
        }
        let all = sim.comm.gather_f64s(&buf)?;
        let mut recs: Vec<&[f64]> = all.chunks_exact(REC).collect();
        recs.sort_unstable_by_key(|r| r[0].to_bits());
        let flat = |k: usize| -> Vec<f64> {
            recs.iter()
                .flat_map(|r| [r[k], r[k + 1], r[k + 2]])
                .collect()
        };
        Some(SnapshotData {
            step: sim.step,
            time: sim.time,
            gid: recs.iter().map(|r| r[0].to_bits()).collect(),
            pos: flat(1),
            vel: flat(4),
            angvel: flat(7),
            radius: recs.iter().map(|r| r[10]).collect(),
            ncontacts: recs.iter().map(|r| r[11] as u32).collect(),
        })
    }
}

fn h5err(path: &Path) -> impl Fn(hdf5::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

/// Write one snapshot file.
pub fn write_h5(path: &Path, d: &SnapshotData) -> Result<()> {
    let n = d.gid.len();
    let tmp = path.with_extension("h5.tmp");
    let e = h5err(&tmp);
    {
        let f = hdf5::File::create(&tmp).map_err(&e)?;
        f.new_dataset::<u64>()
            .shape([n])
            .create("gid")
            .map_err(&e)?
            .write_raw(&d.gid)
            .map_err(&e)?;
        for (name, v, unit) in [
            ("pos", &d.pos, "m"),
            ("vel", &d.vel, "m/s"),
            ("angvel", &d.angvel, "rad/s"),
        ] {
            let ds = f
                .new_dataset::<f64>()
                .shape([n, 3])
                .create(name)
                .map_err(&e)?;
            ds.write_raw(v).map_err(&e)?;
            write_unit(&ds, unit).map_err(&e)?;
        }
        let ds = f
            .new_dataset::<f64>()
            .shape([n])
            .create("radius")
            .map_err(&e)?;
        ds.write_raw(&d.radius).map_err(&e)?;
        write_unit(&ds, "m").map_err(&e)?;
        f.new_dataset::<u32>()
            .shape([n])
            .create("ncontacts")
            .map_err(&e)?
            .write_raw(&d.ncontacts)
            .map_err(&e)?;
        f.new_attr::<u64>()
            .create("step")
            .map_err(&e)?
            .write_scalar(&d.step)
            .map_err(&e)?;
        f.new_attr::<f64>()
            .create("time")
            .map_err(&e)?
            .write_scalar(&d.time)
            .map_err(&e)?;
        let ver: hdf5::types::VarLenUnicode = env!("CARGO_PKG_VERSION")
            .parse()
            .map_err(|_| Error::io(&tmp, "version string"))?;
        f.new_attr::<hdf5::types::VarLenUnicode>()
            .create("demhpc_version")
            .map_err(&e)?
            .write_scalar(&ver)
            .map_err(&e)?;
    }
    std::fs::rename(&tmp, path).map_err(|er| Error::io(path, er))
}

fn write_unit(ds: &hdf5::Dataset, unit: &str) -> hdf5::Result<()> {
    let u: hdf5::types::VarLenUnicode = unit.parse().map_err(|_| hdf5::Error::from("unit"))?;
    ds.new_attr::<hdf5::types::VarLenUnicode>()
        .create("unit")?
        .write_scalar(&u)
}

/// Keeps the list of written snapshots and rewrites `snapshots.xmf` after each.
pub struct SnapshotWriter {
    dir: PathBuf,
    entries: Vec<(u64, f64, usize)>,
}

impl SnapshotWriter {
    /// `root`: this rank writes files (rank 0); the others only take part in the gathers.
    pub fn new(out_dir: &Path, root: bool) -> Result<Self> {
        let dir = out_dir.join("snapshots");
        if root {
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        }
        Ok(SnapshotWriter {
            dir,
            entries: Vec::new(),
        })
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
            let n = f.dataset("gid").map_err(h5err(&p))?.shape()[0];
            w.entries.push((s, time, n));
        }
        Ok(w)
    }

    /// Write a snapshot of the current state (collective: every rank calls it; rank 0
    /// writes). Returns the file written (on rank 0).
    pub fn write(&mut self, sim: &Simulation) -> Result<Option<PathBuf>> {
        let Some(d) = SnapshotData::from_sim(sim) else {
            return Ok(None);
        };
        let path = self.dir.join(format!("snap_{:09}.h5", d.step));
        write_h5(&path, &d)?;
        self.entries.retain(|e| e.0 != d.step);
        self.entries.push((d.step, d.time, d.gid.len()));
        let xmf = self
            .dir
            .parent()
            .unwrap_or(Path::new("."))
            .join("snapshots.xmf");
        super::write_atomic(&xmf, xdmf(&self.entries).as_bytes())?;
        Ok(Some(path))
    }
}

/// XDMF 3 document: a temporal collection of particle grids (Polyvertex topology).
pub fn xdmf(entries: &[(u64, f64, usize)]) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n<Xdmf Version=\"3.0\">\n <Domain>\n  <Grid Name=\"particles\" GridType=\"Collection\" CollectionType=\"Temporal\">\n",
    );
    for &(step, time, n) in entries {
        let f = format!("snapshots/snap_{step:09}.h5");
        s += &format!("   <Grid Name=\"step{step}\" GridType=\"Uniform\">\n    <Time Value=\"{time:.12e}\"/>\n");
        s += &format!("    <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"{n}\" NodesPerElement=\"1\"/>\n");
        s += &format!("    <Geometry GeometryType=\"XYZ\">\n     <DataItem Dimensions=\"{n} 3\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">{f}:/pos</DataItem>\n    </Geometry>\n");
        for (name, ty, dims, nt, prec) in [
            ("radius", "Scalar", format!("{n}"), "Float", 8),
            ("vel", "Vector", format!("{n} 3"), "Float", 8),
            ("angvel", "Vector", format!("{n} 3"), "Float", 8),
            ("gid", "Scalar", format!("{n}"), "UInt", 8),
            ("ncontacts", "Scalar", format!("{n}"), "UInt", 4),
        ] {
            s += &format!("    <Attribute Name=\"{name}\" AttributeType=\"{ty}\" Center=\"Node\">\n     <DataItem Dimensions=\"{dims}\" NumberType=\"{nt}\" Precision=\"{prec}\" Format=\"HDF\">{f}:/{name}</DataItem>\n    </Attribute>\n");
        }
        s += "   </Grid>\n";
    }
    s += "  </Grid>\n </Domain>\n</Xdmf>\n";
    s
}
