//! The actix actors of mosaic.
//!
//! - [`session::Session`] runs the episodes of one operator (an environment and its agents)
//!   in lock-step and emits step and episode records to subscribers.
//! - [`EnvActor`] owns an environment (its messages are internal; [`Render`] asks it for a
//!   frame).
//! - [`decider`]: the `Decide` protocol every decider answers, the actor wrapping a
//!   synchronous [`mosaic_core::Policy`], and the registry of decider kinds.
//! - [`worker`]: external policy workers (any language) behind the worker protocol.
//! - [`group::SessionGroup`] drives N sessions side by side (Step All / Reset All).
//! - [`human`]: the `human` decider kind, whose decisions wait for a person.
//! - Sessions send step records (in batches) and roll-ups to [`session::Subscribers`].
//! - [`sink::Sinks`]: the telemetry sink writing a run's records into its run directory.
//! - [`channel::Channel`] carries messages between the agents of a session.
//!
//! Sessions count their children's restarts with the `mosaic-supervisor` crate's
//! `RestartWindow`; that crate also holds general supervision trees.

pub mod channel;
pub mod decider;
mod env_actor;
mod error;
pub mod group;
pub mod human;
mod messages;
mod publish;
pub mod runner;
pub mod session;
pub mod sink;
pub mod worker;

pub use decider::{DeciderHandle, DeciderKind, DeciderRegistry, SessionResources};
pub use env_actor::{EnvActor, Render};
pub use error::{
    ChildFailure, DEADLINE_MISSED, DeciderError, ResumeError, SessionError, SinkError, StateError,
};
pub use messages::{
    BeginEpisode, CheckpointEvent, Decide, EpisodeEvent, LoadState, SaveState, StepEvent,
};
