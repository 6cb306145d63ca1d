//! Compile the GPU kernels to PTX with NVRTC (no GPU needed) and print the PTX: `cargo run
//! --features gpu --example gpu_ptx -- 90 > step.ptx`.
fn main() {
    let cc: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(90);
    match demhpc::gpu::cuda::compile_ptx(((cc / 10) as i32, (cc % 10) as i32)) {
        Ok(ptx) => println!("{}", ptx.to_src()),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
