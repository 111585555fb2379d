//! Telemetry records: what a run writes, one JSON object per line.
//!
//! Every record carries a `schema` tag (`mosaic.step/1`, `mosaic.episode/1`, ...). The
//! fields follow MOSAIC's `StepRecord` / `EpisodeRollup` plus the ids that make records of
//! many runs, operators and agents comparable. Only the fields in [`VOLATILE_FIELDS`]
//! (wall-clock times and durations, and how an LLM answer was served) may differ between
//! two runs of the same experiment.

use crate::{Event, Outcome, Paradigm};
use serde::{Deserialize, Serialize};

/// Schema tag of [`StepRecord`].
pub const STEP_SCHEMA: &str = "mosaic.step/1";
/// Schema tag of [`EpisodeRecord`].
pub const EPISODE_SCHEMA: &str = "mosaic.episode/1";
/// Schema tag of [`RunManifest`].
pub const RUN_SCHEMA: &str = "mosaic.run/1";
/// Schema tag of [`EpisodeCheckpoint`].
pub const CHECKPOINT_SCHEMA: &str = "mosaic.checkpoint/1";

/// Fields that hold wall-clock times or durations, or say how an LLM answer was served
/// (`cache_hits`: a replay serves every answer from the response cache): the only ones
/// allowed to differ between two runs of the same experiment.
pub const VOLATILE_FIELDS: &[&str] = &[
    "timestamp",
    "decision_us",
    "duration_ms",
    "latency_ms",
    "steps_per_s",
    "started",
    "finished",
    "restarts",
    "cache_hits",
];

/// One agent at one environment step. Every agent alive at the start of the step gets one
/// record; in sequential games the agents that did not move have `action: null`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// Always [`STEP_SCHEMA`].
    pub schema: String,
    /// The run.
    pub run_id: String,
    /// The operator (environment configuration).
    pub operator_id: String,
    /// `{run}-{operator}-ep{index:06}`.
    pub episode_id: String,
    /// Episode index within the operator.
    pub episode_index: u32,
    /// The episode's seed.
    pub seed: u64,
    /// Environment step index: the action was taken on the observation of this step.
    pub step_index: u32,
    /// Agent slot.
    pub agent_id: String,
    /// Paradigm of the agent's decider.
    pub paradigm: Paradigm,
    /// Decider kind, e.g. `scripted`.
    pub kind: String,
    /// The action taken, `None` when the agent did not act this step.
    pub action: Option<u32>,
    /// The action's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_label: Option<String>,
    /// Why the action was taken (present when the agent acted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_source: Option<crate::DecisionSource>,
    /// Reward received at this step.
    pub reward: f32,
    /// Reached a terminal state at this step.
    pub terminated: bool,
    /// Cut off at this step.
    pub truncated: bool,
    /// The observation text the agent decided on (when the experiment records them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<String>,
    /// Events of this step concerning this agent; events concerning no agent are attached
    /// to the step's first record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Event>,
    /// Operator details (LLM text, message, scratchpad, usage; worker errors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<serde_json::Value>,
    /// Time the decision took, microseconds (volatile).
    #[serde(default)]
    pub decision_us: u64,
    /// Unix time in milliseconds when the step completed (volatile).
    #[serde(default)]
    pub timestamp: u64,
}

/// One agent's totals in an episode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentResult {
    /// Agent slot.
    pub agent_id: String,
    /// Team, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    /// Paradigm of its operator.
    pub paradigm: Paradigm,
    /// Decider kind.
    pub kind: String,
    /// Sum of rewards.
    pub total_reward: f64,
    /// Win / draw / loss, when the game has a winner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// Decisions made.
    pub decisions: u32,
    /// Decisions replaced by the default action after a missed deadline.
    #[serde(default)]
    pub timeouts: u32,
    /// Decisions replaced by the default action after an operator error.
    #[serde(default)]
    pub errors: u32,
}

/// The roll-up of one finished episode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpisodeRecord {
    /// Always [`EPISODE_SCHEMA`].
    pub schema: String,
    /// The run.
    pub run_id: String,
    /// The operator.
    pub operator_id: String,
    /// `{run}-{operator}-ep{index:06}`.
    pub episode_id: String,
    /// Episode index within the operator.
    pub episode_index: u32,
    /// The episode's seed.
    pub seed: u64,
    /// Environment name.
    pub env: String,
    /// Environment steps taken.
    pub steps: u32,
    /// Ended in a terminal state.
    pub terminated: bool,
    /// Ended by a step limit.
    pub truncated: bool,
    /// Per-agent totals, in environment agent order.
    pub agents: Vec<AgentResult>,
    /// Environment metrics (goals, achievements, coordination rates).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub metrics: serde_json::Map<String, serde_json::Value>,
    /// Why the episode failed, if it did (its steps up to the failure are recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Failures recovered from during the episode (volatile: a clean run has none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restarts: Vec<RestartRecord>,
    /// Wall time of the episode, milliseconds (volatile).
    #[serde(default)]
    pub duration_ms: u64,
    /// Environment steps per second (volatile).
    #[serde(default)]
    pub steps_per_s: f64,
    /// Unix time in milliseconds when the episode ended (volatile).
    #[serde(default)]
    pub timestamp: u64,
}

impl EpisodeRecord {
    /// The roll-up of episode `episode_index` of `operator` in `run` (on `env`, from `seed`)
    /// before anything happened: no steps, no agents, ended now. Fill in the rest with
    /// struct update syntax.
    ///
    /// ```
    /// use mosaic_core::record::EpisodeRecord;
    /// use mosaic_core::{OperatorId, RunId};
    /// let record = EpisodeRecord::new(&RunId::from("r"), &OperatorId::from("op"), 3, 7, "soccer-2v2");
    /// assert_eq!(record.episode_id, "r-op-ep000003");
    /// assert_eq!((record.steps, record.error), (0, None));
    /// ```
    pub fn new(
        run: &crate::RunId,
        operator: &crate::OperatorId,
        episode_index: u32,
        seed: u64,
        env: impl Into<String>,
    ) -> Self {
        Self {
            schema: EPISODE_SCHEMA.to_owned(),
            run_id: run.to_string(),
            operator_id: operator.to_string(),
            episode_id: crate::EpisodeId::new(run, operator, episode_index).0,
            episode_index,
            seed,
            env: env.into(),
            steps: 0,
            terminated: false,
            truncated: false,
            agents: Vec::new(),
            metrics: serde_json::Map::new(),
            error: None,
            restarts: Vec::new(),
            duration_ms: 0,
            steps_per_s: 0.0,
            timestamp: now_ms(),
        }
    }

    /// The indices in `spec` of the agents a person played, to mark on replayed frames
    /// ([`crate::Environment::render_marked`]) as the page marked them live.
    ///
    /// ```
    /// use mosaic_core::record::{AgentResult, EpisodeRecord};
    /// use mosaic_core::{AgentSpec, EnvSpec, ObsRequest, Paradigm, RunId, OperatorId, Stepping, Action};
    /// let agent = |id: &str| AgentSpec { id: id.into(), team: None, role: None };
    /// let spec = EnvSpec {
    ///     name: "duel".into(), agents: vec![agent("red"), agent("blue")],
    ///     action_labels: vec!["stay".into()], default_action: Action(0),
    ///     stepping: Stepping::Simultaneous, max_steps: None, symbolic_shape: None,
    ///     offers: ObsRequest::MASK_ONLY,
    ///     descriptions: Default::default(),
    /// };
    /// let result = |id: &str, paradigm| AgentResult {
    ///     agent_id: id.into(), team: None, paradigm, kind: "k".into(), total_reward: 0.0,
    ///     outcome: None, decisions: 0, timeouts: 0, errors: 0,
    /// };
    /// let record = EpisodeRecord {
    ///     agents: vec![result("red", Paradigm::Random), result("blue", Paradigm::Human)],
    ///     ..EpisodeRecord::new(&RunId::from("r"), &OperatorId::from("op"), 0, 1, "duel")
    /// };
    /// assert_eq!(record.human_agents(&spec), vec![1]);
    /// ```
    pub fn human_agents(&self, spec: &crate::EnvSpec) -> Vec<usize> {
        self.agents
            .iter()
            .filter(|a| a.paradigm == Paradigm::Human)
            .filter_map(|a| spec.agent_index(&a.agent_id))
            .collect()
    }
}

/// One failure of an environment or operator and how it was recovered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RestartRecord {
    /// `env`, or the agent id whose operator failed.
    pub child: String,
    /// The step being taken when the failure was detected.
    pub step_index: u32,
    /// What failed.
    pub failure: String,
    /// How the state was rebuilt, e.g. `snapshot at step 40, replayed 3 steps`; empty when
    /// the restart failed.
    pub recovery: String,
    /// Whether the child runs again with its state rebuilt (`false`: it escalated).
    pub recovered: bool,
    /// When a replay produced other decisions or observations than the first time: where.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diverged: Option<String>,
    /// Time from the failure's detection to the restored child, milliseconds.
    pub recovery_ms: u64,
    /// Unix time in milliseconds of the detection.
    pub timestamp: u64,
}

/// The saved state of an unfinished episode after its first `step_index` steps: what
/// `mosaic resume` continues from when the run's process died. Written only once the step
/// records before it are durable, and only when every operator could save its state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpisodeCheckpoint {
    /// Always [`CHECKPOINT_SCHEMA`].
    pub schema: String,
    /// The run.
    pub run_id: String,
    /// The operator configuration.
    pub operator_id: String,
    /// The episode index within the operator.
    pub episode_index: u32,
    /// Steps taken: the state is the one before step `step_index`.
    pub step_index: u32,
    /// The environment's snapshot; `None` when it cannot save its state (it is then rebuilt
    /// by replaying the recorded actions from the seed).
    pub env: Option<crate::Snapshot>,
    /// Each agent's decider state, in agent order.
    pub operators: Vec<serde_json::Value>,
    /// The message channel's state (messages not yet delivered).
    pub channel: serde_json::Value,
    /// Restarts of the episode so far.
    pub restarts: Vec<RestartRecord>,
}

/// `run.json`: what was run, with which software, under which seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunManifest {
    /// Always [`RUN_SCHEMA`].
    pub schema: String,
    /// The run id.
    pub run_id: String,
    /// The experiment as run.
    pub experiment: crate::ExperimentSpec,
    /// Seed of every episode.
    pub seeds: Vec<u64>,
    /// Software versions (`mosaic`, crates, workers).
    pub versions: serde_json::Map<String, serde_json::Value>,
    /// Unix time in milliseconds when the run started (volatile).
    pub started: u64,
    /// The shard of a larger run this run holds (absent in the manifests of whole runs,
    /// and of runs written before sharding existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardTag>,
}

/// One of `count` shards of a run: shard `index` (from 0) runs a contiguous range of the
/// run's units in episode-major order (each episode's operators in the experiment's
/// order), the ranges differing in length by at most one.
///
/// Contiguous ranges rather than every `count`-th unit: a shard then runs every operator
/// configuration of its episodes, so shards stay balanced when configurations differ in
/// cost (an LLM agent beside a scripted one), whatever the number of configurations.
///
/// ```
/// use mosaic_core::record::Shard;
/// let shard: Shard = "1/4".parse().unwrap();
/// assert_eq!(shard.units(10), 2..5);
/// assert_eq!(shard.to_string(), "1/4");
/// assert!("4/4".parse::<Shard>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shard {
    /// Which shard, from 0.
    pub index: u32,
    /// How many shards the run is split into.
    pub count: u32,
}

impl Shard {
    /// Shard `index` of `count`, if `index < count`.
    pub fn new(index: u32, count: u32) -> Result<Self, ShardError> {
        if index < count {
            Ok(Self { index, count })
        } else {
            Err(ShardError::OutOfRange { index, count })
        }
    }

    /// The episode-major indices of this shard's units among `total` units.
    pub fn units(self, total: u64) -> std::ops::Range<u64> {
        let bound = |k: u32| total * u64::from(k) / u64::from(self.count.max(1));
        bound(self.index)..bound(self.index + 1)
    }

    /// The shard of `count` that runs the unit at episode-major index `unit` of `total`
    /// (`unit < total`): the last shard whose range starts at or before it.
    pub fn owner(unit: u64, total: u64, count: u32) -> u32 {
        let (unit, total, count) = (
            u128::from(unit),
            u128::from(total.max(1)),
            u128::from(count),
        );
        (((unit + 1) * count).saturating_sub(1) / total) as u32
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = ShardError;

    /// `K/N`: shard `K` (from 0) of `N`.
    fn from_str(text: &str) -> Result<Self, ShardError> {
        let malformed = || ShardError::Malformed(text.to_owned());
        let (index, count) = text.split_once('/').ok_or_else(malformed)?;
        let index = index.trim().parse().map_err(|_| malformed())?;
        let count = count.trim().parse().map_err(|_| malformed())?;
        Self::new(index, count)
    }
}

/// A shard that does not exist.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// Not of the form `K/N`.
    #[error("`{0}` is not a shard: write K/N, shard K (counted from 0) of N")]
    Malformed(String),
    /// `K` is not below `N`.
    #[error("there is no shard {index} of {count}: shards are counted from 0 to {count}-1")]
    OutOfRange {
        /// The index given.
        index: u32,
        /// The count given.
        count: u32,
    },
}

/// What the manifest of a part of a run (a shard, or a pool worker's units) says about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardTag {
    /// The identity of the experiment (a hash of everything in it that decides the
    /// records), the same in every part of the run.
    pub experiment: String,
    /// Which part.
    #[serde(flatten)]
    pub part: RunPart,
}

/// Which part of a run a run directory holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RunPart {
    /// A shard: a fixed share of the units (`index`, `count`).
    Shard(Shard),
    /// The units a worker took from a pool shared with other workers (`mosaic run
    /// --pool`): as many as it could, none planned in advance.
    Pool {
        /// The worker's name.
        worker: String,
        /// The pool directory, as the worker was given it.
        pool: std::path::PathBuf,
    },
}

impl RunPart {
    /// The shard, if the part is one.
    pub fn shard(&self) -> Option<Shard> {
        match self {
            RunPart::Shard(shard) => Some(*shard),
            RunPart::Pool { .. } => None,
        }
    }
}

impl std::fmt::Display for RunPart {
    /// `K/N` for a shard, `pool:WORKER` for a pool worker's part.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunPart::Shard(shard) => write!(f, "{shard}"),
            RunPart::Pool { worker, .. } => write!(f, "pool:{worker}"),
        }
    }
}

impl RunManifest {
    /// The manifest of a run of `experiment` starting now, with every episode's seed.
    ///
    /// ```
    /// use mosaic_core::record::RunManifest;
    /// let experiment: mosaic_core::ExperimentSpec = serde_json::from_value(serde_json::json!({
    ///     "name": "e", "episodes": 2, "seeds": {"plan": "list", "seeds": [7, 9]},
    ///     "operators": [{"id": "a", "env": "soccer-1v1", "agents": {}}]
    /// }))
    /// .unwrap();
    /// let manifest = RunManifest::new("r1", experiment, serde_json::Map::new());
    /// assert_eq!(manifest.seeds, [7, 9]);
    /// ```
    pub fn new(
        run_id: impl Into<String>,
        experiment: crate::ExperimentSpec,
        versions: serde_json::Map<String, serde_json::Value>,
    ) -> Self {
        Self {
            schema: RUN_SCHEMA.to_owned(),
            run_id: run_id.into(),
            seeds: experiment.episode_seeds(),
            experiment,
            versions,
            started: now_ms(),
            shard: None,
        }
    }
}

/// Unix time in milliseconds, for the volatile `timestamp` fields.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Removes the [`VOLATILE_FIELDS`] from a record, recursively, so that records of two runs
/// can be compared for equality.
///
/// ```
/// let mut v = serde_json::json!({"reward": 1.0, "timestamp": 5, "agents": [{"decision_us": 3}]});
/// mosaic_core::record::strip_volatile(&mut v);
/// assert_eq!(v, serde_json::json!({"reward": 1.0, "agents": [{}]}));
/// ```
pub fn strip_volatile(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            for field in VOLATILE_FIELDS {
                map.remove(*field);
            }
            map.values_mut().for_each(strip_volatile);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_volatile),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::Shard;

    #[test]
    fn shards_cover_every_unit_once_and_each_unit_knows_its_shard() {
        for total in [0u64, 1, 2, 5, 7, 10, 100, 1001] {
            for count in 1..=9u32 {
                let mut next = 0;
                for index in 0..count {
                    let range = Shard::new(index, count).unwrap().units(total);
                    assert_eq!(range.start, next, "{total} units, shard {index}/{count}");
                    assert!(range.end - range.start <= total / u64::from(count) + 1);
                    for unit in range.clone() {
                        assert_eq!(Shard::owner(unit, total, count), index);
                    }
                    next = range.end;
                }
                assert_eq!(next, total);
            }
        }
    }

    #[test]
    fn shards_parse_from_k_of_n() {
        assert_eq!("0/1".parse::<Shard>(), Shard::new(0, 1));
        assert!("1".parse::<Shard>().is_err());
        assert!("2/2".parse::<Shard>().is_err());
        assert!("a/2".parse::<Shard>().is_err());
    }
}
