//! Experiments as data: what to run, with which agents, under which seeds.
//!
//! The same [`ExperimentSpec`] is read from TOML or JSON files and built in Rust code.
//!
//! ```
//! use mosaic_core::experiment::{ExperimentSpec, SeedPlan};
//! let spec: ExperimentSpec = serde_json::from_value(serde_json::json!({
//!     "name": "demo",
//!     "episodes": 3,
//!     "seeds": { "plan": "procedural", "base": 100 },
//!     "operators": [{
//!         "id": "soccer",
//!         "env": "soccer-2v2",
//!         "agents": { "*": { "kind": "random" }, "green_0": { "kind": "scripted" } }
//!     }]
//! })).unwrap();
//! spec.validate().unwrap();
//! assert_eq!(spec.episode_seeds(), vec![100, 101, 102]);
//! ```

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Free-form settings of an environment or a decider kind (validated by whoever reads
/// them).
pub type Settings = serde_json::Map<String, serde_json::Value>;

/// The slot key that applies to every agent not named explicitly.
pub const DEFAULT_SLOT: &str = "*";

/// How episode seeds are chosen. Episode `i` of every operator gets the same seed, so
/// operators side by side face the same worlds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "plan", rename_all = "snake_case", deny_unknown_fields)]
pub enum SeedPlan {
    /// `seed_i = base + i`.
    Procedural {
        /// The seed of episode 0.
        #[serde(default)]
        base: u64,
    },
    /// The same seed every episode.
    Fixed {
        /// The seed.
        seed: u64,
    },
    /// An explicit list; episode `i` gets `seeds[i]`.
    List {
        /// One seed per episode.
        seeds: Vec<u64>,
    },
}

impl Default for SeedPlan {
    fn default() -> Self {
        SeedPlan::Procedural { base: 0 }
    }
}

impl SeedPlan {
    /// The seed of episode `index`, `None` past the end of an explicit list.
    pub fn seed(&self, index: u32) -> Option<u64> {
        match self {
            SeedPlan::Procedural { base } => Some(base.wrapping_add(u64::from(index))),
            SeedPlan::Fixed { seed } => Some(*seed),
            SeedPlan::List { seeds } => seeds.get(index as usize).copied(),
        }
    }
}

/// One agent slot's operator: a registered kind plus its settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlotSpec {
    /// Registered decider kind, e.g. `random`, `scripted`, `llm`.
    pub kind: String,
    /// Settings of the kind, written beside `kind`.
    #[serde(flatten)]
    pub settings: Settings,
}

impl SlotSpec {
    /// A slot of `kind` with no settings.
    pub fn kind(kind: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            settings: Settings::new(),
        }
    }
}

/// One environment configuration and the operators of its agent slots.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorSpec {
    /// Unique within the experiment; part of episode ids.
    pub id: String,
    /// Registered environment name, e.g. `soccer-2v2`.
    pub env: String,
    /// Environment settings, e.g. `view_size = 7`.
    #[serde(default, skip_serializing_if = "Settings::is_empty")]
    pub env_settings: Settings,
    /// Agent slot (or `*`) to operator.
    pub agents: BTreeMap<String, SlotSpec>,
}

impl OperatorSpec {
    /// The operator for agent `agent_id`: its own slot, else the `*` slot.
    pub fn slot_for(&self, agent_id: &str) -> Option<&SlotSpec> {
        self.agents
            .get(agent_id)
            .or_else(|| self.agents.get(DEFAULT_SLOT))
    }
}

/// A whole experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentSpec {
    /// Human-readable name.
    pub name: String,
    /// Episodes per operator.
    pub episodes: u32,
    /// Episode seeds.
    #[serde(default)]
    pub seeds: SeedPlan,
    /// Step limit per episode (truncation) on top of the environment's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// How many episodes run at once (across all operators). Never changes results.
    #[serde(default = "one")]
    pub parallelism: usize,
    /// Delay between steps in milliseconds (for watching); 0 runs flat out.
    #[serde(default)]
    pub pace_ms: u64,
    /// Deadline for one decision in milliseconds; a late decision becomes the default
    /// action. `None`: wait as long as it takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_timeout_ms: Option<u64>,
    /// Record each agent's observation text in step records.
    #[serde(default)]
    pub record_observations: bool,
    /// How failed environments and operators are restarted.
    #[serde(default, skip_serializing_if = "SupervisionSpec::is_default")]
    pub supervision: SupervisionSpec,
    /// The operators, run side by side under shared seeds.
    pub operators: Vec<OperatorSpec>,
}

fn one() -> usize {
    1
}

/// Fault recovery of a run's sessions: each session supervises its environment and the
/// operators of its agents (see `docs/semantics.md`, "Supervision").
///
/// ```
/// let s: mosaic_core::experiment::SupervisionSpec =
///     serde_json::from_value(serde_json::json!({"max_restarts": 5})).unwrap();
/// assert_eq!(s.period_ms, 60_000);
/// assert_eq!(s.on_escalation, mosaic_core::experiment::OnEscalation::Continue);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupervisionSpec {
    /// Which children restart when one fails.
    #[serde(default)]
    pub strategy: RestartStrategy,
    /// Restarts of one child allowed within `period_ms`; one more escalates.
    #[serde(default = "default_max_restarts")]
    pub max_restarts: u32,
    /// The sliding window of the restart limit, milliseconds.
    #[serde(default = "default_period_ms")]
    pub period_ms: u64,
    /// How much work may be lost to a failure, milliseconds: the environment's and the
    /// operators' state is checkpointed once this long has passed since the last
    /// checkpoint, and recovery replays at most the steps taken since.
    #[serde(default = "default_checkpoint_interval_ms")]
    pub checkpoint_interval_ms: u64,
    /// What the run does when a session gives up.
    #[serde(default)]
    pub on_escalation: OnEscalation,
    /// Failed episodes (given up on by supervision) after which a configuration's remaining
    /// episodes are recorded as not run, so a hopeless configuration stops costing time
    /// while the others go on. `None`: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_failed_episodes: Option<u32>,
}

fn default_max_restarts() -> u32 {
    3
}

fn default_period_ms() -> u64 {
    60_000
}

fn default_checkpoint_interval_ms() -> u64 {
    1_000
}

impl Default for SupervisionSpec {
    fn default() -> Self {
        Self {
            strategy: RestartStrategy::default(),
            max_restarts: default_max_restarts(),
            period_ms: default_period_ms(),
            checkpoint_interval_ms: default_checkpoint_interval_ms(),
            on_escalation: OnEscalation::default(),
            max_failed_episodes: None,
        }
    }
}

impl SupervisionSpec {
    /// Whether every field has its default (then it is left out of files).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// Which of a session's children restart when one fails.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RestartStrategy {
    /// Only the failed child.
    #[default]
    OneForOne,
    /// The environment and every operator.
    OneForAll,
    /// The failed child and those after it (environment first, then agents in order).
    RestForOne,
}

/// What a run does when a session exceeds its restart limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnEscalation {
    /// Record the episode as failed and go on with the rest of the run.
    #[default]
    Continue,
    /// Stop the run with the error (what is recorded is kept; `mosaic resume` continues).
    Stop,
}

/// A structural problem in an experiment, with the path of the offending field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct SpecError {
    /// Dotted path of the field, e.g. `operators[1].agents.green_5`.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// The configuration is fine but what it describes could not be started (a worker
    /// process exited during its handshake): supervision may try again, and validation
    /// does not reject the experiment for it.
    pub start_failure: bool,
}

impl SpecError {
    /// An error at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
            start_failure: false,
        }
    }

    /// A start failure at `path` (see [`SpecError::start_failure`]).
    pub fn start_failure(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            start_failure: true,
            ..Self::new(path, message)
        }
    }

    /// The same error at `path` (e.g. relative to an enclosing field), keeping its kind.
    pub fn at(self, path: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            ..self
        }
    }

    /// The same error with its path read inside `parent`: a settings parser's `from`
    /// becomes `agents.green.from`, an error about the whole value `agents.green`.
    ///
    /// ```
    /// use mosaic_core::SpecError;
    /// let e = SpecError::new("from", "no such file").within("agents.green");
    /// assert_eq!(e.path, "agents.green.from");
    /// assert_eq!(SpecError::new("", "bad").within("env_settings").path, "env_settings");
    /// ```
    pub fn within(self, parent: &str) -> Self {
        let path = if self.path.is_empty() {
            parent.to_owned()
        } else {
            format!("{parent}.{}", self.path)
        };
        self.at(path)
    }

    /// Runs `build`, a constructor someone registered: a panic in it becomes a start
    /// failure at `path` naming `what` and the panic's message, so that a faulty extension
    /// fails (and retries) its own start instead of taking down whatever called it.
    ///
    /// ```
    /// use mosaic_core::SpecError;
    /// let built: Result<u32, SpecError> =
    ///     SpecError::guard("env", || "`broken`".into(), || panic!("no such file"));
    /// let error = built.unwrap_err();
    /// assert!(error.start_failure);
    /// assert_eq!(error.to_string(), "env: `broken` panicked while starting: no such file");
    /// ```
    pub fn guard<T>(
        path: &str,
        what: impl FnOnce() -> String,
        build: impl FnOnce() -> Result<T, SpecError>,
    ) -> Result<T, SpecError> {
        // Nothing of the caller's is left half-changed: `build` only makes something new.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(build)).unwrap_or_else(|panic| {
            Err(SpecError::start_failure(
                path,
                format!(
                    "{} panicked while starting: {}",
                    what(),
                    panic_message(&*panic)
                ),
            ))
        })
    }
}

/// The message a panic carried (`panic!` with a literal or a format), for reports.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|m| (*m).to_owned()))
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

impl ExperimentSpec {
    /// Checks what can be checked without knowing the registered environments and kinds.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.episodes == 0 {
            return Err(SpecError::new("episodes", "must be at least 1"));
        }
        if self.parallelism == 0 {
            return Err(SpecError::new("parallelism", "must be at least 1"));
        }
        if let SeedPlan::List { seeds } = &self.seeds
            && seeds.len() < self.episodes as usize
        {
            return Err(SpecError::new(
                "seeds.seeds",
                format!(
                    "{} seeds listed for {} episodes",
                    seeds.len(),
                    self.episodes
                ),
            ));
        }
        if self.supervision.period_ms == 0 {
            return Err(SpecError::new(
                "supervision.period_ms",
                "must be at least 1",
            ));
        }
        if self.supervision.max_failed_episodes == Some(0) {
            return Err(SpecError::new(
                "supervision.max_failed_episodes",
                "must be at least 1 (leave it out for no limit)",
            ));
        }
        if self.operators.is_empty() {
            return Err(SpecError::new(
                "operators",
                "at least one operator is needed",
            ));
        }
        for (i, op) in self.operators.iter().enumerate() {
            let ok_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
            if op.id.is_empty() || !op.id.chars().all(ok_char) {
                return Err(SpecError::new(
                    format!("operators[{i}].id"),
                    format!(
                        "`{}` is not a valid id (letters, digits, `_` and `.`; `-` separates episode id parts)",
                        op.id
                    ),
                ));
            }
            if self.operators[..i].iter().any(|o| o.id == op.id) {
                return Err(SpecError::new(
                    format!("operators[{i}].id"),
                    format!("duplicate operator id `{}`", op.id),
                ));
            }
            if op.agents.is_empty() {
                return Err(SpecError::new(
                    format!("operators[{i}].agents"),
                    "no agent slots",
                ));
            }
        }
        Ok(())
    }

    /// The seed of every episode, in order.
    pub fn episode_seeds(&self) -> Vec<u64> {
        (0..self.episodes)
            .map_while(|i| self.seeds.seed(i))
            .collect()
    }
}

/// Reads settings into a typed struct. Use `#[serde(deny_unknown_fields)]` on `T` so a
/// misspelt setting is an error naming it.
///
/// ```
/// #[derive(Debug, serde::Deserialize)]
/// #[serde(deny_unknown_fields)]
/// struct Soccer { #[serde(default)] view_size: u32 }
/// let mut s = mosaic_core::Settings::new();
/// s.insert("view_sise".into(), 7.into());
/// let err = mosaic_core::experiment::parse_settings::<Soccer>(&s).unwrap_err();
/// assert!(err.message.contains("view_sise"), "{err}");
/// ```
pub fn parse_settings<T: serde::de::DeserializeOwned>(settings: &Settings) -> Result<T, SpecError> {
    serde_json::from_value(serde_json::Value::Object(settings.clone()))
        .map_err(|e| SpecError::new("", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ExperimentSpec {
        serde_json::from_value(serde_json::json!({
            "name": "t", "episodes": 2,
            "operators": [{ "id": "a", "env": "e", "agents": { "*": { "kind": "random", "x": 1 } } }]
        }))
        .unwrap()
    }

    #[test]
    fn seed_plans() {
        assert_eq!(SeedPlan::Procedural { base: 5 }.seed(3), Some(8));
        assert_eq!(SeedPlan::Fixed { seed: 5 }.seed(3), Some(5));
        assert_eq!(SeedPlan::List { seeds: vec![9, 8] }.seed(1), Some(8));
        assert_eq!(SeedPlan::List { seeds: vec![9, 8] }.seed(2), None);
    }

    #[test]
    fn slot_settings_are_flattened() {
        let s = spec();
        let slot = s.operators[0].slot_for("anyone").unwrap();
        assert_eq!(slot.kind, "random");
        assert_eq!(slot.settings["x"], 1);
    }

    #[test]
    fn validation_names_the_field() {
        let mut s = spec();
        s.operators.push(s.operators[0].clone());
        assert_eq!(s.validate().unwrap_err().path, "operators[1].id");
        let mut s = spec();
        s.seeds = SeedPlan::List { seeds: vec![1] };
        assert_eq!(s.validate().unwrap_err().path, "seeds.seeds");
        let mut s = spec();
        s.operators[0].id = "a-b".into();
        assert!(s.validate().is_err());
        let mut s = spec();
        s.supervision.max_failed_episodes = Some(0);
        assert_eq!(
            s.validate().unwrap_err().path,
            "supervision.max_failed_episodes"
        );
    }
}
