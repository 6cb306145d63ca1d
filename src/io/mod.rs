//! Output files: the time series (`series.csv`), particle snapshots (HDF5 + XDMF for ParaView)
//! and the run's timing report (`timing.json`). HDF5 is touched here only.

pub mod checkpoint;
pub mod checksum;
pub mod contacts;
pub mod h5par;
pub mod series;
pub mod snapshot;

use crate::error::{Error, Result};
use std::path::Path;

/// Write `bytes` to `path` atomically: a temporary name in the same directory, then rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}
