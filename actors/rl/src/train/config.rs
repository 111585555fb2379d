//! What to train: the training file (`mosaic train TRAIN.toml`), also built in code.

use crate::error::{Result, RlError};
use crate::net::Architecture;
use mosaic_core::experiment::{DEFAULT_SLOT, SlotSpec, parse_settings};
use mosaic_core::{EnvSpec, Settings, SpecError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The decider kind that marks the slots being trained.
pub const LEARN: &str = "learn";

/// How the critics of a team see the game.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// Independent PPO: each agent's critic reads its own observation.
    #[default]
    Ippo,
    /// Multi-agent PPO: a centralised critic reads the observations of the agent's whole
    /// team (its own first, then its teammates' in agent order); the policy still reads the
    /// agent's own, so it acts alone.
    Mappo,
}

/// PPO's hyperparameters (CleanRL's defaults for discrete actions).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PpoConfig {
    /// Adam's step size.
    pub learning_rate: f64,
    /// Anneal the step size linearly to 0 over the run.
    pub anneal_lr: bool,
    /// Discount.
    pub gamma: f32,
    /// GAE's λ.
    pub gae_lambda: f32,
    /// Probability-ratio clipping.
    pub clip: f32,
    /// Passes over each batch.
    pub epochs: usize,
    /// Minibatches per pass.
    pub minibatches: usize,
    /// Weight of the entropy bonus.
    pub entropy_coef: f32,
    /// Weight of the value loss.
    pub value_coef: f32,
    /// Global gradient-norm limit.
    pub max_grad_norm: f32,
    /// Recurrent (GRU) networks: transitions per training sequence, the horizon of
    /// truncated backpropagation through time; minibatches are made of whole sequences.
    pub sequence_length: usize,
}

impl Default for PpoConfig {
    fn default() -> Self {
        Self {
            learning_rate: 2.5e-4,
            anneal_lr: true,
            gamma: 0.99,
            gae_lambda: 0.95,
            clip: 0.2,
            epochs: 4,
            minibatches: 4,
            entropy_coef: 0.01,
            value_coef: 0.5,
            max_grad_norm: 0.5,
            sequence_length: 16,
        }
    }
}

/// A training run: environment, who learns, who they play against, and how.
///
/// ```
/// let spec: mosaic_rl::train::TrainSpec = toml::from_str(r#"
///     name = "soccer-ippo"
///     env = "soccer-2v2"
///     total_steps = 100000
///     [agents]
///     green = "learn"
///     "*" = "random"
/// "#).unwrap();
/// assert_eq!(spec.envs, 8);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainSpec {
    /// Human-readable name; part of the default run id.
    pub name: String,
    /// A native environment, e.g. `soccer-2v2`.
    pub env: String,
    /// Its settings.
    #[serde(default, skip_serializing_if = "Settings::is_empty")]
    pub env_settings: Settings,
    /// Who plays each slot, by agent id, team name or `*` (in that order of precedence):
    /// `learn` for the slots being trained (one shared policy per team; per agent when the
    /// game has no teams), any fixed kind otherwise (`random`, `noop`, `cycling`,
    /// `scripted`, `rl` with a checkpoint). Written like an experiment's slots.
    #[serde(deserialize_with = "slots")]
    pub agents: BTreeMap<String, SlotSpec>,
    /// Seed of everything: weights, episodes, action draws, minibatches.
    #[serde(default)]
    pub seed: u64,
    /// Environment steps to train for (summed over the parallel environments).
    pub total_steps: u64,
    /// Environments stepped in parallel.
    #[serde(default = "default_envs")]
    pub envs: usize,
    /// Worker threads stepping them, and (above one) the threads of the PPO update; results
    /// depend on the seed only, not on this.
    #[serde(default = "default_threads")]
    pub threads: usize,
    /// Steps of each environment per update.
    #[serde(default = "default_rollout")]
    pub rollout: usize,
    /// Updates between checkpoints (every environment starts a new episode after one).
    #[serde(default = "default_checkpoint_every")]
    pub checkpoint_every: u64,
    /// IPPO (independent critics, the default) or MAPPO (a centralised critic per team).
    #[serde(default)]
    pub algorithm: Algorithm,
    /// The network; default: an MLP of two 64-unit layers (a small CNN over planes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<Architecture>,
    /// PPO's hyperparameters.
    #[serde(default)]
    pub ppo: PpoConfig,
    /// Learn from each agent's reward minus the mean reward its opponents (the agents of
    /// the other teams; without teams, every other agent) got at the same step, so a
    /// goal conceded costs what a goal scored earns. Recorded returns stay the
    /// environment's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zero_sum: bool,
}

fn default_envs() -> usize {
    8
}
fn default_threads() -> usize {
    2
}
fn default_rollout() -> usize {
    128
}
fn default_checkpoint_every() -> u64 {
    10
}

/// Slots written as `green = "learn"` or `blue_0 = { kind = "rl", checkpoint = "..." }`.
fn slots<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<BTreeMap<String, SlotSpec>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Slot {
        Kind(String),
        Spec(SlotSpec),
    }
    let slots = BTreeMap::<String, Slot>::deserialize(deserializer)?;
    Ok(slots
        .into_iter()
        .map(|(key, slot)| {
            let spec = match slot {
                Slot::Kind(kind) => SlotSpec::kind(kind),
                Slot::Spec(spec) => spec,
            };
            (key, spec)
        })
        .collect())
}

impl TrainSpec {
    /// Reads a training file (TOML, or JSON by extension).
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| RlError::io(path, e))?;
        let spec: TrainSpec = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(&text).map_err(|source| RlError::Json {
                path: path.to_owned(),
                source,
            })?
        } else {
            toml::from_str(&text)
                .map_err(|e| SpecError::new("", format!("{}: {}", path.display(), e.message())))?
        };
        spec.validate()?;
        Ok(spec)
    }

    /// Checks the numbers (the slots are checked against the environment when training
    /// starts).
    pub fn validate(&self) -> std::result::Result<(), SpecError> {
        let positive = [
            ("total_steps", self.total_steps),
            ("envs", self.envs as u64),
            ("threads", self.threads as u64),
            ("rollout", self.rollout as u64),
            ("checkpoint_every", self.checkpoint_every),
            ("ppo.epochs", self.ppo.epochs as u64),
            ("ppo.minibatches", self.ppo.minibatches as u64),
            ("ppo.sequence_length", self.ppo.sequence_length as u64),
        ];
        if let Some((field, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(SpecError::new(*field, "must be at least 1"));
        }
        if self.ppo.learning_rate.is_nan() || self.ppo.learning_rate <= 0.0 {
            return Err(SpecError::new("ppo.learning_rate", "must be positive"));
        }
        if !self.agents.values().any(|s| s.kind == LEARN) {
            return Err(SpecError::new(
                "agents",
                format!("no slot is trained: give at least one slot the kind `{LEARN}`"),
            ));
        }
        Ok(())
    }

    /// The slot of agent `index` of `spec`: by agent id, then team name, then `*`.
    pub fn slot_for<'a>(&'a self, spec: &EnvSpec, index: usize) -> Option<&'a SlotSpec> {
        let agent = &spec.agents[index];
        self.agents
            .get(&agent.id)
            .or_else(|| agent.team.as_ref().and_then(|t| self.agents.get(t)))
            .or_else(|| self.agents.get(DEFAULT_SLOT))
    }

    /// The learning groups of `spec`: one per team with a learning slot (an agent's own
    /// id when it has no team), each with its agent indices, in order of first agent.
    pub fn groups(&self, spec: &EnvSpec) -> std::result::Result<Vec<Group>, SpecError> {
        let mut groups: Vec<Group> = Vec::new();
        for (index, agent) in spec.agents.iter().enumerate() {
            let slot = self.slot_for(spec, index).ok_or_else(|| {
                SpecError::new(
                    "agents",
                    format!("no slot for agent `{}` (add it, its team or `*`)", agent.id),
                )
            })?;
            if slot.kind != LEARN {
                continue;
            }
            let start = parse_settings::<LearnSettings>(&slot.settings)
                .and_then(LearnSettings::start)
                .map_err(|e| e.within(&format!("agents.{}", agent.id)))?;
            let name = agent.team.clone().unwrap_or_else(|| agent.id.clone());
            match groups.iter_mut().find(|g| g.name == name) {
                Some(group) if group.start != start => {
                    return Err(SpecError::new(
                        format!("agents.{}", agent.id),
                        "its `from` differs from its teammates': a team learns one policy, \
                         so it starts from one checkpoint",
                    ));
                }
                Some(group) => group.agents.push(index),
                None => groups.push(Group {
                    name,
                    agents: vec![index],
                    start,
                }),
            }
        }
        if groups.is_empty() {
            return Err(SpecError::new(
                "agents",
                format!("no agent of `{}` is trained", spec.name),
            ));
        }
        Ok(groups)
    }
}

/// Agents sharing one trained policy (a team, or one agent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The team name (or the agent's id); names the group's checkpoints.
    pub name: String,
    /// Agent indices.
    pub agents: Vec<usize>,
    /// The checkpoint its policy starts from (fine-tuning), instead of fresh weights.
    pub start: Option<StartFrom>,
}

/// Settings of a `learn` slot: `green = { kind = "learn", from = "policies/soccer-ippo" }`
/// starts the team's policy (actor and critic) from a checkpoint instead of fresh weights,
/// e.g. to go on training a team against harder opponents (a curriculum). With
/// `transfer = true` the checkpoint may come from another environment with the same
/// observation shape and actions (a solo policy fine-tuned in a team).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LearnSettings {
    from: Option<PathBuf>,
    #[serde(default)]
    transfer: bool,
}

impl LearnSettings {
    fn start(self) -> std::result::Result<Option<StartFrom>, SpecError> {
        match (self.from, self.transfer) {
            (Some(from), transfer) => Ok(Some(StartFrom { from, transfer })),
            (None, true) => Err(SpecError::new("transfer", "needs `from`, the checkpoint")),
            (None, false) => Ok(None),
        }
    }
}

/// Where a learning group's policy starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartFrom {
    /// The checkpoint (stem, manifest or weights file), as an `rl` slot names it.
    pub from: PathBuf,
    /// Accept a checkpoint trained in another environment (see the `rl` kind).
    pub transfer: bool,
}
