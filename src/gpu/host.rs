//! The kernels of `kernels/step.cu` compiled for the host (build.rs: `host.cpp`), called
//! through their C entry points.

use super::params::{DemParams, Kernel};

extern "C" {
    pub fn dem_host_layout(out: *mut u64);
    fn dem_host_k_prep(p: *const DemParams, count: u32);
    fn dem_host_k_scan_local(p: *const DemParams, count: u32);
    fn dem_host_k_scan_add(p: *const DemParams, count: u32);
    fn dem_host_k_scatter(p: *const DemParams, count: u32);
    fn dem_host_k_sort_cells(p: *const DemParams, count: u32);
    fn dem_host_k_gather(p: *const DemParams, count: u32);
    fn dem_host_k_build(p: *const DemParams, count: u32);
    fn dem_host_k_carry(p: *const DemParams, count: u32);
    fn dem_host_k_step(p: *const DemParams, count: u32);
    fn dem_host_k_stats(p: *const DemParams, count: u32);
    fn dem_host_k_export_count(p: *const DemParams, count: u32);
    fn dem_host_k_export(p: *const DemParams, count: u32);
    fn dem_host_k_import(p: *const DemParams, count: u32);
}

/// Run kernel `k` for thread indices 0..count.
///
/// # Safety
/// The addresses in `p` must be host allocations large enough for what the kernel indexes
/// with `count` threads (the step's sizing).
pub unsafe fn launch(k: Kernel, count: u32, p: &DemParams) {
    let f = match k {
        Kernel::Prep => dem_host_k_prep,
        Kernel::ScanLocal => dem_host_k_scan_local,
        Kernel::ScanAdd => dem_host_k_scan_add,
        Kernel::Scatter => dem_host_k_scatter,
        Kernel::SortCells => dem_host_k_sort_cells,
        Kernel::Gather => dem_host_k_gather,
        Kernel::Build => dem_host_k_build,
        Kernel::Carry => dem_host_k_carry,
        Kernel::Step => dem_host_k_step,
        Kernel::Stats => dem_host_k_stats,
        Kernel::ExportCount => dem_host_k_export_count,
        Kernel::Export => dem_host_k_export,
        Kernel::Import => dem_host_k_import,
    };
    f(p, count)
}
