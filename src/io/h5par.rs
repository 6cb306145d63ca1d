//! Row-block HDF5 transfers for files shared by all ranks (parallel HDF5 through MPI-IO): each
//! rank writes or reads `rows` consecutive rows starting at `offset` of a 1-D or 2-D dataset.
//! Writes are collective (`H5FD_MPIO_COLLECTIVE`: MPI-IO aggregates the ranks' blocks into
//! large contiguous writes), which the high-level `hdf5` crate does not expose — hence the
//! raw calls, kept here and nowhere else.

use hdf5::{Dataset, H5Type};
use hdf5_sys::h5d::{H5Dread, H5Dwrite};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::{H5FD_mpio_xfer_t, H5Pclose, H5Pcreate, H5Pset_dxpl_mpio};
use hdf5_sys::h5s::{
    H5S_seloper_t, H5Sclose, H5Screate_simple, H5Sget_simple_extent_dims,
    H5Sget_simple_extent_ndims, H5Sselect_hyperslab, H5Sselect_none,
};
use std::ffi::c_void;

/// Open HDF5 handles closed on drop (also on early error returns).
struct Handles {
    space: Vec<hid_t>,
    plist: Vec<hid_t>,
}

impl Drop for Handles {
    fn drop(&mut self) {
        // SAFETY: every id was returned by a successful H5S/H5P create call.
        unsafe {
            for &s in &self.space {
                H5Sclose(s);
            }
            for &p in &self.plist {
                H5Pclose(p);
            }
        }
    }
}

fn check(code: i64, what: &str) -> hdf5::Result<()> {
    if code < 0 {
        Err(hdf5::Error::from(format!("HDF5 {what} failed")))
    } else {
        Ok(())
    }
}

/// Set up (memory space, file space, transfer list) for rows `offset..offset+rows`.
fn selection(ds: &Dataset, offset: usize, rows: usize, collective: bool) -> hdf5::Result<Handles> {
    let mut h = Handles {
        space: Vec::new(),
        plist: Vec::new(),
    };
    // SAFETY: plain HDF5 C calls on valid ids; arrays outlive the calls.
    unsafe {
        let fspace = hdf5_sys::h5d::H5Dget_space(ds.id());
        check(fspace, "H5Dget_space")?;
        h.space.push(fspace);
        let ndim = H5Sget_simple_extent_ndims(fspace);
        check(ndim as i64, "H5Sget_simple_extent_ndims")?;
        let ndim = ndim as usize;
        if !(1..=2).contains(&ndim) {
            return Err("row transfers need a 1-D or 2-D dataset".into());
        }
        let mut dims = [0u64; 2];
        H5Sget_simple_extent_dims(fspace, dims.as_mut_ptr(), std::ptr::null_mut());
        if (offset + rows) as u64 > dims[0] {
            return Err(format!(
                "rows {}..{} outside a dataset of {} rows",
                offset,
                offset + rows,
                dims[0]
            )
            .into());
        }
        let start = [offset as u64, 0];
        let count = [rows as u64, dims[1]];
        let mspace = H5Screate_simple(ndim as i32, count.as_ptr(), std::ptr::null());
        check(mspace, "H5Screate_simple")?;
        h.space.push(mspace);
        if rows == 0 {
            check(H5Sselect_none(fspace) as i64, "H5Sselect_none")?;
            check(H5Sselect_none(mspace) as i64, "H5Sselect_none")?;
        } else {
            check(
                H5Sselect_hyperslab(
                    fspace,
                    H5S_seloper_t::H5S_SELECT_SET,
                    start.as_ptr(),
                    std::ptr::null(),
                    count.as_ptr(),
                    std::ptr::null(),
                ) as i64,
                "H5Sselect_hyperslab",
            )?;
        }
        let dxpl = H5Pcreate(*hdf5::globals::H5P_DATASET_XFER);
        check(dxpl, "H5Pcreate")?;
        h.plist.push(dxpl);
        if collective {
            check(
                H5Pset_dxpl_mpio(dxpl, H5FD_mpio_xfer_t::H5FD_MPIO_COLLECTIVE) as i64,
                "H5Pset_dxpl_mpio",
            )?;
        }
    }
    Ok(h)
}

/// Write `data` (`rows × cols` row-major) at row `offset`. With `collective`, every rank of the
/// file's communicator must call it (ranks with nothing to write pass an empty slice).
pub fn write_rows<T: H5Type>(
    ds: &Dataset,
    offset: usize,
    cols: usize,
    data: &[T],
    collective: bool,
) -> hdf5::Result<()> {
    let rows = data.len() / cols.max(1);
    debug_assert_eq!(rows * cols.max(1), data.len());
    hdf5::sync::sync(|| {
        let h = selection(ds, offset, rows, collective)?;
        let mtype = hdf5::Datatype::from_type::<T>()?;
        // SAFETY: the memory space has exactly `data.len()` elements of type T.
        let code = unsafe {
            H5Dwrite(
                ds.id(),
                mtype.id(),
                h.space[1],
                h.space[0],
                h.plist[0],
                data.as_ptr() as *const c_void,
            )
        };
        check(code as i64, "H5Dwrite")
    })
}

/// Read `rows` rows of `cols` values starting at row `offset` (independent transfer).
pub fn read_rows<T: H5Type + Default + Clone>(
    ds: &Dataset,
    offset: usize,
    rows: usize,
    cols: usize,
) -> hdf5::Result<Vec<T>> {
    let mut out = vec![T::default(); rows * cols];
    if rows == 0 {
        return Ok(out);
    }
    hdf5::sync::sync(|| {
        let h = selection(ds, offset, rows, false)?;
        let mtype = hdf5::Datatype::from_type::<T>()?;
        // SAFETY: `out` has room for exactly the selected `rows × cols` elements.
        let code = unsafe {
            H5Dread(
                ds.id(),
                mtype.id(),
                h.space[1],
                h.space[0],
                h.plist[0],
                out.as_mut_ptr() as *mut c_void,
            )
        };
        check(code as i64, "H5Dread")
    })?;
    Ok(out)
}
