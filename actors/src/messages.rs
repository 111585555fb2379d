//! Messages between sessions, operators and subscribers.

use crate::OperatorError;
use actix::Message;
use mosaic_core::record::{EpisodeCheckpoint, EpisodeRecord, StepRecord};
use mosaic_core::{AgentContext, Decision, EnvSpec, Observation};
use std::sync::Arc;
use std::time::Instant;

/// Starts an episode for one agent: re-seed, clear history.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<(), OperatorError>")]
pub struct BeginEpisode {
    /// The agent's seed, index and id.
    pub ctx: AgentContext,
    /// The environment it plays in.
    pub spec: Arc<EnvSpec>,
}

/// Asks an operator for one agent's decision at one step.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Decision, OperatorError>")]
pub struct Decide {
    /// What the agent sees (modalities as the operator asked for).
    pub obs: Arc<Observation>,
    /// Environment step index.
    pub step: u32,
    /// When the session stops waiting and takes the default action.
    pub deadline: Option<Instant>,
}

/// One environment step has been taken: the records of every agent alive at its start.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct StepEvent {
    /// One record per agent.
    pub records: Arc<Vec<StepRecord>>,
}

/// An episode has finished (or failed).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct EpisodeEvent {
    /// The roll-up.
    pub record: Arc<EpisodeRecord>,
}

/// The state of an unfinished episode after its first `step_index` steps, sent after the
/// step events of those steps (a durable sink saves it once they are durable; a resumed run
/// continues the episode from it).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct CheckpointEvent {
    /// The checkpoint.
    pub checkpoint: Arc<EpisodeCheckpoint>,
}

/// Asks an operator for a checkpoint of its state within the episode. `Ok(None)`: it cannot
/// save its state; fault recovery then replays the episode's decisions instead.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Result<Option<serde_json::Value>, OperatorError>")]
pub struct SaveState;

/// Restores a state answered by [`SaveState`] (sent after [`BeginEpisode`] of the same
/// episode).
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<(), OperatorError>")]
pub struct LoadState(pub serde_json::Value);
