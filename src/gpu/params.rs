//! The parameter block every GPU kernel receives (`DemParams` of `kernels/dem.h`), mirrored
//! field for field; a unit test checks the layout against the C compiler's.

/// A device address (or, on the host device, a host address).
pub type DevPtr = u64;

/// `DEM_MAX_WALLS`: plane walls a GPU scene may have.
pub const MAX_WALLS: usize = 16;
/// `DEM_MIX_ROW`: numbers per ordered material pair in the mixing table.
pub const MIX_ROW: usize = 8;
/// `DEM_STATS_FIXED`: the fixed part of a statistics chunk's record.
pub const STATS_FIXED: usize = 8;
/// Words of the flags array (`DEM_F_*`).
pub const N_FLAGS: usize = 8;
pub const F_REBUILD: usize = 0;
pub const F_ERROR: usize = 1;
pub const F_BAD: usize = 2;
pub const F_MAXNBR: usize = 3;
pub const F_COUNT: usize = 4;
pub const F_LOST: usize = 5;
pub const F_WCOUNT: usize = 6;
/// Error bits of `flags[F_ERROR]`.
pub const E_NONFINITE: u32 = 1;
pub const E_ESCAPED: u32 = 2;
pub const E_MOVED: u32 = 4;

/// The frictional laws the GPU step runs (`DEM_LAW_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Law {
    CundallStrack = 0,
    Hertz = 1,
    Hooke = 2,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DemWall {
    pub p: [f64; 3],
    pub n: [f64; 3],
    pub v: [f64; 3],
    pub mat: u32,
    pub pad: u32,
}

/// `DemParams` (kernels/dem.h): device arrays, then the scalars. The comments there say what
/// each holds.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DemParams {
    pub pos_in: DevPtr,
    pub pos_out: DevPtr,
    pub vel_in: DevPtr,
    pub vel_out: DevPtr,
    pub ang_in: DevPtr,
    pub ang_out: DevPtr,
    pub ori_in: DevPtr,
    pub ori_out: DevPtr,
    pub gid_in: DevPtr,
    pub gid_out: DevPtr,
    pub info_in: DevPtr,
    pub info_out: DevPtr,
    pub tag_in: DevPtr,
    pub tag_out: DevPtr,
    pub wrap_in: DevPtr,
    pub wrap_out: DevPtr,
    pub reference: DevPtr,
    pub rec_f: DevPtr,
    pub rec_t: DevPtr,
    pub rec_c: DevPtr,
    pub nbr_in: DevPtr,
    pub nbr_out: DevPtr,
    pub meta_in: DevPtr,
    pub meta_out: DevPtr,
    pub nn_in: DevPtr,
    pub nn_out: DevPtr,
    pub hist_in: DevPtr,
    pub hist_out: DevPtr,
    pub wact_in: DevPtr,
    pub wact_out: DevPtr,
    pub whist_in: DevPtr,
    pub whist_out: DevPtr,
    pub wrec: DevPtr,
    pub cell_of: DevPtr,
    pub cell_count: DevPtr,
    pub cell_start: DevPtr,
    pub order: DevPtr,
    pub inv: DevPtr,
    pub scan_data: DevPtr,
    pub scan_sums: DevPtr,
    pub flags: DevPtr,
    pub mix: DevPtr,
    pub stats_out: DevPtr,
    pub xkey_a: DevPtr,
    pub xkey_b: DevPtr,
    pub xstate: DevPtr,
    pub xwkey_a: DevPtr,
    pub xwkey_b: DevPtr,
    pub xwstate: DevPtr,
    pub dt: f64,
    pub lambda: f64,
    pub g: [f64; 3],
    pub skin: f64,
    pub lim2: f64,
    pub halo2: f64,
    pub hooke_gn: f64,
    pub hooke_gt: f64,
    pub surface_energy: f64,
    pub lo: [f64; 3],
    pub hi: [f64; 3],
    pub len: [f64; 3],
    pub cell_lo: [f64; 3],
    pub cell_inv: [f64; 3],
    pub shift: [[f64; 3]; 27],
    pub n: u32,
    pub n_walls: u32,
    pub law: u32,
    pub record: u32,
    pub damp_gravity: u32,
    pub hooke_total: u32,
    pub periodic: [u32; 3],
    pub dims: [u32; 3],
    pub n_cells: u32,
    pub cap_in: u32,
    pub cap_out: u32,
    pub n_mat: u32,
    pub scan_n: u32,
    pub scan_chunk: u32,
    pub stats_chunk: u32,
    pub n_keys: u32,
    pub n_wkeys: u32,
    /// Contacts keep their pair constants in their history (10 numbers, not 6) instead of
    /// mixing them every step (`DEMHPC_GPU_STORE_PHYS=1`).
    pub store_phys: u32,
    pub walls: [DemWall; MAX_WALLS],
}

impl Default for DemParams {
    fn default() -> Self {
        // SAFETY: every field is an integer, a float or an array of them: all-zero bits are a
        // valid value (null addresses, zero scalars).
        unsafe { std::mem::zeroed() }
    }
}

/// The kernels of `kernels/step.cu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    Prep,
    ScanLocal,
    ScanAdd,
    Scatter,
    SortCells,
    Gather,
    Build,
    Carry,
    Step,
    Stats,
    ExportCount,
    Export,
    Import,
}

impl Kernel {
    pub const ALL: [Kernel; 13] = [
        Kernel::Prep,
        Kernel::ScanLocal,
        Kernel::ScanAdd,
        Kernel::Scatter,
        Kernel::SortCells,
        Kernel::Gather,
        Kernel::Build,
        Kernel::Carry,
        Kernel::Step,
        Kernel::Stats,
        Kernel::ExportCount,
        Kernel::Export,
        Kernel::Import,
    ];

    /// The kernel's name in the CUDA source.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Prep => "k_prep",
            Kernel::ScanLocal => "k_scan_local",
            Kernel::ScanAdd => "k_scan_add",
            Kernel::Scatter => "k_scatter",
            Kernel::SortCells => "k_sort_cells",
            Kernel::Gather => "k_gather",
            Kernel::Build => "k_build",
            Kernel::Carry => "k_carry",
            Kernel::Step => "k_step",
            Kernel::Stats => "k_stats",
            Kernel::ExportCount => "k_export_count",
            Kernel::Export => "k_export",
            Kernel::Import => "k_import",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn layout_matches_the_c_compiler() {
        let mut c = [0u64; 9];
        // SAFETY: writes 9 words.
        unsafe { super::super::host::dem_host_layout(c.as_mut_ptr()) };
        let rust = [
            size_of::<DemParams>(),
            offset_of!(DemParams, xwstate),
            offset_of!(DemParams, dt),
            offset_of!(DemParams, shift),
            offset_of!(DemParams, n),
            offset_of!(DemParams, store_phys),
            offset_of!(DemParams, walls),
            size_of::<DemWall>(),
            32,
        ];
        assert_eq!(c.map(|v| v as usize), rust);
    }
}
