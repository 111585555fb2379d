//! The environment trait and what it exchanges.

use crate::{Action, Frame, ObsRequest, Observation};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How agents take turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stepping {
    /// One agent.
    Single,
    /// Agent-environment cycle (PettingZoo AEC): exactly one agent acts per step.
    Sequential,
    /// Partially observable stochastic game: every live agent acts, joint action.
    Simultaneous,
}

/// One agent slot of an environment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentSpec {
    /// Slot name, e.g. `green_0`.
    pub id: String,
    /// Team name, e.g. `green`; `None` when the game has no teams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    /// The agent's role in this environment instance, e.g. `miner`, when the world gives
    /// its agents roles: deciders that describe the agent (an LLM prompt's `{role}`) take
    /// it from here instead of assuming the world's default order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

/// The static description of an environment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnvSpec {
    /// Registered name, e.g. `soccer-2v2`.
    pub name: String,
    /// Agent slots in index order.
    pub agents: Vec<AgentSpec>,
    /// One label per discrete action, e.g. `forward`.
    pub action_labels: Vec<String>,
    /// The action taken for an agent whose operator failed or missed its deadline.
    pub default_action: Action,
    /// Turn structure.
    pub stepping: Stepping,
    /// The environment's own step limit (truncation), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Shape of the symbolic observation, if the environment has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbolic_shape: Option<Vec<usize>>,
    /// Which modalities the environment can produce.
    pub offers: ObsRequest,
    /// Texts describing this instance of the environment in words, by name, for deciders
    /// that explain the world to their agent (an LLM prompt template's `{world.<name>}`),
    /// e.g. the coordination world's `achievements`: the achievements its configured
    /// scoring counts. Empty for most environments.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub descriptions: BTreeMap<String, String>,
}

impl EnvSpec {
    /// Index of the agent called `id`.
    pub fn agent_index(&self, id: &str) -> Option<usize> {
        self.agents.iter().position(|a| a.id == id)
    }

    /// Distinct team names in order of first appearance.
    pub fn teams(&self) -> Vec<&str> {
        let mut teams: Vec<&str> = Vec::new();
        for team in self.agents.iter().filter_map(|a| a.team.as_deref()) {
            if !teams.contains(&team) {
                teams.push(team);
            }
        }
        teams
    }

    /// The label of `action`, or `?` when out of range.
    pub fn action_label(&self, action: Action) -> &str {
        self.action_labels
            .get(action.index())
            .map_or("?", String::as_str)
    }
}

/// The kind of the event a session records when an environment executed another action
/// than the operator's (see [`Transition::executed`]): its detail holds the request
/// (`action`, `action_label`, `source`).
pub const REQUESTED_ACTION: &str = "requested_action";

/// Something notable that happened during a step (a goal, a pass, an achievement).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// What happened, e.g. `goal`.
    pub kind: String,
    /// The agent it concerns, by index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<usize>,
    /// Details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
}

/// The result of one environment step, reused across steps to avoid allocation.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct Transition {
    /// Reward per agent index.
    pub rewards: Vec<f32>,
    /// Per agent: reached a terminal state.
    pub terminated: Vec<bool>,
    /// Per agent: cut off (time limit).
    pub truncated: Vec<bool>,
    /// Notable events of this step.
    pub events: Vec<Event>,
    /// Per agent: the action the environment executed instead of the one it was given, for
    /// environments that decide for themselves (MOSAIC's env-owning workers); `None`: the
    /// given one. The session records the executed action, with the request as an event.
    pub executed: Vec<Option<Action>>,
}

impl Transition {
    /// A cleared transition for `agents` agents.
    pub fn new(agents: usize) -> Self {
        let mut t = Self::default();
        t.clear(agents);
        t
    }

    /// Resets every field for a new step of `agents` agents, keeping allocations.
    pub fn clear(&mut self, agents: usize) {
        self.rewards.clear();
        self.rewards.resize(agents, 0.0);
        self.terminated.clear();
        self.terminated.resize(agents, false);
        self.truncated.clear();
        self.truncated.resize(agents, false);
        self.events.clear();
        self.executed.clear();
        self.executed.resize(agents, None);
    }

    /// Whether every agent is terminated or truncated.
    pub fn all_done(&self) -> bool {
        self.terminated
            .iter()
            .zip(&self.truncated)
            .all(|(a, b)| *a || *b)
    }
}

/// An agent's result at the end of an episode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Won (its team won).
    Win,
    /// Drew.
    Draw,
    /// Lost.
    Loss,
}

/// Opaque environment state, enough to continue an episode exactly.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot(pub Vec<u8>);

/// An environment failed.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    /// A joint action did not fit the environment (wrong agent, out of range).
    #[error("invalid action for agent {agent}: {reason}")]
    InvalidAction {
        /// Agent index.
        agent: usize,
        /// What was wrong.
        reason: String,
    },
    /// `step` was called on a finished or never-reset episode.
    #[error("step called with no running episode")]
    NotRunning,
    /// A snapshot could not be restored.
    #[error("cannot restore snapshot: {0}")]
    Restore(String),
    /// The environment does not support what was asked.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The environment's process died, hung or broke its stream: this instance is lost and
    /// must be replaced (fault recovery restarts it and rebuilds its state).
    #[error("crashed: {0}")]
    Crashed(String),
    /// Anything else (external environments: a refused request, a protocol error).
    #[error("{0}")]
    Other(String),
}

/// The full view of `env` with the agents in `marked` marked when the environment can mark
/// agents (see [`Environment::render_marked`]), else its plain view; with whether the
/// agents are marked on it.
pub fn render_marked_or_plain(env: &dyn Environment, marked: &[usize]) -> Option<(Frame, bool)> {
    if !marked.is_empty()
        && let Some(frame) = env.render_marked(marked)
    {
        return Some((frame, true));
    }
    env.render().map(|frame| (frame, false))
}

/// A multi-agent environment, deterministic given the reset seed and the actions.
///
/// Every source of randomness must come from an RNG seeded in [`Environment::reset`]
/// (see [`crate::rng`]), never from global state, so that a recorded episode replays
/// exactly and fault recovery can rebuild state.
pub trait Environment: Send {
    /// The static description.
    fn spec(&self) -> &EnvSpec;

    /// Starts a new episode.
    fn reset(&mut self, seed: u64) -> Result<(), EnvError>;

    /// Agents that must act now, in index order: one for [`Stepping::Sequential`], every
    /// live agent for [`Stepping::Simultaneous`]; empty once the episode is over.
    fn acting(&self) -> Vec<usize>;

    /// The observation of `agent`, filling the modalities in `want` that the environment
    /// offers. The legal mask is always filled.
    fn observe(&self, agent: usize, want: ObsRequest) -> Observation;

    /// Advances one step. `actions[i]` is the action of agent `i`, `Some` exactly for the
    /// agents returned by [`Environment::acting`]. Writes into `out` (cleared first).
    fn step(&mut self, actions: &[Option<Action>], out: &mut Transition) -> Result<(), EnvError>;

    /// Steps taken since reset.
    fn steps(&self) -> u32;

    /// A full view of the world for people (viewports, replays).
    fn render(&self) -> Option<Frame> {
        None
    }

    /// The full view with the agents in `marked` (a person's, in manual mode) drawn above
    /// every other sprite and outlined in [`crate::canvas::MARK`], so that a person sees
    /// which sprite is theirs even on a teammate's cell; with `marked` empty, the picture
    /// of [`Environment::render`]. `None` when the environment marks no agents (its
    /// pictures have no agent sprites, or it draws them elsewhere, as external ones do):
    /// [`render_marked_or_plain`] then shows the plain view.
    fn render_marked(&self, marked: &[usize]) -> Option<Frame> {
        let _ = marked;
        None
    }

    /// Per-agent results once the episode is over; `None` when the game has no winner.
    fn outcome(&self) -> Option<Vec<Outcome>> {
        None
    }

    /// Episode-level metrics for reports (goals, achievements, coordination rates).
    fn metrics(&self) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }

    /// The current state, when the environment can save it.
    fn snapshot(&self) -> Option<Snapshot> {
        None
    }

    /// Continues from a snapshot taken by [`Environment::snapshot`].
    fn restore(&mut self, snapshot: &Snapshot) -> Result<(), EnvError> {
        let _ = snapshot;
        Err(EnvError::Unsupported(format!(
            "{} has no snapshot support",
            self.spec().name
        )))
    }
}
