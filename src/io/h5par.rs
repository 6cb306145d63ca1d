//! Row-block HDF5 transfers for files shared by all ranks (parallel HDF5 through MPI-IO): each
//! rank writes or reads `rows` consecutive rows starting at `offset` of a 1-D or 2-D dataset.
//! Writes are collective (`H5FD_MPIO_COLLECTIVE`: MPI-IO aggregates the ranks' blocks into
//! large contiguous writes), which the high-level `hdf5` crate does not expose — hence the
//! raw calls, kept here and nowhere else.

use hdf5::types::VarLenUnicode;
use hdf5::{Dataset, File, H5Type};
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
        let cause = hdf5::Error::query()
            .map(|e| os_cause(&e))
            .unwrap_or_default();
        Err(hdf5::Error::from(format!("HDF5 {what} failed{cause}")))
    } else {
        Ok(())
    }
}

/// The operating system's (or MPI-IO's) reason for an HDF5 failure, found deep in HDF5's
/// error stack (`errno = 28, error message = 'No space left on device'`, or MPI's error
/// string), as `": reason"`; empty when the stack holds none. What a user needs to act.
pub fn os_cause(e: &hdf5::Error) -> String {
    let Some(stack) = e.stack() else {
        return String::new();
    };
    for frame in stack.iter() {
        let d = frame.desc();
        for key in ["error message = '", "MPI error string is '"] {
            if let Some(k) = d.find(key) {
                let rest = &d[k + key.len()..];
                let msg = rest.split('\'').next().unwrap_or(rest).trim();
                if !msg.is_empty() {
                    return format!(": {msg}");
                }
            }
        }
    }
    String::new()
}

/// Why writes under `path` may fail, as the file system tells it, for errors whose OS reason
/// HDF5 does not keep (MPI-IO prints its own to stderr, HDF5 keeps only "file write
/// failed"): a (nearly) full file system, or a file size limit (`ulimit -f`).
fn diagnose(path: &Path) -> String {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut why = Vec::new();
    if let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) {
        // SAFETY: statvfs writes into the zeroed struct; `c` is a valid C string.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0 {
            let free = st.f_bavail as u128 * st.f_frsize as u128;
            if free < 1 << 20 {
                why.push(format!(
                    "no space left on the file system ({free} bytes free)"
                ));
            }
        }
    }
    // SAFETY: getrlimit writes into the struct.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut rl) } == 0
        && rl.rlim_cur != libc::RLIM_INFINITY
    {
        why.push(format!(
            "files are limited to {} bytes (ulimit -f)",
            rl.rlim_cur
        ));
    }
    match why.is_empty() {
        true => ": an I/O error (the MPI-IO message above, if any, says which)".into(),
        false => format!(": {}", why.join("; ")),
    }
}

/// An HDF5 error on `path` as a demhpc I/O error: HDF5's description and the reason, from
/// HDF5's error stack or else from the file system ([`diagnose`]).
pub fn io_error(path: &Path, e: hdf5::Error) -> Error {
    let mut cause = os_cause(&e);
    if cause.is_empty() {
        cause = diagnose(path);
    }
    // HDF5's own text may go on over lines with the call's details (`time = …, filename = …,
    // buf = …`): keep its first sentence and add the reason.
    let d = e.to_string();
    let head = d.split(": time =").next().unwrap_or(&d);
    let head = head.lines().next().unwrap_or("").trim();
    Error::io(path, format!("{head}{cause}"))
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

// ------------------------------------------------------------------ collectively written files

use crate::domain::comm::Comm;
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set when HDF5 could not close a file (a full disk even for its metadata): the library
/// then holds a half-closed file, and its shutdown (at `MPI_Finalize` and at exit) would
/// crash on it, so `main` ends the process without either ([`hdf5_unclean`]).
static UNCLEAN: AtomicBool = AtomicBool::new(false);

/// True once a file could not be closed; the process must end without `MPI_Finalize` and
/// without running exit handlers (`libc::_exit`).
pub fn hdf5_unclean() -> bool {
    UNCLEAN.load(Ordering::SeqCst)
}

/// An HDF5 file written by every rank of `comm` together (MPI-IO; the default driver for a
/// single process), as a sequence of steps after each of which all ranks agree whether any
/// failed ([`Comm::agree`], one small reduction): so a write error on one rank (a full disk
/// seen by the MPI-IO aggregator) makes every rank stop at the same step, and no rank is left
/// waiting in a collective HDF5 call the others skipped.
///
/// A failed file is *not* closed ([`ParFile::abandon`]): closing flushes HDF5's metadata
/// cache, whose writes are spread over the ranks with barriers in between, and a write that
/// fails on one rank makes that rank leave the flush early while the others wait in its
/// barrier — a deadlock inside HDF5 (seen with a full disk on rank 1 of 2: rank 0 in
/// `H5AC__run_sync_point → MPI_Barrier`, rank 1 in `H5FD_truncate → MPI_Bcast`). Instead the
/// file is forgotten, deleted, and the process ends without HDF5's shutdown
/// ([`hdf5_unclean`]). A finished file reserves its whole extent on disk before it is closed
/// (an agreed step), so the metadata written by the close cannot run out of space on one
/// rank only; a close that hangs all the same ends the process after [`CLOSE_WATCHDOG`].
pub struct ParFile<'c> {
    comm: &'c Comm,
    tmp: PathBuf,
    file: Option<hdf5::File>,
    /// Bytes of metadata beyond the usual (large attributes), for [`ParFile::reserve`].
    metadata_hint: u64,
}

/// Room reserved for a file's metadata beyond its data (see [`ParFile::reserve`]).
const RESERVE_MARGIN: u64 = 256 << 10;

/// Longest a finished file's close may take before the process gives up on it (the metadata
/// of a checkpoint is a few kB: a close takes milliseconds).
pub const CLOSE_WATCHDOG: std::time::Duration = std::time::Duration::from_secs(120);

impl<'c> ParFile<'c> {
    /// Create `tmp` (truncating it) on every rank (collective); `metadata_hint`: bytes of
    /// large attributes the file will hold.
    /// `userblock`: bytes reserved at the start of the file for the caller (0 or a power of
    /// two ≥ 512; HDF5 ignores them, see `checkpoint`'s integrity block).
    pub fn create(comm: &'c Comm, tmp: &Path, metadata_hint: u64, userblock: u64) -> Result<Self> {
        let mut b = hdf5::File::with_options();
        if userblock > 0 {
            b.with_fcpl(|p| p.userblock(userblock));
        }
        if let Some(raw) = comm.raw_world() {
            b.with_fapl(|p| p.mpio(raw, None));
        }
        let f = b.create(tmp);
        let (file, local) = match f {
            Ok(f) => (Some(f), Ok(())),
            Err(e) => (None, Err(io_error(tmp, e))),
        };
        let w = ParFile {
            comm,
            tmp: tmp.to_path_buf(),
            file,
            metadata_hint,
        };
        match comm.agree(local) {
            Ok(()) => Ok(w),
            Err(e) => {
                w.abandon();
                Err(e)
            }
        }
    }

    /// Whether transfers are collective (MPI-IO).
    pub fn collective(&self) -> bool {
        self.comm.raw_world().is_some()
    }

    pub fn file(&self) -> &hdf5::File {
        self.file.as_ref().expect("ParFile used after close")
    }

    /// One step of the write, on every rank, then agreed: `Err` on every rank if it failed on
    /// any (the message of the lowest failing rank, naming the file).
    pub fn step<T>(&self, what: impl FnOnce(&hdf5::File) -> hdf5::Result<T>) -> Result<T> {
        let r = what(self.file()).map_err(|e| io_error(&self.tmp, e));
        self.comm.agree(r)
    }

    /// Close the finished file on every rank (agreed), after reserving its extent on disk.
    /// Every dataset and group handle must be gone: with MPI-IO HDF5 refuses to close a file
    /// with open objects, and an implicit close on drop would hide a failed metadata write.
    pub fn close(mut self) -> Result<()> {
        let reserved = self.reserve();
        if let Err(e) = self.comm.agree(reserved) {
            self.abandon();
            return Err(e);
        }
        let f = self.file.take().expect("ParFile closed twice");
        let watchdog = Watchdog::start(&self.tmp);
        let r = f.close().map_err(|e| io_error(&self.tmp, e));
        drop(watchdog);
        let r = self.comm.agree(r);
        if r.is_err() {
            // HDF5 may still hold it half-closed
            UNCLEAN.store(true, Ordering::SeqCst);
            self.remove();
        }
        r
    }

    /// Rank 0: allocate the blocks of the file up to beyond its metadata on the file system
    /// (`fallocate` keeping the size), so that a full disk or a quota shows here, in an agreed
    /// step, rather than when HDF5's close writes its metadata cache. The metadata lies below
    /// HDF5's end of allocation, which the mpio driver does not report; it is at most the
    /// data written so far (the file's size) plus the metadata itself: a few kB per dataset
    /// and the attributes, bounded by [`RESERVE_MARGIN`] plus the hint given at creation. The
    /// blocks past the final size are released when the file is published (`trim`).
    fn reserve(&self) -> Result<()> {
        if !self.comm.is_root() {
            return Ok(());
        }
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&self.tmp)
            .map_err(|e| Error::io(&self.tmp, e))?;
        let len = f.metadata().map_err(|e| Error::io(&self.tmp, e))?.len();
        let want = len + RESERVE_MARGIN + self.metadata_hint;
        use std::os::fd::AsRawFd;
        // SAFETY: fallocate on an open descriptor; it only allocates blocks.
        let rc = unsafe {
            libc::fallocate(
                f.as_raw_fd(),
                libc::FALLOC_FL_KEEP_SIZE,
                0,
                want as libc::off_t,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            // a file system without fallocate: nothing to reserve with (the watchdog remains)
            Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => Ok(()),
            _ => Err(Error::io(
                &self.tmp,
                format!("reserving {want} bytes for the file failed: {e}"),
            )),
        }
    }

    /// Give up a file after a failed step (every rank): forget it without closing (see the
    /// type's documentation), delete it (rank 0), and mark the process [`hdf5_unclean`].
    pub fn abandon(mut self) {
        if let Some(f) = self.file.take() {
            std::mem::forget(f);
            UNCLEAN.store(true, Ordering::SeqCst);
        }
        self.remove();
    }

    fn remove(&self) {
        if self.comm.is_root() {
            std::fs::remove_file(&self.tmp).ok();
        }
    }
}

/// Ends the process if a file's close does not return within [`CLOSE_WATCHDOG`] (a hang
/// inside HDF5 would otherwise burn the job's whole allocation); disarmed on drop.
struct Watchdog(Option<std::sync::mpsc::Sender<()>>);

impl Watchdog {
    fn start(path: &Path) -> Watchdog {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let p = path.display().to_string();
        let spawned = std::thread::Builder::new()
            .name("close-watchdog".into())
            .spawn(move || {
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    rx.recv_timeout(CLOSE_WATCHDOG)
                {
                    eprintln!(
                        "[ERROR] {p}: closing the file did not finish in {} s (HDF5 is stuck \
                         after an I/O error on some rank); ending the job",
                        CLOSE_WATCHDOG.as_secs()
                    );
                    // SAFETY: ends this process at once.
                    unsafe { libc::_exit(1) }
                }
            });
        Watchdog(spawned.ok().map(|_| tx))
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            tx.send(()).ok();
        }
    }
}

/// Release the blocks [`ParFile::reserve`] allocated past a published file's end (truncating
/// to its own length frees them) — rank 0, once the file is closed.
pub fn trim_release(path: &Path) -> Result<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
    f.set_len(len).map_err(|e| Error::io(path, e))?;
    Ok(f)
}

/// [`trim_release`], then fsync (checkpoints are durable before `latest` moves).
pub fn trim_and_sync(path: &Path) -> Result<()> {
    trim_release(path)?
        .sync_all()
        .map_err(|e| Error::io(path, e))
}

// ----------------------------------------------------------- strings without HDF5's heap

/// Longest string attribute read back (a damaged size field must not size an allocation).
const MAX_STR_ATTR: usize = 1 << 20;

/// Write `value` as a *fixed-length* UTF-8 string attribute `name` of the object `loc` (a
/// scalar of exactly its bytes). Variable-length strings live in HDF5's global heap, and a
/// damaged heap reference makes HDF5 itself crash when it reads them (`H5HG_read`, found by
/// tests/suite/corrupt.rs): a fixed-length string holds its bytes in the attribute message.
/// h5py reads it as `bytes` (`f.attrs[name].decode()`).
pub fn write_str_attr(loc: &hdf5::Location, name: &str, value: &str) -> hdf5::Result<()> {
    use hdf5_sys::h5a::{H5Aclose, H5Acreate2, H5Awrite};
    use hdf5_sys::h5s::{H5S_class_t, H5Screate};
    use hdf5_sys::h5t::{H5T_cset_t, H5T_str_t, H5Tclose, H5Tcopy, H5Tset_cset, H5Tset_size};
    use hdf5_sys::h5t::{H5Tset_strpad, H5T_C_S1};
    let cname = std::ffi::CString::new(name).map_err(|_| hdf5::Error::from("attribute name"))?;
    hdf5::sync::sync(|| {
        // SAFETY: plain HDF5 calls on ids created here, closed on every path below; the buffer
        // holds exactly `size` bytes (at least one).
        unsafe {
            let t = H5Tcopy(*H5T_C_S1);
            check(t, "H5Tcopy")?;
            let size = value.len().max(1);
            let mut buf = value.as_bytes().to_vec();
            buf.resize(size, 0);
            let sp = H5Screate(H5S_class_t::H5S_SCALAR);
            let mut r = check(H5Tset_size(t, size) as i64, "H5Tset_size")
                .and(check(
                    H5Tset_cset(t, H5T_cset_t::H5T_CSET_UTF8) as i64,
                    "H5Tset_cset",
                ))
                .and(check(
                    H5Tset_strpad(t, H5T_str_t::H5T_STR_NULLPAD) as i64,
                    "H5Tset_strpad",
                ))
                .and(check(sp, "H5Screate"));
            if r.is_ok() {
                let a = H5Acreate2(loc.id(), cname.as_ptr(), t, sp, 0, 0);
                r = check(a, "H5Acreate2");
                if r.is_ok() {
                    r = check(H5Awrite(a, t, buf.as_ptr().cast()) as i64, "H5Awrite");
                    H5Aclose(a);
                }
            }
            if sp >= 0 {
                hdf5_sys::h5s::H5Sclose(sp);
            }
            H5Tclose(t);
            r
        }
    })
}

/// Read a string attribute: fixed-length ([`write_str_attr`], at most [`MAX_STR_ATTR`]
/// bytes, trailing NULs dropped) or, for files of format version 1, variable-length.
pub fn read_str_attr(loc: &hdf5::Location, name: &str) -> hdf5::Result<String> {
    use hdf5_sys::h5a::{H5Aclose, H5Aget_type, H5Aopen, H5Aread};
    use hdf5_sys::h5t::{H5T_class_t, H5Tclose, H5Tget_class, H5Tget_size, H5Tis_variable_str};
    let cname = std::ffi::CString::new(name).map_err(|_| hdf5::Error::from("attribute name"))?;
    let fixed = hdf5::sync::sync(|| -> hdf5::Result<Option<Vec<u8>>> {
        // SAFETY: ids opened here are closed on every path; the read fills exactly `size`
        // bytes of a buffer of that size.
        unsafe {
            let a = H5Aopen(loc.id(), cname.as_ptr(), 0);
            check(a, "H5Aopen")?;
            let t = H5Aget_type(a);
            let r = (|| {
                check(t, "H5Aget_type")?;
                if H5Tget_class(t) != H5T_class_t::H5T_STRING {
                    return Err(hdf5::Error::from(format!(
                        "attribute {name} is not a string"
                    )));
                }
                if H5Tis_variable_str(t) > 0 {
                    return Ok(None);
                }
                let size = H5Tget_size(t);
                if size == 0 || size > MAX_STR_ATTR {
                    return Err(hdf5::Error::from(format!(
                        "attribute {name}: string of {size} bytes"
                    )));
                }
                let mut buf = vec![0u8; size];
                check(H5Aread(a, t, buf.as_mut_ptr().cast()) as i64, "H5Aread")?;
                Ok(Some(buf))
            })();
            if t >= 0 {
                H5Tclose(t);
            }
            H5Aclose(a);
            r
        }
    })?;
    match fixed {
        Some(mut b) => {
            while b.last() == Some(&0) {
                b.pop();
            }
            String::from_utf8(b)
                .map_err(|_| hdf5::Error::from(format!("attribute {name}: not UTF-8")))
        }
        None => Ok(loc
            .attr(name)?
            .read_scalar::<hdf5::types::VarLenUnicode>()?
            .to_string()),
    }
}

/// First row of rank `r`'s block (of `p` ranks, `total` rows).
pub(super) fn block_start(r: usize, p: usize, total: u64) -> u64 {
    (r as u128 * total as u128 / p as u128) as u64
}

/// The rank whose block holds row `g` (`g < total`): the largest r with r·total/p ≤ g.
pub(super) fn block_of(g: u64, p: usize, total: u64) -> usize {
    (((g as u128 + 1) * p as u128 - 1) / total as u128) as usize
}

/// Create dataset `name` (`total` rows of `cols`; 1 = 1-D), write this rank's rows at `offset`
/// and its `unit` attribute, then close it.
#[allow(clippy::too_many_arguments)]
pub(super) fn dataset<T: H5Type>(
    f: &File,
    name: &str,
    total: usize,
    offset: usize,
    cols: usize,
    data: &[T],
    unit: Option<&str>,
    collective: bool,
) -> hdf5::Result<()> {
    let b = f.new_dataset::<T>();
    let ds = if cols == 1 {
        b.shape([total]).create(name)?
    } else {
        b.shape([total, cols]).create(name)?
    };
    write_rows(&ds, offset, cols, data, collective)?;
    if let Some(u) = unit {
        write_unit(&ds, u)?;
    }
    Ok(())
}

fn write_unit(ds: &hdf5::Dataset, unit: &str) -> hdf5::Result<()> {
    let u: VarLenUnicode = unit.parse().map_err(|_| hdf5::Error::from("unit"))?;
    ds.new_attr::<VarLenUnicode>()
        .create("unit")?
        .write_scalar(&u)?;
    Ok(())
}
