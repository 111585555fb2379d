//! The actix actors of mosaic.
//!
//! - [`session::Session`] runs the episodes of one operator (an environment and its agents)
//!   in lock-step and emits step and episode records to subscribers.
//! - [`env_actor::EnvActor`] owns an environment.
//! - [`decider`]: the `Decide` protocol every decider answers, the actor wrapping a
//!   synchronous [`mosaic_core::Policy`], and the registry of decider kinds.
//! - [`worker`]: external policy workers (any language) behind the worker protocol.
//! - [`group::SessionGroup`] drives N sessions side by side (Step All / Reset All).
//! - [`human`]: the `human` decider kind, whose decisions wait for a person.
//! - [`publish`]: how sessions send step records (in batches) and roll-ups to subscribers.
//! - [`sink::Sinks`]: the telemetry sink writing a run's records into its run directory.
//! - [`channel::Channel`] carries messages between the agents of a session.
//!
//! Sessions count their children's restarts with the `mosaic-supervisor` crate's
//! `RestartWindow`; that crate also holds general supervision trees.

pub mod channel;
pub mod decider;
pub mod env_actor;
pub mod error;
pub mod group;
pub mod human;
pub mod messages;
pub mod publish;
pub mod runner;
pub mod session;
pub mod sink;
pub mod worker;

pub use error::{ChildFailure, DeciderError, ResumeError, SessionError, SinkError};
pub use messages::{
    BeginEpisode, CheckpointEvent, Decide, EpisodeEvent, LoadState, SaveState, StepEvent,
};
pub use operator::{DeciderHandle, DeciderKind, DeciderRegistry, SessionResources};
