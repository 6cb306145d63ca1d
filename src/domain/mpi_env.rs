//! MPI environment (rsmpi): initialisation and the world communicator's size and rank.

use mpi::environment::Threading;

/// The initialised MPI universe; dropping it finalises MPI.
pub struct MpiEnv {
    pub universe: mpi::environment::Universe,
}

impl MpiEnv {
    /// Initialise MPI (works without `mpirun` as a singleton). `Serialized`: the run executes
    /// on a rayon pool thread, not the main thread, and only that thread calls MPI.
    pub fn init() -> Option<Self> {
        mpi::initialize_with_threading(Threading::Serialized)
            .map(|(universe, _)| MpiEnv { universe })
    }

    pub fn size(&self) -> i32 {
        use mpi::topology::Communicator;
        self.universe.world().size()
    }

    pub fn rank(&self) -> i32 {
        use mpi::topology::Communicator;
        self.universe.world().rank()
    }
}
