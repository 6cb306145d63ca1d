//! `demhpc` command line: parse → validate the scene → run. Exit codes (CONVENTIONS.md):
//! 0 success, 1 runtime failure, 2 bad input.

use clap::Parser;
use demhpc::domain::mpi_env::MpiEnv;
use demhpc::run::{run, RunOptions};
use demhpc::scene::Scene;
use std::path::PathBuf;

/// Discrete Element Method solver for HPC clusters (Yade/Woo physics, MPI + threads).
#[derive(Parser, Debug)]
#[command(name = "demhpc", version, about, long_about = None)]
struct Cli {
    /// Scene file (RON).
    scene: PathBuf,
    /// Step number at which the run stops, counted from step 0 of the scene.
    #[arg(long, value_name = "N")]
    steps: Option<u64>,
    /// Output directory [default: output/<scene name>/].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Worker threads per rank [default: RAYON_NUM_THREADS or all cores].
    #[arg(long, value_name = "T")]
    threads: Option<usize>,
    /// Bitwise-reproducible mode (same result for any rank and thread count).
    #[arg(long)]
    reproducible: bool,
    /// More log output (-v debug, -vv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Only warnings and errors.
    #[arg(short, long, conflicts_with = "verbose")]
    quiet: bool,
}

fn main() {
    let cli = Cli::parse();
    let level = match (cli.quiet, cli.verbose) {
        (true, _) => "warn",
        (false, 0) => "info",
        (false, 1) => "debug",
        _ => "trace",
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level))
        .format_timestamp(None)
        .format_target(false)
        .init();
    let code = match real_main(&cli) {
        Ok(()) => 0,
        Err(e) => {
            log::error!("{e}");
            e.exit_code()
        }
    };
    std::process::exit(code);
}

fn real_main(cli: &Cli) -> Result<(), demhpc::Error> {
    let mpi =
        MpiEnv::init().ok_or_else(|| demhpc::Error::Runtime("MPI initialisation failed".into()))?;
    if mpi.size() > 1 {
        return Err(demhpc::Error::Input(
            "multi-rank runs are not implemented yet: run with one rank".into(),
        ));
    }
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(t) = cli.threads {
        if t == 0 {
            return Err(demhpc::Error::Input("--threads must be ≥ 1".into()));
        }
        pool = pool.num_threads(t);
    }
    let pool = pool
        .build()
        .map_err(|e| demhpc::Error::Runtime(format!("thread pool: {e}")))?;
    // The whole run executes on a pool thread: parallel loops then start without waking a
    // sleeping worker from outside the pool at every step.
    pool.install(|| run_scene(cli))
}

fn run_scene(cli: &Cli) -> Result<(), demhpc::Error> {
    let mut scene = Scene::load(&cli.scene)?;
    scene.reproducible |= cli.reproducible;
    let opts = RunOptions {
        steps: cli.steps,
        out: cli.out.clone(),
    };
    let s = run(scene, &opts)?;
    println!("output: {}", s.out_dir.display());
    Ok(())
}
