//! MPI environment (rsmpi): initialisation and the world communicator's size and rank.

/// The initialised MPI universe; dropping it finalises MPI.
pub struct MpiEnv {
    pub universe: mpi::environment::Universe,
}

impl MpiEnv {
    /// Initialise MPI (works without `mpirun` as a singleton).
    pub fn init() -> Option<Self> {
        mpi::initialize().map(|universe| MpiEnv { universe })
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
