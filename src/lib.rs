//! mosaic: cross-paradigm multi-agent evaluation.
//!
//! RL policies, LLM and VLM agents, people and scripted or random baselines act as agents
//! in the same environment, under shared seeds, with every step recorded. This crate is the
//! facade over the workspace's libraries (`mosaic-core`, `mosaic-adapters`,
//! `mosaic-actors`, `mosaic-recorder`, `mosaic-protocols`, and with the cargo feature `llm`,
//! on by default, `mosaic-llm`) and the home of the `mosaic` command.

pub mod experiment;
pub mod experiment_file;
pub mod families;
pub mod listing;
#[cfg(feature = "llm")]
pub mod llm_cache;
pub mod manual;
pub mod run;
pub mod summary;

pub use experiment::{Experiment, ExperimentBuilder, Operator};
pub use mosaic_actors as actors;
pub use mosaic_adapters as adapters;
pub use mosaic_core as core;
#[cfg(feature = "llm")]
pub use mosaic_llm as llm;
pub use mosaic_recorder as recorder;
#[cfg(feature = "rl")]
pub use mosaic_rl as rl;
pub use mosaic_supervisor as supervisor;

/// The names most experiments need.
pub mod prelude {
    pub use crate::experiment::{Experiment, Operator};
    pub use mosaic_actors::decider::{DeciderHandle, DeciderKind, DeciderRegistry};
    pub use mosaic_core::{
        Action, AgentContext, Decision, Environment, ExperimentSpec, ObsRequest, Observation,
        Paradigm, Policy, SeedPlan, SlotSpec,
    };
    pub use mosaic_core::{EnvKind, EnvRegistry};
}
