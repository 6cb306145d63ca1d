//! The error type of the library. Only `main.rs` turns errors into exit codes
//! (CONVENTIONS.md: 1 runtime failure, 2 bad input).

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    /// Bad scene file: `file:line:col: message`.
    #[error("{file}:{line}:{col}: {msg}")]
    Scene {
        file: String,
        line: usize,
        col: usize,
        msg: String,
    },
    /// Bad command-line arguments or other user input not tied to a file position.
    #[error("{0}")]
    Input(String),
    /// The simulation blew up (NaN, particle left the domain, ...).
    #[error("{0}")]
    Runtime(String),
    /// Another rank failed (its own message says why); this rank stops with it.
    #[error("rank {rank}: stopping at step {step} because another rank failed")]
    Peer { rank: usize, step: u64 },
    /// Reading or writing a file failed.
    #[error("{path}: {msg}")]
    Io { path: String, msg: String },
    /// A failure agreed on by every rank (an I/O error on one rank, a damaged checkpoint found
    /// by one rank): every rank returns it with the message of the lowest failing rank and
    /// the exit code that rank's error had, so rank 0 can report it and all ranks can end
    /// together ([`crate::domain::comm::Comm::agree`]).
    #[error("{msg}")]
    Agreed { code: i32, msg: String },
    /// A stop signal (SIGTERM, SIGUSR1, SIGUSR2) arrived during the set-up, before the first
    /// step: there is no state worth a checkpoint yet, so the job ends (exit 1).
    #[error("stopped by {signal} during the set-up ({what}); no step was run")]
    Stopped { signal: &'static str, what: String },
}

impl Error {
    /// Exit code for this error (CONVENTIONS.md).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Scene { .. } | Error::Input(_) => 2,
            Error::Agreed { code, .. } => *code,
            Error::Runtime(_) | Error::Peer { .. } | Error::Io { .. } | Error::Stopped { .. } => 1,
        }
    }

    pub fn io(path: impl AsRef<std::path::Path>, e: impl std::fmt::Display) -> Self {
        Error::Io {
            path: path.as_ref().display().to_string(),
            msg: e.to_string(),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
