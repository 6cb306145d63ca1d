//! Where the GPU step's kernels run: a CUDA device (`cuda.rs`, feature `gpu`) or the host,
//! where the same kernel source, compiled by the build's C++ compiler, runs each kernel as a
//! loop over its thread indices (`host.rs`). The step (`mod.rs`) is written once against
//! [`Device`].

use super::params::{DemParams, DevPtr, Kernel};
use crate::error::{Error, Result};

/// Memory and kernel launches of one device. Addresses are plain integers: the kernels get
/// them in [`DemParams`].
pub trait Device {
    /// What runs the kernels, for the log and `timing.json` (e.g. "NVIDIA H100 80GB HBM3").
    fn name(&self) -> String;
    /// `bytes` of zeroed memory, aligned to 256 bytes.
    fn alloc(&mut self, bytes: usize) -> Result<DevPtr>;
    /// Give back an allocation of [`Self::alloc`].
    fn free(&mut self, p: DevPtr);
    fn upload_bytes(&mut self, dst: DevPtr, src: &[u8]) -> Result<()>;
    fn download_bytes(&mut self, src: DevPtr, dst: &mut [u8]) -> Result<()>;
    fn zero(&mut self, p: DevPtr, bytes: usize) -> Result<()>;
    /// Run kernel `k` on `count` threads (thread indices 0..count) with parameters `p`.
    fn launch(&mut self, k: Kernel, count: u32, p: &DemParams) -> Result<()>;
    /// Wait for every launch (timing).
    fn sync(&mut self) -> Result<()>;
}

/// Plain values the step moves to and from a device (no padding, every bit pattern valid).
///
/// # Safety
/// Implementors are `repr(C)` or primitive types without padding whose every bit pattern is
/// a valid value.
pub unsafe trait Pod: Copy + Default {}
// SAFETY: primitives and arrays of them.
unsafe impl Pod for u8 {}
unsafe impl Pod for u32 {}
unsafe impl Pod for i32 {}
unsafe impl Pod for u64 {}
unsafe impl Pod for f64 {}
unsafe impl Pod for [f64; 4] {}
unsafe impl Pod for [i32; 4] {}

fn bytes_of<T: Pod>(v: &[T]) -> &[u8] {
    // SAFETY: `Pod` types have no padding; the slice is valid for its byte length.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

fn bytes_of_mut<T: Pod>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: as above, and every bit pattern is a valid `T`.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, std::mem::size_of_val(v)) }
}

/// Typed transfers over [`Device`].
pub trait DeviceExt: Device {
    fn upload<T: Pod>(&mut self, dst: DevPtr, src: &[T]) -> Result<()> {
        self.upload_bytes(dst, bytes_of(src))
    }
    fn download<T: Pod>(&mut self, src: DevPtr, n: usize) -> Result<Vec<T>> {
        let mut v = vec![T::default(); n];
        self.download_bytes(src, bytes_of_mut(&mut v))?;
        Ok(v)
    }
}

impl<D: Device + ?Sized> DeviceExt for D {}

/// The host as a device: 64-byte aligned blocks, kernels run by `host.cpp` one thread index
/// at a time (the CI check of the kernels' logic, and of the step against the CPU path).
#[derive(Default)]
pub struct HostDevice {
    blocks: Vec<(DevPtr, Vec<Align64>)>,
}

#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Align64([u64; 8]);

impl HostDevice {
    pub fn new() -> Self {
        Self::default()
    }

    /// The block holding `[p, p + len)`, as a byte slice.
    fn span(&mut self, p: DevPtr, len: usize) -> Result<&mut [u8]> {
        for (base, v) in &mut self.blocks {
            let size = v.len() * 64;
            if p >= *base && p + len as u64 <= *base + size as u64 {
                let off = (p - *base) as usize;
                // SAFETY: the block owns `size` bytes; [off, off + len) lies inside it.
                let all =
                    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, size) };
                return Ok(&mut all[off..off + len]);
            }
        }
        Err(Error::Runtime(format!(
            "host device: no allocation holds {len} bytes at {p:#x}"
        )))
    }
}

impl Device for HostDevice {
    fn name(&self) -> String {
        "host (the GPU kernels compiled for the CPU)".into()
    }

    fn alloc(&mut self, bytes: usize) -> Result<DevPtr> {
        let v = vec![Align64::default(); bytes.div_ceil(64).max(1)];
        let p = v.as_ptr() as DevPtr;
        self.blocks.push((p, v));
        Ok(p)
    }

    fn free(&mut self, p: DevPtr) {
        self.blocks.retain(|(b, _)| *b != p);
    }

    fn upload_bytes(&mut self, dst: DevPtr, src: &[u8]) -> Result<()> {
        self.span(dst, src.len())?.copy_from_slice(src);
        Ok(())
    }

    fn download_bytes(&mut self, src: DevPtr, dst: &mut [u8]) -> Result<()> {
        dst.copy_from_slice(self.span(src, dst.len())?);
        Ok(())
    }

    fn zero(&mut self, p: DevPtr, bytes: usize) -> Result<()> {
        self.span(p, bytes)?.fill(0);
        Ok(())
    }

    fn launch(&mut self, k: Kernel, count: u32, p: &DemParams) -> Result<()> {
        // SAFETY: every address in `p` is an allocation of this device sized by the step for
        // the counts in `p` (the kernels index within them, as on the GPU).
        unsafe { super::host::launch(k, count, p) };
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
}
