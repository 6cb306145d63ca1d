//! `series.csv`: one row every `series_every` steps (CONVENTIONS.md: SI units in the column
//! names; forces are those the spheres exert on the walls).

use crate::error::{Error, Result};
use crate::sim::Stats;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// An append-only CSV file with a header. Opened for a restart at step S, it keeps the rows
/// up to S (later rows belong to the abandoned continuation and would be duplicated) and
/// appends after them.
struct Csv {
    out: BufWriter<File>,
    path: String,
}

impl Csv {
    fn open(path: &Path, header: &str, resume_at: Option<u64>) -> Result<Self> {
        let mut kept = format!("{header}\n");
        if let (Some(step), Ok(old)) = (resume_at, std::fs::read_to_string(path)) {
            // a file of an earlier version lacks the columns appended since: its rows get
            // them empty (pandas reads NaN), so every row has the header's columns
            let old_header = old.lines().next().unwrap_or("");
            let pad = match header.strip_prefix(old_header) {
                Some(more) if more.starts_with(',') => ",".repeat(more.matches(',').count()),
                _ => String::new(),
            };
            for line in old.lines().skip(1) {
                let row_step = line.split(',').next().and_then(|s| s.parse::<u64>().ok());
                if row_step.is_some_and(|s| s <= step) {
                    kept.push_str(line);
                    kept.push_str(&pad);
                    kept.push('\n');
                }
            }
        }
        super::write_atomic(path, kept.as_bytes())?;
        let f = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(Csv {
            out: BufWriter::new(f),
            path: path.display().to_string(),
        })
    }

    fn line(&mut self, line: &str) -> Result<()> {
        writeln!(self.out, "{line}").map_err(|e| Error::Io {
            path: self.path.clone(),
            msg: e.to_string(),
        })
    }

    fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(|e| Error::Io {
            path: self.path.clone(),
            msg: e.to_string(),
        })
    }
}

pub struct Series(Csv, bool);

/// The columns; `n_meshes`: force and torque (about the mesh's centre) per mesh after the walls;
/// `flow`: with flow engines, the particle count, then per engine (column prefix
/// `outlet_<name>` or `inlet_<name>`) the count and mass removed or inserted so far.
fn series_header(n_walls: usize, n_meshes: usize, flow: Option<&[String]>, more: Extra) -> String {
    let mut head =
        String::from("step,time_s,dt_s,ke_trans_J,ke_rot_J,n_contacts,unbalanced,max_overlap_rel");
    for w in 0..n_walls {
        head += &format!(",wall{w}_fx_N,wall{w}_fy_N,wall{w}_fz_N");
    }
    for m in 0..n_meshes {
        head += &format!(
            ",mesh{m}_fx_N,mesh{m}_fy_N,mesh{m}_fz_N,mesh{m}_tx_Nm,mesh{m}_ty_Nm,mesh{m}_tz_Nm"
        );
    }
    if let Some(names) = flow {
        head += ",n_particles";
        for n in names {
            head += &format!(",{n}_count,{n}_mass_kg");
        }
    }
    if more.cell {
        head += CELL_COLUMNS;
    }
    if more.servo {
        head += SERVO_COLUMNS;
    }
    if more.energy {
        head += ENERGY_COLUMNS;
    }
    if more.stage {
        // the cell's columns have a `stage` of their own (its servo's)
        head += if more.cell {
            ",protocol_stage"
        } else {
            ",stage"
        };
    }
    head + NETWORK_COLUMNS
}

/// The contact network's columns (issue 32; `sim::Network`), last in every series: the mean
/// coordination number of the particles (contacts with particles per particle), the
/// eigenvalues of Satake's fabric tensor (1/N_c) Σ n ⊗ n over the sphere–sphere contacts,
/// largest first (their sum is 1), and the fraction of those contacts at Coulomb's limit —
/// within `output.analysis_region` when the scene gives one; NaN without contacts.
pub const NETWORK_COLUMNS: &str =
    ",mean_coordination,fabric_e1,fabric_e2,fabric_e3,sliding_fraction";

/// The optional column groups of a scene: a deforming cell's, the servo walls', the energy
/// budget's, the protocol's stage (from 0: the stage that ran the row's step).
#[derive(Clone, Copy, Debug, Default)]
pub struct Extra {
    pub cell: bool,
    pub servo: bool,
    pub energy: bool,
    /// The protocol's stage (scenes with `stages`).
    pub stage: bool,
}

/// The servo walls' columns (`engines::servo_wall`): the stress of each axis from its walls'
/// forces (tension positive, Pa; NaN for a periodic axis) and the box's edges (wall to wall,
/// or the period).
pub const SERVO_COLUMNS: &str = ",wall_sxx_Pa,wall_syy_Pa,wall_szz_Pa,box_lx_m,box_ly_m,box_lz_m";

/// The energy budget's columns (scene `energy: true`; `sim::Budget`): kinetic and elastic
/// energy, dissipation by friction, dashpots, damping and CPM's damage (with compressive
/// plasticity), work of gravity and of the boundary, the energy inlets and outlets carried
/// in (net), and their total (kinetic + elastic + dissipated − work − flow), constant when
/// the budget closes.
pub const ENERGY_COLUMNS: &str = ",e_kinetic_J,e_elastic_J,d_friction_J,d_viscous_J,\
d_damping_J,d_damage_J,w_gravity_J,w_boundary_J,w_flow_J,e_total_J";

/// The deforming cell's columns (issue 23): the servo stage, log strains ln F_ii and the
/// volumetric strain ln det F, the contact (Love–Weber) stress tensor and its kinetic part
/// −(1/V) Σ m v′ ⊗ v′ (compression negative), the mean stress p = −tr σ/3 and deviator
/// q = σ₁ − σ₃ of the contact stress (> 0 in compression), coordination 2 N_c/N, the cell
/// (volume, H by rows), the diagonal of L, flips so far, the energies.
pub const CELL_COLUMNS: &str = ",stage,strain_xx,strain_yy,strain_zz,strain_vol,\
sxx_Pa,syy_Pa,szz_Pa,syz_Pa,sxz_Pa,sxy_Pa,kxx_Pa,kyy_Pa,kzz_Pa,kyz_Pa,kxz_Pa,kxy_Pa,p_Pa,q_Pa,\
coordination,volume_m3,hxx_m,hxy_m,hxz_m,hyx_m,hyy_m,hyz_m,hzx_m,hzy_m,hzz_m,\
lxx_per_s,lyy_per_s,lzz_per_s,flips,external_work_J";

impl Series {
    /// `flow`: the flow engines' column prefixes when the scene has flow engines (else no flow columns).
    pub fn create(
        path: &Path,
        n_walls: usize,
        n_meshes: usize,
        flow: Option<&[String]>,
        more: Extra,
    ) -> Result<Self> {
        Ok(Series(
            Csv::open(path, &series_header(n_walls, n_meshes, flow, more), None)?,
            flow.is_some(),
        ))
    }

    /// Continue the series of a restarted run at `step` (a missing file is created: restart
    /// into a new output directory).
    pub fn resume(
        path: &Path,
        n_walls: usize,
        n_meshes: usize,
        flow: Option<&[String]>,
        more: Extra,
        step: u64,
    ) -> Result<Self> {
        Ok(Series(
            Csv::open(
                path,
                &series_header(n_walls, n_meshes, flow, more),
                Some(step),
            )?,
            flow.is_some(),
        ))
    }

    pub fn row(&mut self, step: u64, time: f64, dt: f64, s: &Stats) -> Result<()> {
        let mut line = format!(
            "{step},{time:.12e},{dt:.6e},{:.9e},{:.9e},{},{:.6e},{:.6e}",
            s.ke_trans, s.ke_rot, s.n_contacts, s.unbalanced, s.max_overlap_rel
        );
        for f in &s.wall_force {
            line += &format!(",{:.9e},{:.9e},{:.9e}", f.x, f.y, f.z);
        }
        for (f, t) in &s.mesh_force {
            line += &format!(
                ",{:.9e},{:.9e},{:.9e},{:.9e},{:.9e},{:.9e}",
                f.x, f.y, f.z, t.x, t.y, t.z
            );
        }
        if self.1 {
            line += &format!(",{}", s.n_particles);
            for (n, m) in &s.flow {
                line += &format!(",{n},{m:.17e}");
            }
        }
        if let Some(c) = &s.cell {
            line += &c.columns();
        }
        if let Some(v) = &s.servo {
            for x in v {
                line += &format!(",{x:.12e}");
            }
        }
        if let Some(e) = &s.energy {
            line += &format!(
                ",{:.12e},{:.12e},{:.12e},{:.12e},{:.12e},{:.12e},{:.12e},{:.12e},{:.12e},{:.12e}",
                e.kinetic,
                e.elastic,
                e.friction,
                e.viscous,
                e.damping,
                e.damage,
                e.gravity,
                e.boundary,
                e.flow,
                e.total()
            );
        }
        if let Some(k) = s.stage {
            line += &format!(",{k}");
        }
        let nw = &s.network;
        line += &format!(
            ",{:.12e},{:.12e},{:.12e},{:.12e},{:.12e}",
            nw.coordination, nw.fabric[0], nw.fabric[1], nw.fabric[2], nw.sliding
        );
        self.0.line(&line)
    }

    pub fn flush(&mut self) -> Result<()> {
        self.0.flush()
    }
}

/// `strainer.csv` of the uniaxial strain controller (rank 0). Stress > 0 in tension, < 0 in
/// compression (CONVENTIONS.md); `stress_Pa` from the end-particle forces, `stress_lw_Pa` the
/// axial Love–Weber stress over the initial specimen volume A L₀.
pub struct StrainSeries(Csv);

pub const STRAIN_HEADER: &str = "step,time_s,strain,stress_Pa,stress_lw_Pa,lateral_strain,\
links_intact,links_damaged,links_broken,contacts_frictional,mean_omega";

impl StrainSeries {
    /// New file, or (restart at `resume_at`) keep the rows up to it and append.
    pub fn open(path: &Path, resume_at: Option<u64>) -> Result<Self> {
        Ok(StrainSeries(Csv::open(path, STRAIN_HEADER, resume_at)?))
    }

    pub fn row(&mut self, fields: &str) -> Result<()> {
        self.0.line(fields)
    }

    pub fn flush(&mut self) -> Result<()> {
        self.0.flush()
    }
}
