//! A CUDA GPU as a [`Device`] (feature `gpu`): the CUDA driver and NVRTC loaded at run time
//! through `cudarc` (dynamic loading: the crate builds, and every CPU test runs, on machines
//! without CUDA), the kernels compiled from their source by NVRTC for the GPU found.
//!
//! Floating point: `--fmad=false` (no contraction into fused multiply–adds, which the CPU
//! path never does either), IEEE division and square root (the defaults for `double`).

use super::device::Device;
use super::params::{DemParams, DevPtr, Kernel};
use crate::error::{Error, Result};
use cudarc::driver::{result, CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use std::sync::Arc;

// SAFETY: `DemParams` is `repr(C)`, plain data, the layout of the kernels' parameter (test).
unsafe impl cudarc::driver::DeviceRepr for DemParams {}

/// The kernel source as NVRTC compiles it: the header inlined in place of its `#include`.
/// `DEMHPC_GPU_KERNELS=DIR` reads `DIR/dem.h` and `DIR/step.cu` instead of the built-in copy
/// (trying a kernel variant on a GPU machine without rebuilding demhpc).
pub fn kernel_source() -> String {
    let from = |name: &str, builtin: &str| match std::env::var_os("DEMHPC_GPU_KERNELS") {
        Some(d) => std::fs::read_to_string(std::path::Path::new(&d).join(name))
            .unwrap_or_else(|_| builtin.to_string()),
        None => builtin.to_string(),
    };
    let header = from("dem.h", include_str!("kernels/dem.h"));
    let body = from("step.cu", include_str!("kernels/step.cu"));
    body.replace("#include \"dem.h\"", &header)
}

/// NVRTC's options for compute capability `cc` (e.g. (9, 0)); `DEMHPC_GPU_NVRTC` adds options
/// (space-separated, e.g. `-DDEM_STEP_MIN_BLOCKS=4`).
pub fn nvrtc_options(cc: (i32, i32)) -> Vec<String> {
    let mut o = vec![
        format!("--gpu-architecture=compute_{}{}", cc.0, cc.1),
        "--fmad=false".into(),
        "--std=c++17".into(),
        "-default-device".into(),
    ];
    if let Ok(extra) = std::env::var("DEMHPC_GPU_NVRTC") {
        o.extend(extra.split_whitespace().map(String::from));
    }
    o
}

/// Compile the kernels to PTX for compute capability `cc` (no GPU needed: NVRTC alone).
pub fn compile_ptx(cc: (i32, i32)) -> Result<cudarc::nvrtc::Ptx> {
    nvrtc_present()?;
    let opts = cudarc::nvrtc::CompileOptions {
        options: nvrtc_options(cc),
        name: Some("demhpc_step.cu".into()),
        ..Default::default()
    };
    cudarc::nvrtc::compile_ptx_with_opts(kernel_source(), opts)
        .map_err(|e| Error::Runtime(format!("NVRTC could not compile the GPU kernels: {e}")))
}

/// NVRTC's library can be loaded (else an error saying how to install it).
pub fn nvrtc_present() -> Result<()> {
    // SAFETY: only tries to open the library.
    match unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        true => Ok(()),
        false => Err(Error::Runtime(
            "the GPU step needs NVRTC (libnvrtc.so): install the CUDA toolkit, or the wheel \
             nvidia-cuda-nvrtc-cu12 (scripts/setup.sh), and put its lib directory on \
             LD_LIBRARY_PATH"
                .into(),
        )),
    }
}

/// The CUDA driver can be loaded and sees a GPU (else why not).
pub fn driver_present() -> Result<()> {
    // SAFETY: only tries to open the library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Error::Runtime(
            "no CUDA driver (libcuda.so) on this machine: --gpu needs an NVIDIA GPU and its driver"
                .into(),
        ));
    }
    match CudaContext::device_count() {
        Ok(n) if n > 0 => Ok(()),
        Ok(_) => Err(Error::Runtime("the CUDA driver sees no GPU".into())),
        Err(e) => Err(Error::Runtime(format!("the CUDA driver failed: {e}"))),
    }
}

pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    funcs: Vec<(Kernel, CudaFunction)>,
    name: String,
    allocs: Vec<DevPtr>,
}

fn cuda_err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> Error + '_ {
    move |e| Error::Runtime(format!("CUDA: {what}: {e}"))
}

impl CudaDevice {
    /// GPU `ordinal`, its kernels compiled for its compute capability.
    pub fn new(ordinal: usize) -> Result<Self> {
        driver_present()?;
        let ctx = CudaContext::new(ordinal).map_err(cuda_err("context"))?;
        let cc = ctx
            .compute_capability()
            .map_err(cuda_err("compute capability"))?;
        let name = ctx.name().map_err(cuda_err("device name"))?;
        let ptx = compile_ptx(cc)?;
        if let Some(path) = std::env::var_os("DEMHPC_GPU_PTX") {
            // for `ptxas -v` (registers, spills) on a machine with the CUDA toolkit
            std::fs::write(&path, ptx.to_src()).ok();
        }
        let module = ctx
            .load_module(ptx)
            .map_err(cuda_err("loading the kernels"))?;
        let mut funcs = Vec::new();
        for k in Kernel::ALL {
            let f = module
                .load_function(k.name())
                .map_err(cuda_err("kernel lookup"))?;
            funcs.push((k, f));
        }
        let stream = ctx.default_stream();
        log::info!("GPU: {name} (compute capability {}.{})", cc.0, cc.1);
        Ok(CudaDevice {
            ctx,
            stream,
            funcs,
            name,
            allocs: Vec::new(),
        })
    }

    /// Threads per block: the step kernel holds many registers (latency-bound, issue 34).
    fn block(k: Kernel) -> u32 {
        let env = std::env::var("DEMHPC_GPU_BLOCK")
            .ok()
            .and_then(|s| s.parse().ok());
        match k {
            Kernel::Step => env.unwrap_or(128),
            _ => 256,
        }
    }
}

impl Device for CudaDevice {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn alloc(&mut self, bytes: usize) -> Result<DevPtr> {
        self.ctx.bind_to_thread().map_err(cuda_err("context"))?;
        // SAFETY: a fresh allocation, zeroed before use.
        let p = unsafe { result::malloc_sync(bytes.max(8)) }.map_err(cuda_err("allocation"))?;
        unsafe { result::memset_d8_sync(p, 0, bytes.max(8)) }.map_err(cuda_err("memset"))?;
        self.allocs.push(p);
        Ok(p)
    }

    fn free(&mut self, p: DevPtr) {
        if let Some(k) = self.allocs.iter().position(|&a| a == p) {
            self.allocs.swap_remove(k);
            // SAFETY: an allocation of ours, freed once.
            unsafe { result::free_sync(p) }.ok();
        }
    }

    fn upload_bytes(&mut self, dst: DevPtr, src: &[u8]) -> Result<()> {
        // SAFETY: `dst` is an allocation of at least `src.len()` bytes (the step's sizing).
        unsafe { result::memcpy_htod_sync(dst, src) }.map_err(cuda_err("upload"))
    }

    fn download_bytes(&mut self, src: DevPtr, dst: &mut [u8]) -> Result<()> {
        // SAFETY: as above.
        unsafe { result::memcpy_dtoh_sync(dst, src) }.map_err(cuda_err("download"))
    }

    fn zero(&mut self, p: DevPtr, bytes: usize) -> Result<()> {
        // SAFETY: as above.
        unsafe { result::memset_d8_sync(p, 0, bytes) }.map_err(cuda_err("memset"))
    }

    fn launch(&mut self, k: Kernel, count: u32, p: &DemParams) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        let f = &self
            .funcs
            .iter()
            .find(|(kk, _)| *kk == k)
            .expect("every kernel loaded")
            .1;
        let block = Self::block(k);
        let cfg = LaunchConfig {
            grid_dim: (count.div_ceil(block), 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.stream.launch_builder(f);
        b.arg(p).arg(&count);
        // SAFETY: the kernel's parameters are (DemParams, u32) as declared in step.cu; every
        // address in `p` is an allocation of this device sized for `count` threads.
        unsafe { b.launch(cfg) }.map_err(cuda_err(k.name()))?;
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.stream.synchronize().map_err(cuda_err("synchronize"))
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        for p in std::mem::take(&mut self.allocs) {
            // SAFETY: our allocations, freed once.
            unsafe { result::free_sync(p) }.ok();
        }
    }
}
