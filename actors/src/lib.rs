//! The actix actors of mosaic.
//!
//! - [`session::Session`] runs the episodes of one operator (an environment and its agents)
//!   in lock-step and emits step and episode records to subscribers.
//! - [`env_actor::EnvActor`] owns an environment.
//! - [`operator`]: the `Decide` protocol every decider answers, the actor wrapping a
//!   synchronous [`mosaic_core::Policy`], and the registry of operator kinds.
//! - [`group::SessionGroup`] drives N sessions side by side (Step All / Reset All).
//! - [`sink::Sinks`]: the telemetry sink writing a run's records into its run directory.

pub mod error;
pub mod messages;
pub mod operator;
pub mod sink;

pub use error::{OperatorError, SessionError, SinkError};
pub use messages::{BeginEpisode, Decide, EpisodeEvent, StepEvent};
pub use operator::{OperatorHandle, OperatorKind, OperatorRegistry};
