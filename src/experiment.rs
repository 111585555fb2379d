//! Experiments composed in Rust code.
//!
//! ```
//! use mosaic::prelude::*;
//!
//! let experiment = Experiment::builder("demo")
//!     .episodes(2)
//!     .seeds(SeedPlan::Procedural { base: 7 })
//!     .operator(Operator::new("pitch", "soccer-2v2").agent("*", "random").agent("green_0", "scripted"))
//!     .build()
//!     .unwrap();
//! assert_eq!(experiment.spec().operators[0].agents.len(), 2);
//! ```

use crate::families::Families;
use mosaic_actors::decider::{DeciderKind, DeciderRegistry};
use mosaic_core::experiment::DEFAULT_SLOT;
use mosaic_core::{EnvKind, EnvRegistry};
use mosaic_core::{ExperimentSpec, OperatorSpec, SeedPlan, Settings, SlotSpec, SpecError};

/// The environments every experiment can name: the native ones.
pub fn default_envs() -> EnvRegistry {
    mosaic_adapters::native_envs()
}

/// The decider kinds every experiment can name: the baselines, external policy workers
/// and the families built in (the LLM family with feature `llm`, sharing `families`;
/// trained policies, `rl`, with feature `rl`).
pub fn default_deciders(families: &Families) -> DeciderRegistry {
    let mut registry = DeciderRegistry::baselines();
    mosaic_actors::worker::register(&mut registry);
    families.register(&mut registry);
    #[cfg(feature = "rl")]
    mosaic_rl::register(&mut registry);
    registry
}

/// An experiment ready to run: the spec plus the registries it is resolved against.
#[derive(Clone)]
pub struct Experiment {
    spec: ExperimentSpec,
    envs: EnvRegistry,
    kinds: DeciderRegistry,
    families: Families,
}

impl std::fmt::Debug for Experiment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Experiment")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

impl Experiment {
    /// Starts building an experiment in code.
    pub fn builder(name: impl Into<String>) -> ExperimentBuilder {
        ExperimentBuilder::new(name)
    }

    /// An experiment from a spec (e.g. read from a file) with the default registries.
    pub fn from_spec(spec: ExperimentSpec) -> Self {
        let families = Families::default();
        Self {
            spec,
            envs: default_envs(),
            kinds: default_deciders(&families),
            families,
        }
    }

    /// The spec.
    pub fn spec(&self) -> &ExperimentSpec {
        &self.spec
    }

    /// The spec, for changes before running (`parallelism`, `pace_ms`, ...).
    pub fn spec_mut(&mut self) -> &mut ExperimentSpec {
        &mut self.spec
    }

    /// The environments it can name.
    pub fn envs(&self) -> &EnvRegistry {
        &self.envs
    }

    /// The decider kinds it can name.
    pub fn kinds(&self) -> &DeciderRegistry {
        &self.kinds
    }

    /// What the operators of its families share (with feature `llm`: the local model
    /// server, backends, run-wide usage).
    pub fn families(&self) -> &Families {
        &self.families
    }

    /// Adds an environment kind (e.g. one defined by the caller).
    pub fn register_env(&mut self, kind: EnvKind) {
        self.envs.register(kind);
    }

    /// Adds a decider kind (e.g. a new paradigm defined by the caller).
    pub fn register_decider(&mut self, kind: DeciderKind) {
        self.kinds.register(kind);
    }
}

/// One operator configuration being built: an environment and its agent slots.
#[derive(Clone, Debug)]
pub struct Operator {
    spec: OperatorSpec,
}

impl Operator {
    /// Operator configuration `id` on environment `env`.
    pub fn new(id: impl Into<String>, env: impl Into<String>) -> Self {
        Self {
            spec: OperatorSpec {
                id: id.into(),
                env: env.into(),
                env_settings: Settings::new(),
                agents: Default::default(),
            },
        }
    }

    /// Sets an environment setting.
    pub fn env_setting(
        mut self,
        key: impl Into<String>,
        value: impl Into<serde_json::Value>,
    ) -> Self {
        self.spec.env_settings.insert(key.into(), value.into());
        self
    }

    /// Puts decider kind `kind` (no settings) on `slot` (an agent id, or `*` for all others).
    pub fn agent(self, slot: impl Into<String>, kind: impl Into<String>) -> Self {
        self.slot(slot, SlotSpec::kind(kind))
    }

    /// Puts a configured operator on `slot`.
    pub fn slot(mut self, slot: impl Into<String>, spec: SlotSpec) -> Self {
        self.spec.agents.insert(slot.into(), spec);
        self
    }

    /// Puts `kind` on every slot not named otherwise.
    pub fn everyone(self, kind: impl Into<String>) -> Self {
        self.agent(DEFAULT_SLOT, kind)
    }
}

/// Builds an [`Experiment`] step by step; see [`Experiment::builder`].
pub struct ExperimentBuilder {
    spec: ExperimentSpec,
    envs: EnvRegistry,
    kinds: DeciderRegistry,
    families: Families,
}

impl std::fmt::Debug for ExperimentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExperimentBuilder")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

impl ExperimentBuilder {
    fn new(name: impl Into<String>) -> Self {
        let families = Families::default();
        Self {
            spec: ExperimentSpec {
                name: name.into(),
                episodes: 1,
                seeds: SeedPlan::default(),
                max_steps: None,
                parallelism: 1,
                pace_ms: 0,
                decision_timeout_ms: None,
                record_observations: false,
                supervision: Default::default(),
                operators: Vec::new(),
            },
            envs: default_envs(),
            kinds: default_deciders(&families),
            families,
        }
    }

    /// Episodes per operator configuration.
    pub fn episodes(mut self, episodes: u32) -> Self {
        self.spec.episodes = episodes;
        self
    }

    /// Episode seeds.
    pub fn seeds(mut self, seeds: SeedPlan) -> Self {
        self.spec.seeds = seeds;
        self
    }

    /// Step limit per episode.
    pub fn max_steps(mut self, steps: u32) -> Self {
        self.spec.max_steps = Some(steps);
        self
    }

    /// Episodes running at once.
    pub fn parallelism(mut self, lanes: usize) -> Self {
        self.spec.parallelism = lanes;
        self
    }

    /// Deadline of one decision.
    pub fn decision_timeout_ms(mut self, ms: u64) -> Self {
        self.spec.decision_timeout_ms = Some(ms);
        self
    }

    /// Records each acting agent's observation text.
    pub fn record_observations(mut self, on: bool) -> Self {
        self.spec.record_observations = on;
        self
    }

    /// How failed environments and operators are restarted (see
    /// [`mosaic_core::experiment::SupervisionSpec`]).
    pub fn supervision(mut self, supervision: mosaic_core::experiment::SupervisionSpec) -> Self {
        self.spec.supervision = supervision;
        self
    }

    /// Adds an operator configuration.
    pub fn operator(mut self, operator: Operator) -> Self {
        self.spec.operators.push(operator.spec);
        self
    }

    /// Registers an environment kind.
    pub fn env_kind(mut self, kind: EnvKind) -> Self {
        self.envs.register(kind);
        self
    }

    /// Registers a decider kind.
    pub fn decider_kind(mut self, kind: DeciderKind) -> Self {
        self.kinds.register(kind);
        self
    }

    /// Checks the spec's structure and returns the experiment.
    pub fn build(self) -> Result<Experiment, SpecError> {
        self.spec.validate()?;
        Ok(Experiment {
            spec: self.spec,
            envs: self.envs,
            kinds: self.kinds,
            families: self.families,
        })
    }
}
