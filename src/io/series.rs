//! `series.csv`: one row every `series_every` steps (CONVENTIONS.md: SI units in the column
//! names; forces are those the spheres exert on the walls).

use crate::error::{Error, Result};
use crate::sim::Stats;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

pub struct Series {
    out: BufWriter<File>,
    path: String,
}

impl Series {
    pub fn create(path: &Path, n_walls: usize) -> Result<Self> {
        let f = File::create(path).map_err(|e| Error::io(path, e))?;
        let mut out = BufWriter::new(f);
        let mut head = String::from(
            "step,time_s,dt_s,ke_trans_J,ke_rot_J,n_contacts,unbalanced,max_overlap_rel",
        );
        for w in 0..n_walls {
            head += &format!(",wall{w}_fx_N,wall{w}_fy_N,wall{w}_fz_N");
        }
        writeln!(out, "{head}").map_err(|e| Error::io(path, e))?;
        Ok(Series {
            out,
            path: path.display().to_string(),
        })
    }

    /// Continue the series of a restarted run: keep the rows up to `step` (later rows belong to
    /// the abandoned continuation and would be duplicated), then append. Creates the file when
    /// there is none (restart into a new output directory).
    pub fn resume(path: &Path, n_walls: usize, step: u64) -> Result<Self> {
        let Ok(old) = std::fs::read_to_string(path) else {
            return Self::create(path, n_walls);
        };
        let mut kept = String::new();
        for (k, line) in old.lines().enumerate() {
            let row_step = line.split(',').next().and_then(|s| s.parse::<u64>().ok());
            if k == 0 || row_step.is_some_and(|s| s <= step) {
                kept.push_str(line);
                kept.push('\n');
            }
        }
        super::write_atomic(path, kept.as_bytes())?;
        let f = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(Series {
            out: BufWriter::new(f),
            path: path.display().to_string(),
        })
    }

    pub fn row(&mut self, step: u64, time: f64, dt: f64, s: &Stats) -> Result<()> {
        let mut line = format!(
            "{step},{time:.12e},{dt:.6e},{:.9e},{:.9e},{},{:.6e},{:.6e}",
            s.ke_trans, s.ke_rot, s.n_contacts, s.unbalanced, s.max_overlap_rel
        );
        for f in &s.wall_force {
            line += &format!(",{:.9e},{:.9e},{:.9e}", f.x, f.y, f.z);
        }
        writeln!(self.out, "{line}").map_err(|e| Error::Io {
            path: self.path.clone(),
            msg: e.to_string(),
        })
    }

    pub fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(|e| Error::Io {
            path: self.path.clone(),
            msg: e.to_string(),
        })
    }
}

/// `strainer.csv` of the uniaxial strain controller (rank 0). Stress > 0 in tension, < 0 in
/// compression (CONVENTIONS.md); `stress_Pa` from the end-particle forces, `stress_lw_Pa` the
/// axial Love–Weber stress over the initial specimen volume A L₀.
pub struct StrainSeries {
    out: BufWriter<File>,
    path: String,
}

pub const STRAIN_HEADER: &str = "step,time_s,strain,stress_Pa,stress_lw_Pa,lateral_strain,\
links_intact,links_damaged,links_broken,contacts_frictional,mean_omega";

impl StrainSeries {
    /// New file, or (restart) keep the rows up to `step` and append, as [`Series::resume`].
    pub fn open(path: &Path, resume_at: Option<u64>) -> Result<Self> {
        let mut kept = format!("{STRAIN_HEADER}\n");
        if let (Some(step), Ok(old)) = (resume_at, std::fs::read_to_string(path)) {
            for line in old.lines().skip(1) {
                let row_step = line.split(',').next().and_then(|s| s.parse::<u64>().ok());
                if row_step.is_some_and(|s| s <= step) {
                    kept.push_str(line);
                    kept.push('\n');
                }
            }
        }
        super::write_atomic(path, kept.as_bytes())?;
        let f = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(StrainSeries {
            out: BufWriter::new(f),
            path: path.display().to_string(),
        })
    }

    pub fn row(&mut self, fields: &str) -> Result<()> {
        writeln!(self.out, "{fields}").map_err(|e| Error::Io {
            path: self.path.clone(),
            msg: e.to_string(),
        })
    }

    pub fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(|e| Error::Io {
            path: self.path.clone(),
            msg: e.to_string(),
        })
    }
}
