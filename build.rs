//! Compiles the GPU step's kernels (`src/gpu/kernels/*.cu`) for the host, so that their logic
//! runs in every build and test without a GPU (`src/gpu/host.rs`). No fused multiply–add
//! contraction and no fast math: the host build does the IEEE operations of the CPU path and
//! of the GPU build (NVRTC --fmad=false) in the same order.
fn main() {
    println!("cargo:rerun-if-changed=src/gpu/host.cpp");
    println!("cargo:rerun-if-changed=src/gpu/kernels/dem.h");
    println!("cargo:rerun-if-changed=src/gpu/kernels/step.cu");
    cc::Build::new()
        .cpp(true)
        .file("src/gpu/host.cpp")
        .flag_if_supported("-std=c++17")
        .flag_if_supported("-ffp-contract=off")
        .flag_if_supported("-fno-fast-math")
        .flag_if_supported("-Wno-unused-parameter")
        .flag_if_supported("-Wno-psabi")
        .opt_level(2)
        .compile("demhpc_gpu_host");
}
