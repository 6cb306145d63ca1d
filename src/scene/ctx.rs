//! The parse context of a scene: turns a field path (`walls[2].normal`) into a
//! `file:line:col` error, and the checks every spec's validation uses. Engines, laws and walls
//! validate their own specs with it (`from_spec`).

use super::locate::Locations;
use crate::error::{Error, Result};
use crate::V3;
use std::path::{Path, PathBuf};

/// Something a scene names (a material): what [`Ctx::material`] looks up, so that the parse
/// context needs no material type (the laws' material files use the context).
pub trait Named {
    fn name(&self) -> &str;
}

/// Parse context: turns a field path into a positioned error.
pub struct Ctx<'a> {
    pub file: &'a Path,
    pub locs: Locations,
}

impl Ctx<'_> {
    pub fn err(&self, path: &str, msg: impl std::fmt::Display) -> Error {
        let (line, col) = self.locs.find(path);
        Error::Scene {
            file: self.file.display().to_string(),
            line,
            col,
            msg: format!("{path}: {msg}"),
        }
    }
    /// The path of a field of `base` as the scene writes it: `base.NAME` for the first of
    /// `names` (the demhpc name, then its aliases) that the file holds, else for the first name.
    pub fn written(&self, base: &str, names: &[&str]) -> String {
        names
            .iter()
            .map(|n| format!("{base}.{n}"))
            .find(|q| self.locs.has(q))
            .unwrap_or_else(|| format!("{base}.{}", names[0]))
    }
    pub fn positive(&self, path: &str, v: f64) -> Result<f64> {
        if v > 0.0 && v.is_finite() {
            Ok(v)
        } else {
            Err(self.err(path, format!("must be positive and finite, got {v}")))
        }
    }
    pub fn non_negative(&self, path: &str, v: f64) -> Result<f64> {
        if v >= 0.0 && v.is_finite() {
            Ok(v)
        } else {
            Err(self.err(path, format!("must be ≥ 0 and finite, got {v}")))
        }
    }
    pub fn finite3(&self, path: &str, v: [f64; 3]) -> Result<V3> {
        if v.iter().all(|x| x.is_finite()) {
            Ok(V3::from(v))
        } else {
            Err(self.err(path, format!("components must be finite, got {v:?}")))
        }
    }
    /// An engine's name (`p`: its path) that names `series.csv` columns.
    pub fn column_name(&self, p: &str, name: &str) -> Result<()> {
        let ok = |c: char| c.is_ascii_alphanumeric() || c == '_';
        if name.is_empty() || name.len() > 64 || !name.chars().all(ok) {
            return Err(self.err(
                &format!("{p}.name"),
                "must be 1 to 64 letters, digits or `_` (it names series.csv columns)",
            ));
        }
        Ok(())
    }
    /// The index of the material called `name` among `mats` (the scene's materials).
    pub fn material<M: Named>(&self, path: &str, name: &str, mats: &[M]) -> Result<u16> {
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
    pub fn data_path(&self, path: &str, rel: &str) -> Result<PathBuf> {
        let base = self.file.parent().unwrap_or(Path::new("."));
        let p = base.join(rel);
        match std::fs::metadata(&p) {
            Ok(m) if m.is_file() => Ok(p),
            Ok(_) => Err(self.err(
                path,
                format!(
                    "`{}` is not a regular file (a directory, FIFO, socket or device)",
                    p.display()
                ),
            )),
            Err(_) => Err(self.err(path, format!("file `{}` not found", p.display()))),
        }
    }
}
