//! `demhpc` command line: parse → validate the scene → run. Exit codes (CONVENTIONS.md):
//! 0 success, 1 runtime failure, 2 bad input.

use clap::{Parser, Subcommand};
use demhpc::domain::comm::Comm;
use demhpc::domain::mpi_env::MpiEnv;
use demhpc::io::checkpoint;
use demhpc::run::{run, RunOptions};
use demhpc::scene::{self, Scene};
use demhpc::Error;
use std::path::{Path, PathBuf};

/// Discrete Element Method solver for HPC clusters (Yade/Woo physics, MPI + threads).
#[derive(Parser, Debug)]
#[command(name = "demhpc", version, about, long_about = None)]
#[command(subcommand_negates_reqs = true)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    /// Scene file (RON). With --restart: optional, a compatible scene (other run length,
    /// outputs or checkpoint settings) replacing the one stored in the checkpoint.
    scene: Option<PathBuf>,
    /// Continue from a checkpoint (e.g. output/NAME/checkpoints/ckpt_0000001000.h5), on any
    /// number of ranks.
    #[arg(long, value_name = "CHECKPOINT.h5")]
    restart: Option<PathBuf>,
    /// Step number at which the run stops, counted from step 0 of the scene.
    #[arg(long, value_name = "N")]
    steps: Option<u64>,
    /// Output directory [default: output/<scene name>/; with --restart, the run's directory
    /// holding the checkpoint (OUT for OUT/checkpoints/ckpt_*.h5)].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Worker threads per rank [default: RAYON_NUM_THREADS or all cores].
    #[arg(long, value_name = "T", global = true)]
    threads: Option<usize>,
    /// Bitwise-reproducible mode (same result for any rank and thread count).
    #[arg(long)]
    reproducible: bool,
    /// MPI rank grid, e.g. `4x2x1` [default: chosen to minimise the subdomain surface].
    #[arg(long, value_name = "PXxPYxPZ", value_parser = parse_grid)]
    grid: Option<[usize; 3]>,
    /// Run the step on a GPU (issue 34): `--gpu` or `--gpu N` the CUDA device N (a build
    /// with `--features gpu`), `--gpu host` the GPU kernels compiled for the CPU (slow; checks
    /// the GPU path without a GPU). One rank; spheres, plane walls, the frictional laws.
    #[arg(long, value_name = "N|host", num_args = 0..=1, default_missing_value = "0", global = true)]
    gpu: Option<demhpc::gpu::Target>,
    /// More log output (-v debug, -vv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// Only warnings and errors.
    #[arg(short, long, conflicts_with = "verbose", global = true)]
    quiet: bool,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Describe a checkpoint file: step, time, particle and contact counts, ranks, format.
    Info {
        /// Checkpoint file (.h5).
        file: PathBuf,
        /// Verify the checksums of every dataset and check every row, even for a large file
        /// (done by default up to 2 GiB).
        #[arg(long)]
        verify: bool,
    },
    /// Check a scene as a run would up to its first output (parse, validation, creating the
    /// spheres, the overlap check) on one process, without MPI; writes nothing.
    Check {
        /// Scene file (RON).
        scene: PathBuf,
    },
}

fn parse_grid(s: &str) -> Result<[usize; 3], String> {
    let v: Vec<usize> = s
        .split(['x', 'X'])
        .map(|p| p.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("`{s}` is not a rank grid like 4x2x1"))?;
    match v.as_slice() {
        &[a, b, c] if a * b * c > 0 => Ok([a, b, c]),
        _ => Err(format!("`{s}` is not a rank grid like 4x2x1")),
    }
}

fn main() {
    // First of all: a SIGTERM/SIGUSR1/SIGUSR2 arriving during start-up (MPI init, scene,
    // reading a checkpoint) must not kill the rank: long set-up loops end the set-up on it
    // (`signals::SetupWatch`), otherwise it is honoured at the first step.
    demhpc::signals::install();
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
    // The subcommands run before MPI: one process, started in milliseconds (MPI's singleton
    // start-up alone takes 0.3 s), and no MPI library between a damaged file and the exit code.
    let sub = match &cli.cmd {
        Some(Cmd::Check { scene }) => Some(check(&cli, scene)),
        Some(Cmd::Info { file, verify }) => Some(match run_args_given(&cli) {
            Some(arg) => Err(Error::Input(format!(
                "`demhpc info` describes a file and runs nothing: {arg} does not apply"
            ))),
            None => info(file, *verify),
        }),
        None => None,
    };
    if let Some(r) = sub {
        std::process::exit(r.map_or_else(
            |e| {
                log::error!("{e}");
                e.exit_code()
            },
            |()| 0,
        ));
    }
    let mpi = match MpiEnv::init() {
        Some(m) => m,
        None => {
            log::error!("MPI initialisation failed");
            std::process::exit(1);
        }
    };
    let (rank, size) = (mpi.rank(), mpi.size());
    if rank != 0 && std::env::var_os("RUST_LOG").is_none() && cli.verbose == 0 {
        // Progress and summaries come from rank 0; the others report warnings and errors
        // (with -v, -vv their own debug and trace lines too: each names its rank).
        log::set_max_level(log::LevelFilter::Warn);
    }
    let result = real_main(&cli, size > 1);
    let code = match result {
        Ok(()) => 0,
        Err(e) => {
            // Bad input is detected identically on every rank, and an agreed failure carries
            // the same message on every rank: say it once. A rank that stops because another
            // failed has nothing to add to that rank's message.
            let input = matches!(e, demhpc::Error::Input(_) | demhpc::Error::Scene { .. });
            let agreed = matches!(e, demhpc::Error::Agreed { .. });
            let once = input || agreed;
            if (rank == 0 || !once) && !matches!(e, demhpc::Error::Peer { .. }) {
                log::error!("{e}");
            }
            if size > 1 && !once {
                // Runtime failures may hit one rank alone: exit at once without finalising,
                // which makes mpirun end the whole job (no rank left waiting in a collective).
                std::process::exit(e.exit_code());
            }
            e.exit_code()
        }
    };
    if demhpc::io::h5par::hdf5_unclean() {
        // HDF5 holds a file it could not close (a full disk even for its metadata): its
        // shutdown, run by MPI_Finalize and by the exit handlers, would crash on it. End here,
        // with every rank (the failure was agreed), without either.
        use std::io::Write;
        std::io::stdout().flush().ok();
        std::io::stderr().flush().ok();
        // SAFETY: _exit ends the process at once; nothing is left to run.
        unsafe { libc::_exit(code.max(1)) }
    }
    drop(mpi);
    std::process::exit(code);
}

/// The first option given that only makes sense for a run (not for a subcommand).
fn run_args_given(cli: &Cli) -> Option<&'static str> {
    [
        (cli.scene.is_some(), "a scene file"),
        (cli.restart.is_some(), "--restart"),
        (cli.steps.is_some(), "--steps"),
        (cli.out.is_some(), "--out"),
        (cli.reproducible, "--reproducible"),
        (cli.grid.is_some(), "--grid"),
    ]
    .into_iter()
    .find_map(|(given, name)| given.then_some(name))
}

fn real_main(cli: &Cli, mpi: bool) -> Result<(), demhpc::Error> {
    let size = Comm::world_size();
    check_grid(cli.grid, size)?;
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(t) = thread_count(cli)? {
        pool = pool.num_threads(t);
    }
    let pool = pool
        .build()
        .map_err(|e| demhpc::Error::Runtime(format!("thread pool: {e}")))?;
    warn_oversubscribed(pool.current_num_threads());
    // The whole run executes on a pool thread: parallel loops then start without waking a
    // sleeping worker from outside the pool at every step.
    pool.install(|| run_scene(cli, mpi))
}

/// `--grid` must make one subdomain per rank: refused (exit 2, before any output, identically
/// on every rank) when its product is not the job's rank count — also without `mpirun`, where
/// a grid other than 1x1x1 used to be ignored.
fn check_grid(grid: Option<[usize; 3]>, ranks: usize) -> Result<(), Error> {
    let Some(g @ [a, b, c]) = grid else {
        return Ok(());
    };
    let n = g.iter().product::<usize>();
    if n == ranks {
        return Ok(());
    }
    let job = match ranks {
        1 => "the single process of this job (no mpirun)".to_string(),
        r => format!("the {r} ranks of this job"),
    };
    Err(Error::Input(format!(
        "--grid {a}x{b}x{c} does not match {job}: it makes {n} subdomains, one per rank; start \
         it with `mpirun -n {n}`, or leave --grid out"
    )))
}

/// Most worker threads per rank accepted at all.
const MAX_THREADS: usize = 4096;
/// Most worker threads per rank accepted per core a rank may run on.
const MAX_THREADS_PER_CORE: usize = 16;

/// Cores this process may run on: its CPU affinity (a rank bound by `mpirun`/`srun` sees its
/// own cores) and cgroup CPU quota, as `std::thread::available_parallelism` reads them.
fn process_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The CPUs this process may run on (`sched_getaffinity`), as ranges: `0-3,8`.
fn affinity() -> Option<String> {
    // SAFETY: sched_getaffinity fills the zeroed set for this process (pid 0).
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0)
            .then_some(set)
    }?;
    let on: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET reads the set within its size.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    let mut parts = Vec::new();
    let mut k = 0;
    while k < on.len() {
        let start = on[k];
        while k + 1 < on.len() && on[k + 1] == on[k] + 1 {
            k += 1;
        }
        parts.push(match on[k] == start {
            true => format!("{start}"),
            false => format!("{start}-{}", on[k]),
        });
        k += 1;
    }
    Some(parts.join(","))
}

/// CPUs online on this node (`sysconf(_SC_NPROCESSORS_ONLN)`; hardware threads count).
fn node_cpus() -> Option<usize> {
    // SAFETY: sysconf reads a system value and has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    (n > 0).then_some(n as usize)
}

/// The thread count asked for (`--threads`, else `RAYON_NUM_THREADS`, which rayon would read),
/// checked: ≥ 1, and an absurd count (above 16 per core a rank may run on, or above 4096) is
/// refused, exit 2 — a typo must not start 100 000 threads. The per-core limit uses the
/// fewest cores any rank has (collective), so every rank gives the same verdict.
fn thread_count(cli: &Cli) -> Result<Option<usize>, Error> {
    let cores = Comm::world_min_u64(process_cores() as u64) as usize;
    let (t, from) = match cli.threads {
        Some(0) => return Err(Error::Input("--threads must be ≥ 1".into())),
        Some(t) => (t, "--threads"),
        None => match std::env::var("RAYON_NUM_THREADS").map(|v| v.trim().parse::<usize>()) {
            Ok(Ok(t)) if t > 0 => (t, "RAYON_NUM_THREADS"),
            _ => return Ok(None), // rayon's default: one thread per core the rank may use
        },
    };
    let limit = MAX_THREADS.min(MAX_THREADS_PER_CORE * cores);
    if t > limit {
        return Err(Error::Input(format!(
            "{from} {t}: too many threads per rank: at most {limit}, {MAX_THREADS_PER_CORE} × \
             the {cores} core(s) a rank may run on (its CPU affinity; mpirun binds each of ≤ 2 \
             ranks to one core unless --bind-to none) and never more than {MAX_THREADS}; give \
             about one thread per core (README \"Ranks and threads\")"
        )));
    }
    Ok(Some(t))
}

/// Warn (rank 0, once) when the layout oversubscribes the cores: more threads per rank than
/// rank 0 may run on (its CPU affinity: `mpirun` binds each of ≤ 2 ranks to one core), or more
/// ranks × threads on rank 0's node than it has CPUs. The ranks on a node are those sharing
/// memory with rank 0 (`Comm::world_node_size`, from MPI, so whatever the launcher); ranks
/// are assumed to run as many threads as rank 0, and the node's CPUs are those online
/// (`sysconf`), which a cgroup quota may lower further (then `process_cores` shows it on an
/// unbound rank). Collective.
fn warn_oversubscribed(threads: usize) {
    let on_node = Comm::world_node_size();
    if Comm::world_rank() != 0 {
        return;
    }
    let cores = process_cores();
    log::info!(
        "binding: rank 0 may run on CPU(s) {} of its node; {on_node} rank(s) × {threads} thread(s) on that node",
        affinity().unwrap_or_else(|| "?".into())
    );
    if threads > cores {
        log::warn!(
            "{threads} threads per rank, but rank 0 may run on {cores} core(s) only (its CPU \
             affinity or quota): the threads share them. With mpirun pass --bind-to none or \
             --map-by ppr:N:node:pe={threads}; under Slurm srun -c {threads} (README \"Pinning\")"
        );
    } else if let Some(cpus) = node_cpus().filter(|&c| on_node > 1 && on_node * threads > c) {
        log::warn!(
            "{on_node} ranks × {threads} thread(s) on rank 0's node, which has {cpus} CPUs: the \
             node is oversubscribed and the ranks' threads share cores (fewer ranks per node, \
             or fewer threads: --threads)"
        );
    }
}

/// The scene to run: the file given, or the one stored in the checkpoint (replaced by the file
/// given when that only changes what a restart may change). With `--restart`, also the stored
/// scene's `checkpoint.dir` (where the checkpoint was written: [`restart_out`]).
fn load_scene(cli: &Cli) -> Result<(Scene, Option<String>), Error> {
    let Some(ck) = &cli.restart else {
        return match &cli.scene {
            Some(p) => Ok((Scene::load(p)?, None)),
            None => Err(Error::Input(
                "give a scene file (demhpc SCENE.ron) or a checkpoint (--restart FILE.h5); see --help"
                    .into(),
            )),
        };
    };
    let info = checkpoint::read_info(ck)?;
    let stored = stored_scene(ck, &info)?;
    refuse_old_cpm(ck, &info, &stored)?;
    let stored_dir = Some(stored.checkpoint.dir.clone());
    let Some(p) = &cli.scene else {
        return Ok((stored, stored_dir));
    };
    let given = Scene::load(p)?;
    let changed = scene::restart_incompatibilities(&stored, &given);
    if !changed.is_empty() {
        return Err(Error::Input(format!(
            "{}: cannot continue {} with this scene: it changes {} (a restart may change only \
             name, run, output and checkpoint)",
            p.display(),
            ck.display(),
            changed.join(", ")
        )));
    }
    Ok((given, stored_dir))
}

/// The output directory of a restart without `--out`: the run's own (the directory holding
/// `OUT/<checkpoint.dir>/ckpt_*.h5`), so that its series, snapshots and checkpoints continue;
/// for a checkpoint found elsewhere `output/<name>/`, with a warning. Rank 0 logs the choice.
fn restart_out(ck: &Path, scene: &Scene, stored_dir: Option<&str>) -> Option<PathBuf> {
    let dirs: Vec<&str> = stored_dir
        .into_iter()
        .chain([scene.checkpoint.dir.as_str()])
        .collect();
    let out = demhpc::run::restart_out_dir(ck, &dirs);
    if Comm::world_rank() == 0 {
        match &out {
            Some(o) => log::info!(
                "restart continues in {}, the output directory holding {} (--out DIR to write \
                 elsewhere)",
                o.display(),
                ck.display()
            ),
            None => log::warn!(
                "{} is not in an output directory's `{}/` (OUT/{}/ckpt_*.h5): the restart \
                 writes to output/{}/; give --out DIR to choose where",
                ck.display(),
                dirs[0],
                dirs[0],
                scene.name
            ),
        }
    }
    out
}

/// Checkpoint format 3 came with Yade's public CPM law as the defaults of `Cpm` materials
/// (issue 20): the scene text stored by an older demhpc (formats 1 and 2) would now resolve to
/// other parameters, and the restart would continue silently different physics. Refused
/// (exit 2): restart it with the demhpc that wrote it.
fn refuse_old_cpm(
    ck: &Path,
    info: &checkpoint::CheckpointInfo,
    stored: &Scene,
) -> Result<(), Error> {
    if info.format_version >= 3 || stored.materials.iter().all(|m| m.cpm().is_none()) {
        return Ok(());
    }
    Err(Error::Input(format!(
        "{}: a CPM checkpoint of format version {} was written before the CPM defaults became \
         Yade's public law (format 3): its stored scene would now resolve to other CPM \
         parameters and the continuation would not be the same run; restart it with the \
         demhpc that wrote it",
        ck.display(),
        info.format_version
    )))
}

/// The scene stored in a checkpoint, validated. Its data files are found beside the original
/// scene file; errors in its text name the checkpoint (the text is the checkpoint's copy, the
/// original file may have changed since).
fn stored_scene(ck: &Path, info: &checkpoint::CheckpointInfo) -> Result<Scene, Error> {
    Scene::parse(&info.scene_text, Path::new(&info.scene_file)).map_err(|e| match e {
        Error::Scene {
            file,
            line,
            col,
            msg,
        } if file == info.scene_file => Error::Scene {
            file: format!("{} (the scene stored in it, from {file})", ck.display()),
            line,
            col,
            msg,
        },
        e => e,
    })
}

fn run_scene(cli: &Cli, mpi: bool) -> Result<(), Error> {
    let started = std::time::Instant::now();
    let (mut scene, stored_dir) = load_scene(cli)?;
    scene.reproducible |= cli.reproducible;
    if cli.gpu.is_some() {
        demhpc::gpu::support::check_scene(&scene)?;
        if scene.reproducible && Comm::world_rank() == 0 {
            log::warn!(
                "--gpu: the GPU step gives the same bits run to run, not the CPU path's \
                 reproducible-mode bits (its force sums are in another order)"
            );
        }
        if mpi {
            return Err(Error::Input(
                "--gpu runs on one rank (one GPU) for now: start it without mpirun, or with \
                 mpirun -n 1"
                    .into(),
            ));
        }
    }
    let out = match (&cli.out, &cli.restart) {
        (None, Some(ck)) => restart_out(ck, &scene, stored_dir.as_deref()),
        _ => cli.out.clone(),
    };
    let opts = RunOptions {
        steps: cli.steps,
        out,
        mpi,
        grid: cli.grid,
        restart: cli.restart.clone(),
        gpu: cli.gpu,
        started: Some(started),
    };
    let s = run(scene, &opts)?;
    if demhpc::domain::comm::Comm::world_rank() == 0 {
        if let Some((sig, ck)) = &s.stopped {
            println!(
                "stopped by {} at step {}; checkpoint written to {}\nrestart with: demhpc --restart {} --out {}{}",
                demhpc::signals::name(*sig),
                s.last_step,
                ck.display(),
                ck.display(),
                s.out_dir.display(),
                cli.steps.map(|n| format!(" --steps {n}")).unwrap_or_default()
            );
        }
        println!("output: {}", s.out_dir.display());
    }
    Ok(())
}

/// `demhpc check SCENE`: the run's set-up up to its first output, on one process.
fn check(cli: &Cli, path: &Path) -> Result<(), Error> {
    if let Some(arg) = run_args_given(cli) {
        return Err(Error::Input(format!(
            "`demhpc check` checks a scene and runs nothing: {arg} does not apply"
        )));
    }
    let scene = Scene::load(path)?;
    if cli.gpu.is_some() {
        demhpc::gpu::support::check_scene(&scene)?;
    }
    let (name, n, steps, dt) = (scene.name.clone(), scene.summary.n, scene.steps, scene.dt);
    demhpc::sim::Simulation::new(scene)?;
    println!(
        "{}: valid: scene `{name}`, {n} spheres, {steps} steps of {dt:.6e} s",
        path.display()
    );
    Ok(())
}

/// `demhpc info FILE`: the root attributes (their checksum verified), then, for files up to
/// [`VERIFY_MAX`] or with `--verify`, the checksums of every dataset and every row checked.
fn info(file: &Path, verify: bool) -> Result<(), Error> {
    let i = checkpoint::read_info(file)?;
    println!("checkpoint      {}", file.display());
    println!(
        "format          {} version {}",
        checkpoint::FORMAT,
        i.format_version
    );
    println!(
        "written by      demhpc {} on {} rank(s), grid {}x{}x{}",
        i.demhpc_version, i.ranks, i.grid[0], i.grid[1], i.grid[2]
    );
    println!("scene           {}", i.scene_file);
    println!("step            {}", i.step);
    println!("time            {:.9e} s", i.time);
    println!("dt              {:.6e} s", i.dt);
    println!("particles       {}", i.n_particles);
    println!(
        "contacts        {} sphere-sphere, {} sphere-wall",
        i.n_contacts, i.n_wall_contacts
    );
    println!("reproducible    {}", i.reproducible);
    let size = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    if !verify && size > VERIFY_MAX {
        println!(
            "integrity       root attributes verified; datasets not read ({:.1} GB: give --verify)",
            size as f64 / 1e9
        );
        return Ok(());
    }
    // the restart's limits (the initial spheres and each inlet's range of gids, the engines'
    // counters), when the stored scene validates here
    let limits = match stored_scene(file, &i) {
        Ok(s) => Some(checkpoint::Limits::of(&s, &i.engines).map_err(|e| {
            println!("integrity       DAMAGED");
            checkpoint::damaged(file, e)
        })?),
        Err(_) => None,
    };
    match checkpoint::inspect(file, &i, limits) {
        Ok(what) => {
            println!("integrity       ok: {what}");
            Ok(())
        }
        Err(e) => {
            println!("integrity       DAMAGED");
            Err(e)
        }
    }
}

/// Files up to this size are verified by `demhpc info` without `--verify` (a few seconds).
const VERIFY_MAX: u64 = 2 << 30;
