//! Actions and decisions.

use serde::{Deserialize, Serialize};

/// A discrete action: an index into the environment's action labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Action(pub u32);

impl Action {
    /// The action as an index into label and mask vectors.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Why a recorded action was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum DecisionSource {
    /// The operator chose it.
    #[default]
    Policy,
    /// The operator missed its deadline: the environment's default action was taken.
    Timeout,
    /// The operator failed (bad output, crashed worker, illegal action): default action.
    Error,
    /// The environment executed an action of its own choosing instead of the operator's
    /// (an environment that decides for itself, like MOSAIC's env-owning workers); the
    /// operator's request is the step's `requested_action` event.
    Environment,
}

/// An operator's answer for one agent at one step: the action plus whatever travels beside
/// it (an LLM's raw text, message and scratchpad, a worker's usage figures).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The action to take.
    pub action: Action,
    /// Why this action.
    #[serde(default)]
    pub source: DecisionSource,
    /// Operator-specific details recorded with the step (plain JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
}

impl Decision {
    /// A plain decision made by the policy.
    pub fn act(action: Action) -> Self {
        Self {
            action,
            source: DecisionSource::Policy,
            detail: None,
        }
    }

    /// The environment's default action, taken because the operator did not answer in time
    /// or failed; `why` is recorded.
    pub fn fallback(action: Action, source: DecisionSource, why: impl Into<String>) -> Self {
        Self {
            action,
            source,
            detail: Some(serde_json::json!({ "error": why.into() })),
        }
    }
}
