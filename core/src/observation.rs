//! What one agent sees at one step.

use crate::Frame;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The key of [`Observation::info`] under which a world whose agents turn and move forward
/// gives the agent's facing on its full view ([`crate::Environment::render`]): `"up"`,
/// `"down"`, `"left"` or `"right"` (see [`crate::canvas::screen_direction`]), at least with
/// the text view. The web page's on-screen arrow keys read it.
pub const FACING_INFO: &str = "facing";

/// A dense f32 tensor (row-major).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Tensor {
    /// Dimensions, outermost first.
    pub shape: Vec<usize>,
    /// `shape.iter().product()` values.
    pub data: Vec<f32>,
}

/// Which modalities an operator needs; environments fill only what is asked for, so a
/// random agent costs no text formatting and no rendering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ObsRequest {
    /// The symbolic tensor (RL policies, scripted heuristics).
    #[serde(default)]
    pub symbolic: bool,
    /// The text view (LLM agents).
    #[serde(default)]
    pub text: bool,
    /// The agent's RGB frame (VLM agents, humans).
    #[serde(default)]
    pub frame: bool,
}

impl ObsRequest {
    /// Only the legal-action mask.
    pub const MASK_ONLY: ObsRequest = ObsRequest {
        symbolic: false,
        text: false,
        frame: false,
    };
    /// The symbolic tensor (and the legal-action mask), what scripted heuristics read.
    pub const SYMBOLIC: ObsRequest = ObsRequest {
        symbolic: true,
        ..ObsRequest::MASK_ONLY
    };
    /// Every modality.
    pub const ALL: ObsRequest = ObsRequest {
        symbolic: true,
        text: true,
        frame: true,
    };

    /// The union of two requests.
    pub fn union(self, other: ObsRequest) -> ObsRequest {
        ObsRequest {
            symbolic: self.symbolic || other.symbolic,
            text: self.text || other.text,
            frame: self.frame || other.frame,
        }
    }
}

/// One agent's view of the environment, multi-modal. Every field but `legal` is filled
/// only when requested ([`ObsRequest`]) and when the environment offers it.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct Observation {
    /// Index of the agent in [`crate::EnvSpec::agents`].
    pub agent: usize,
    /// Environment step this observation belongs to (0 after reset).
    pub step: u32,
    /// Symbolic tensor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbolic: Option<Tensor>,
    /// Text written for language models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// RGB frame (raw; PNG-encoded only when shipped somewhere, never serialised here).
    #[serde(skip)]
    pub frame: Option<Arc<Frame>>,
    /// Legal-action mask, one entry per action label.
    pub legal: Vec<bool>,
    /// Free-form extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<serde_json::Value>,
}

impl Observation {
    /// An observation holding only a legal-action mask.
    pub fn with_mask(agent: usize, legal: Vec<bool>) -> Self {
        Self {
            agent,
            legal,
            ..Self::default()
        }
    }

    /// Indices of the legal actions.
    pub fn legal_actions(&self) -> impl Iterator<Item = crate::Action> + '_ {
        self.legal
            .iter()
            .enumerate()
            .filter(|(_, ok)| **ok)
            .map(|(i, _)| crate::Action(i as u32))
    }

    /// Whether `action` is legal here.
    pub fn is_legal(&self, action: crate::Action) -> bool {
        self.legal.get(action.index()).copied().unwrap_or(false)
    }

    /// The action taken in place of a missing decision: `default` if it is legal here (or
    /// the mask is empty), else the first legal action.
    ///
    /// ```
    /// use mosaic_core::{Action, Observation};
    /// let obs = Observation::with_mask(0, vec![false, true, true]);
    /// assert_eq!(obs.fallback(Action(2)), Action(2));
    /// assert_eq!(obs.fallback(Action(0)), Action(1));
    /// ```
    pub fn fallback(&self, default: crate::Action) -> crate::Action {
        if self.legal.is_empty() || self.is_legal(default) {
            default
        } else {
            self.legal_actions().next().unwrap_or(default)
        }
    }
}
