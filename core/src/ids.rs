//! Identifiers and the paradigm of an agent.

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_owned())
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }
    };
}

string_id!(
    /// An agent slot of an environment, e.g. `green_0`.
    AgentId
);
string_id!(
    /// An operator: one environment configuration with its agents, e.g. `llm-vs-random`.
    OperatorId
);
string_id!(
    /// One invocation of an experiment.
    RunId
);
string_id!(
    /// One episode of one operator in one run: `{run}-{operator}-ep{index:06}`.
    EpisodeId
);

impl EpisodeId {
    /// The episode id of episode `index` of `operator` in `run`.
    ///
    /// ```
    /// use mosaic_core::{EpisodeId, OperatorId, RunId};
    /// let id = EpisodeId::new(&RunId::from("r1"), &OperatorId::from("soccer"), 12);
    /// assert_eq!(id.as_str(), "r1-soccer-ep000012");
    /// ```
    pub fn new(run: &RunId, operator: &OperatorId, index: u32) -> Self {
        Self(format!("{run}-{operator}-ep{index:06}"))
    }
}

/// The kind of decider behind an agent; shown as a colour badge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Paradigm {
    /// A reinforcement-learning policy.
    Rl,
    /// A language model reading text observations.
    Llm,
    /// A vision-language model reading text and frames.
    Vlm,
    /// A person.
    Human,
    /// A hand-written heuristic.
    Scripted,
    /// Uniform over legal actions.
    Random,
    /// Always the default action.
    Noop,
    /// A decider in another process speaking the worker protocol.
    External,
}

impl Paradigm {
    /// Lower-case name, as in experiment files and records.
    pub fn name(self) -> &'static str {
        match self {
            Paradigm::Rl => "rl",
            Paradigm::Llm => "llm",
            Paradigm::Vlm => "vlm",
            Paradigm::Human => "human",
            Paradigm::Scripted => "scripted",
            Paradigm::Random => "random",
            Paradigm::Noop => "noop",
            Paradigm::External => "external",
        }
    }
}

impl fmt::Display for Paradigm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
