//! Self-play: slots played by frozen copies of a learning group's policy, taken when
//! training starts and at every checkpoint.
//!
//! ```toml
//! [agents]
//! green = "learn"
//! blue = { kind = "self", group = "green", pool = 5 }   # one of green's last 5 snapshots
//! ```

use crate::policy::{Inference, RlPolicy};
use mosaic_core::rng::{derive_seed, seeded};
use mosaic_core::{AgentContext, Decision, ObsRequest, Observation, Paradigm, Policy};
use rand::Rng as _;
use serde::Deserialize;
use std::sync::Arc;

/// The slot kind of self-play opponents in training files.
pub const SELF_PLAY: &str = "self";

/// Settings of a `self` slot.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelfPlaySettings {
    /// The learning group (team, or agent id) whose snapshots play the slot.
    pub group: String,
    /// How many of the group's latest snapshots each episode draws its opponent from.
    #[serde(default = "one")]
    pub pool: usize,
}

fn one() -> usize {
    1
}

/// A slot played by a frozen snapshot of a learning group's policy, drawn per episode from
/// the group's latest `pool` snapshots with the episode's seed.
#[derive(Debug)]
pub struct Frozen {
    /// The learning group.
    pub group: usize,
    /// Snapshots drawn from.
    pub pool: usize,
    snapshots: Vec<Arc<Inference>>,
    current: Option<RlPolicy>,
}

impl Frozen {
    /// A slot of group `group`'s snapshots, drawing from the last `pool`.
    pub fn new(group: usize, pool: usize) -> Self {
        Self {
            group,
            pool,
            snapshots: Vec::new(),
            current: None,
        }
    }

    /// The group's snapshots so far, oldest first (the slot keeps the last `pool`); they
    /// take effect at the next episode.
    pub fn set_snapshots(&mut self, snapshots: &[Arc<Inference>]) {
        let keep = snapshots.len().saturating_sub(self.pool);
        self.snapshots = snapshots[keep..].to_vec();
    }
}

impl Policy for Frozen {
    fn paradigm(&self) -> Paradigm {
        Paradigm::Rl
    }

    fn wants(&self) -> ObsRequest {
        ObsRequest::SYMBOLIC
    }

    fn reset(&mut self, ctx: &AgentContext) {
        self.current = match self.snapshots.len() {
            0 => None,
            n => {
                let pick = seeded(derive_seed(ctx.seed, "self-play pool")).random_range(0..n);
                let mut policy = RlPolicy::new(self.snapshots[pick].clone(), false);
                policy.reset(ctx);
                Some(policy)
            }
        };
    }

    fn decide(&mut self, obs: &Observation) -> Decision {
        match &mut self.current {
            Some(policy) => policy.decide(obs),
            // Unreachable in training: snapshots are set before the first episode.
            None => Decision::act(obs.fallback(mosaic_core::Action(0))),
        }
    }
}
