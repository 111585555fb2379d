//! External workers: environments and policies that run in their own process and speak
//! the worker protocol (`docs/protocol.md`). mosaic's environments (`mosaic-adapters`) and
//! its `worker` policy operator (`mosaic-actors`) both run their workers through this crate.
//!
//! - [`process`]: spawning a worker in its own process group, logging its stderr, stopping
//!   the whole group.
//! - [`link`]: the connection to a worker: the protocol as a sans-IO [`link::Exchange`]
//!   (handshake, request ids, replies, heartbeats, deadlines, MOSAIC's dialect) and its two
//!   drivers, the blocking [`Link`] and, with the `tokio` feature, `link::AsyncLink`.
//! - [`settings`]: [`WorkerSettings`], how to run one worker and talk to it, for both
//!   kinds of worker, with their [`defaults`].
//! - [`env`](mod@env): [`ExternalEnv`], an [`mosaic_core::Environment`] served by a worker.
//! - `policy` (feature `tokio`): `PolicyWorker`, a policy served by a worker, over
//!   `AsyncLink`; `mosaic-actors` wraps it in the `worker` decider.
//! - [`embedded`]: the `mosaic_worker` Python package built into the binary.
//! - [`ledger`]: the list of the process groups a run started that may still be running,
//!   which the next `mosaic resume` or `mosaic run` of a killed run reaps.
//!
//! Experiment files name external environments as `gymnasium:<id>`, `pettingzoo:<module
//! path>` or `worker` (with a `command` or `connect` setting): [`KIND`] and [`PREFIXES`].

pub mod embedded;
pub mod env;
pub mod ledger;
pub mod link;
pub mod process;
pub mod settings;

#[cfg(feature = "tokio")]
pub mod policy;

pub use env::{ExternalEnv, ExternalEnvSettings};
pub use link::{Link, Mode};
pub use process::{WorkerCommand, WorkerProcess};
pub use settings::{WorkerSettings, defaults};

use mosaic_core::experiment::SpecError;
use mosaic_core::registry::{EnvKind, EnvPrefix};
use mosaic_core::{Environment, Settings};
use mosaic_protocols::{DecodeError, FramingError, Message, mosaic};

/// Something went wrong with an external worker. Every malformed input has its own
/// variant; none of them panics.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkerError {
    /// The settings do not describe a worker.
    #[error("worker settings: {0}")]
    Config(String),
    /// The command could not be started.
    #[error("cannot start worker `{command}`: {error}")]
    Spawn {
        /// The command line.
        command: String,
        /// Why.
        error: String,
    },
    /// The embedded `mosaic_worker` package could not be written to the cache.
    #[error(
        "cannot install the mosaic_worker Python package into {dir}: {error} (set MOSAIC_CACHE to a writable directory)"
    )]
    Package {
        /// The directory.
        dir: String,
        /// Why.
        error: String,
    },
    /// The socket could not be reached.
    #[error("cannot connect to worker at {endpoint}: {error}")]
    Connect {
        /// The address.
        endpoint: String,
        /// Why.
        error: String,
    },
    /// Writing to the worker failed (it closed its input or exited).
    #[error("cannot write to the worker: {0}")]
    Write(String),
    /// The worker closed its output (or exited) while a reply was awaited.
    #[error("worker closed its output while {during}{}", exit.as_ref().map(|s| format!(" ({s})")).unwrap_or_default())]
    Closed {
        /// What was awaited.
        during: String,
        /// The exit status, when the worker process has exited.
        exit: Option<String>,
    },
    /// The worker's process exited while a reply was awaited (its output may still be held
    /// open by a process it started).
    #[error("worker process exited ({exit}) while {during}")]
    Exited {
        /// What was awaited.
        during: String,
        /// The exit status.
        exit: String,
    },
    /// A line could not be framed (too long, cut off).
    #[error("bad frame from the worker: {0}")]
    Framing(FramingError),
    /// A line is not a valid message.
    #[error("malformed message from the worker: {0}")]
    Malformed(DecodeError),
    /// The worker's first line is not a greeting.
    #[error("handshake failed: {0}")]
    Handshake(String),
    /// The worker was refused (version or kind mismatch, a token it did not check).
    #[error("worker rejected: {0}")]
    Rejected(String),
    /// A listening worker refused the orchestrator (its token was missing or wrong).
    #[error("the worker refused the connection: {0}")]
    Refused(String),
    /// The token of a listening worker cannot be had.
    #[error("worker settings: {0}")]
    Token(#[from] settings::TokenError),
    /// No reply before the deadline.
    #[error("no `{awaiting}` reply within {after_ms} ms")]
    Timeout {
        /// The reply awaited.
        awaiting: String,
        /// The deadline, ms after the request.
        after_ms: u64,
    },
    /// The worker fell silent (no reply, no heartbeat) for longer than allowed.
    #[error(
        "worker silent for {silent_ms} ms (no reply, no heartbeat) while `{awaiting}` was awaited"
    )]
    Hung {
        /// The reply awaited.
        awaiting: String,
        /// How long it was silent.
        silent_ms: u64,
    },
    /// A reply to a different request.
    #[error(
        "reply out of order: awaited the reply to request {expected}, got `{got}` {}",
        got_id.map_or("without an id".to_owned(), |id| format!("for request {id}"))
    )]
    OutOfOrder {
        /// The request id awaited.
        expected: u64,
        /// The message type received.
        got: String,
        /// Its id.
        got_id: Option<u64>,
    },
    /// A message of the wrong type.
    #[error("expected `{expected}`, got `{got}`")]
    Unexpected {
        /// The type awaited.
        expected: String,
        /// The type received.
        got: String,
    },
    /// The worker answered with `error`.
    #[error("worker error [{code}]: {message}")]
    Remote {
        /// Its code.
        code: String,
        /// Its message.
        message: String,
    },
    /// A reply whose content does not fit (wrong sizes, bad frames, illegal actions).
    #[error("invalid reply: {0}")]
    Invalid(String),
    /// The worker failed before it was ready (`error`); the last lines it wrote to stderr
    /// say why, more often than not.
    #[error("{error}\nthe worker's stderr ended with:\n  {}", stderr.join("\n  "))]
    Start {
        /// What went wrong.
        error: Box<WorkerError>,
        /// The last lines of its stderr.
        stderr: Vec<String>,
    },
}

impl WorkerError {
    /// Whether the error is in the settings (or the installation) rather than in starting
    /// the worker: trying again cannot help, so a run stops at once (exit 2) instead of
    /// retrying the start.
    pub fn is_configuration(&self) -> bool {
        matches!(
            self,
            WorkerError::Config(_) | WorkerError::Package { .. } | WorkerError::Token(_)
        )
    }

    /// A `mosaic/1` reply of the wrong type.
    pub fn unexpected(expected: &str, got: &Message) -> Self {
        WorkerError::Unexpected {
            expected: expected.to_owned(),
            got: got.kind().to_owned(),
        }
    }

    /// A MOSAIC reply of the wrong type (shown cut to 80 characters).
    pub fn unexpected_mosaic(expected: &str, got: &mosaic::Reply) -> Self {
        WorkerError::Unexpected {
            expected: expected.to_owned(),
            got: format!("{got:?}").chars().take(80).collect(),
        }
    }

    /// Whether the worker can no longer be trusted to answer (its process exited, it fell
    /// silent, or its stream is broken): the worker must be replaced, not asked again. A
    /// refused request, a late reply or an unusable answer leave a live worker usable.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            WorkerError::Spawn { .. }
                | WorkerError::Package { .. }
                | WorkerError::Connect { .. }
                | WorkerError::Write(_)
                | WorkerError::Closed { .. }
                | WorkerError::Exited { .. }
                | WorkerError::Framing(_)
                | WorkerError::Hung { .. }
                | WorkerError::OutOfOrder { .. }
                | WorkerError::Start { .. }
        )
    }
}

/// Names of the external environments, for listings.
pub const ENV_NAMES: &[&str] = &["worker", "gymnasium:<id>", "pettingzoo:<module path>"];

/// The `worker` kind: an environment in any process speaking the worker protocol.
pub const KIND: EnvKind = EnvKind {
    name: "worker",
    summary: "an environment in another process speaking the worker protocol",
    settings: env::SETTINGS_HELP,
    make: make_worker,
    scripted: None,
};

/// The prefix families served by the `mosaic_worker` Python package: `gymnasium:` and
/// `pettingzoo:`.
pub const PREFIXES: [EnvPrefix; 2] = [
    EnvPrefix {
        prefix: "gymnasium:",
        summary: "a Gymnasium environment (discrete actions), e.g. gymnasium:MiniGrid-DoorKey-5x5-v0",
        make: make_gymnasium,
    },
    EnvPrefix {
        prefix: "pettingzoo:",
        summary: "a PettingZoo environment (AEC or parallel), e.g. pettingzoo:classic/chess_v6",
        make: make_pettingzoo,
    },
];

fn make_worker(settings: &Settings) -> Result<Box<dyn Environment>, SpecError> {
    env::make_external(None, settings)
}

fn make_gymnasium(id: &str, settings: &Settings) -> Result<Box<dyn Environment>, SpecError> {
    env::make_external(Some(env::Family::Gymnasium(id)), settings)
}

fn make_pettingzoo(path: &str, settings: &Settings) -> Result<Box<dyn Environment>, SpecError> {
    env::make_external(Some(env::Family::PettingZoo(path)), settings)
}
