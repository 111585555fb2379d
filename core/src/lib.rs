//! Domain types and traits of mosaic.
//!
//! Everything an environment, an operator (agent decider) or a recorder needs to agree on
//! lives here: ids, [`Paradigm`], [`Observation`], [`Action`] and [`Decision`], the
//! [`Environment`] and [`Policy`] traits, the serialisable [`ExperimentSpec`] and the
//! telemetry records. No actors, no I/O, no async runtime.
//!
//! ```
//! use mosaic_core::{Action, Decision, Observation, Policy, AgentContext, Paradigm};
//! use mosaic_core::baseline::Cycling;
//!
//! let mut policy = Cycling::default();
//! policy.reset(&AgentContext::new(7, 0, "solo".into(), 3));
//! let obs = Observation::with_mask(0, vec![true, false, true]);
//! assert_eq!(policy.decide(&obs).action, Action(0));
//! assert_eq!(policy.decide(&obs).action, Action(2));
//! assert_eq!(policy.paradigm(), Paradigm::Scripted);
//! ```

pub mod baseline;
pub mod canvas;
pub mod count;
mod decision;
pub mod entity_memory;
mod env;
pub mod experiment;
mod frame;
mod ids;
mod observation;
mod policy;
pub mod record;
pub mod registry;
pub mod rng;

pub use decision::{Action, Decision, DecisionSource};
pub use env::{
    AgentSpec, EnvError, EnvSpec, Environment, Event, Outcome, REQUESTED_ACTION, Snapshot,
    Stepping, Transition, render_marked_or_plain,
};
pub use experiment::{ExperimentSpec, OperatorSpec, SeedPlan, Settings, SlotSpec, SpecError};
pub use frame::{Frame, FrameError};
pub use ids::{AgentId, EpisodeId, OperatorId, Paradigm, RunId};
pub use observation::{FACING_INFO, ObsRequest, Observation, Tensor};
pub use policy::{AgentContext, Policy};
pub use registry::{EnvKind, EnvPrefix, EnvRegistry};
