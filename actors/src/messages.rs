//! Messages between sessions, operators and subscribers.

use crate::DeciderError;
use actix::Message;
use mosaic_core::record::{EpisodeCheckpoint, EpisodeRecord, StepRecord};
use mosaic_core::{AgentContext, Decision, EnvSpec, Observation};
use std::sync::Arc;
use std::time::Instant;

/// Starts an episode for one agent: re-seed, clear history.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<(), DeciderError>")]
pub struct BeginEpisode {
    /// The agent's seed, index and id.
    pub ctx: AgentContext,
    /// The environment it plays in.
    pub spec: Arc<EnvSpec>,
}

/// Asks an operator for one agent's decision at one step.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Decision, DeciderError>")]
pub struct Decide {
    /// What the agent sees (modalities as the operator asked for).
    pub obs: Arc<Observation>,
    /// Environment step index.
    pub step: u32,
    /// When the session stops waiting and takes the default action.
    pub deadline: Option<Instant>,
}

/// Environment steps have been taken: the records of one or more consecutive steps of one
/// episode, in step order. Each step has one record per agent alive at its start, in agent
/// order. Sessions send steps in batches (see `docs/semantics.md`); [`StepEvent::steps`]
/// splits a batch into its steps.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct StepEvent {
    /// The records, step after step.
    pub records: Arc<Vec<StepRecord>>,
}

impl StepEvent {
    /// The records of each step, in order (consecutive records of one episode and step
    /// index form a step).
    ///
    /// ```
    /// use mosaic_actors::StepEvent;
    /// use mosaic_recorder::synthetic;
    /// use std::sync::Arc;
    ///
    /// // An episode of 3 steps by 2 agents, sent as one batch.
    /// let episode = synthetic::episode(&synthetic::unit("r1", "a", 0, 7), 3, 2);
    /// let event = StepEvent { records: Arc::new(episode.steps.concat()) };
    /// let steps: Vec<Vec<_>> = event.steps().map(<[_]>::to_vec).collect();
    /// assert_eq!(steps, episode.steps);
    /// ```
    pub fn steps(&self) -> impl Iterator<Item = &[StepRecord]> {
        self.records.chunk_by(|a, b| {
            a.step_index == b.step_index
                && a.episode_index == b.episode_index
                && a.operator_id == b.operator_id
        })
    }
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
#[rtype(result = "Result<Option<serde_json::Value>, DeciderError>")]
pub struct SaveState;

/// Restores a state answered by [`SaveState`] (sent after [`BeginEpisode`] of the same
/// episode).
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<(), DeciderError>")]
pub struct LoadState(pub serde_json::Value);
