//! The actix actors of mosaic.
//!
//! - [`session::Session`] runs the episodes of one operator (an environment and its agents)
//!   in lock-step and emits step and episode records to subscribers.
//! - [`env_actor::EnvActor`] owns an environment.
//! - [`operator`]: the `Decide` protocol every decider answers, the actor wrapping a
//!   synchronous [`mosaic_core::Policy`], and the registry of operator kinds.
//! - [`group::SessionGroup`] drives N sessions side by side (Step All / Reset All).
//! - [`channel::Channel`] carries messages between the agents of a session.
//! - `llm` (cargo feature `llm`, on by default): the LLM and VLM operators, their
//!   backends, prompts, parsers and the local model server.

pub mod channel;
pub mod error;
#[cfg(feature = "llm")]
pub mod llm;
pub mod messages;
pub mod operator;

pub use error::{OperatorError, SessionError};
pub use messages::{BeginEpisode, Decide, EpisodeEvent, StepEvent};
pub use operator::{OperatorHandle, OperatorKind, OperatorRegistry, SessionResources};
