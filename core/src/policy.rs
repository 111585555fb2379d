//! Synchronous deciders.

use crate::{Decision, ObsRequest, Observation, Paradigm};

/// What an operator learns about its agent when an episode starts.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentContext {
    /// The episode's seed (shared by every operator running this episode).
    pub episode_seed: u64,
    /// The agent's index in the environment spec.
    pub agent: usize,
    /// The agent's slot name.
    pub agent_id: String,
    /// Number of discrete actions.
    pub num_actions: usize,
    /// The agent's own seed, derived from (episode seed, agent id): use it for all randomness.
    pub seed: u64,
}

impl AgentContext {
    /// A context whose agent seed is derived from the episode seed and the agent id.
    pub fn new(episode_seed: u64, agent: usize, agent_id: String, num_actions: usize) -> Self {
        let seed = crate::rng::derive_seed(episode_seed, &agent_id);
        Self {
            episode_seed,
            agent,
            agent_id,
            num_actions,
            seed,
        }
    }
}

/// A synchronous decider: random and scripted baselines, RL inference.
///
/// Asynchronous deciders (LLMs, people, external workers) are actors answering the same
/// `Decide` message; a `Policy` is wrapped in an operator actor by the framework.
pub trait Policy: Send {
    /// The paradigm shown for agents driven by this policy.
    fn paradigm(&self) -> Paradigm;

    /// Which observation modalities [`Policy::decide`] reads.
    fn wants(&self) -> ObsRequest {
        ObsRequest::MASK_ONLY
    }

    /// Called at the start of every episode; re-seed all randomness from `ctx.seed`.
    fn reset(&mut self, ctx: &AgentContext);

    /// Chooses an action for `obs`. Must return a legal action when one exists.
    fn decide(&mut self, obs: &Observation) -> Decision;

    /// The policy's state within the episode (RNG position, recurrent state, counters), for
    /// checkpoints. `None` (the default) means the policy cannot save it: fault recovery
    /// then rebuilds it by replaying the episode's observations from [`Policy::reset`].
    fn save_state(&self) -> Option<serde_json::Value> {
        None
    }

    /// Continues from a state returned by [`Policy::save_state`] (after [`Policy::reset`]
    /// of the same episode). Errors describe what does not fit.
    fn load_state(&mut self, state: &serde_json::Value) -> Result<(), String> {
        let _ = state;
        Err("this policy cannot restore a saved state".into())
    }
}
