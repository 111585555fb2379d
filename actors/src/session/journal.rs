//! What fault recovery needs to rebuild a child's state within an episode: the last
//! checkpoints and what happened since.

use mosaic_core::{Action, DecisionSource, Observation, Snapshot};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The journal of an episode since its last checkpoint.
pub(super) struct Journal {
    /// When the last checkpoint was taken.
    checkpointed: Option<Instant>,
    /// The environment at some step, when it can save its state.
    pub(super) env: Option<(u32, Snapshot)>,
    /// Joint actions since `env` (since the reset without one).
    pub(super) actions: Vec<Vec<Option<Action>>>,
    /// Per agent: its operator's state, when it can save it.
    pub(super) states: Vec<Option<serde_json::Value>>,
    /// Per agent: what it was asked since its state (since the episode start without one).
    pub(super) asked: Vec<Vec<Asked>>,
}

/// One decision as first made, replayed into a restarted decider.
pub(super) struct Asked {
    pub(super) step: u32,
    pub(super) obs: Arc<Observation>,
    pub(super) action: Action,
    pub(super) source: DecisionSource,
}

impl Journal {
    /// An empty journal for an episode of `agents` agents.
    pub(super) fn new(agents: usize) -> Self {
        Self {
            checkpointed: None,
            env: None,
            actions: Vec::new(),
            states: vec![None; agents],
            asked: (0..agents).map(|_| Vec::new()).collect(),
        }
    }

    /// Starts the checkpoint interval over (a checkpoint was taken, or the episode's
    /// state was just set up).
    pub(super) fn mark_checkpoint(&mut self) {
        self.checkpointed = Some(Instant::now());
    }

    /// Whether `interval` has passed since the last checkpoint.
    pub(super) fn checkpoint_due(&self, interval: Duration) -> bool {
        self.checkpointed.is_none_or(|at| at.elapsed() >= interval)
    }

    /// The environment saved its state at `step`: the actions before it are not needed.
    pub(super) fn env_saved(&mut self, step: u32, snapshot: Snapshot) {
        self.env = Some((step, snapshot));
        self.actions.clear();
    }

    /// An operator saved its state: the decisions before it are not needed.
    pub(super) fn decider_saved(&mut self, agent: usize, state: serde_json::Value) {
        self.states[agent] = Some(state);
        self.asked[agent].clear();
    }

    /// Whether the journal holds the whole episode state at this step: every operator's
    /// state with nothing asked since (the environment's may be missing).
    pub(super) fn complete(&self) -> bool {
        self.asked.iter().all(Vec::is_empty) && self.states.iter().all(Option::is_some)
    }

    /// The environment's snapshot when it was taken at `step`.
    pub(super) fn env_at(&self, step: u32) -> Option<Snapshot> {
        match &self.env {
            Some((at, snapshot)) if *at == step => Some(snapshot.clone()),
            _ => None,
        }
    }
}
