//! Errors of the actor layer.

/// Why a decision that missed its deadline took the fallback action (recorded in its
/// `decision.error`).
pub const DEADLINE_MISSED: &str = "no decision before the deadline";

/// An operator could not decide (its decision becomes the default action).
#[derive(Debug, Clone, thiserror::Error)]
pub enum OperatorError {
    /// The operator's actor is gone (stopped or crashed).
    #[error("operator mailbox closed: {0}")]
    Gone(String),
    /// The operator answered with something unusable (bad model output, illegal action,
    /// protocol error).
    #[error("operator failed: {0}")]
    Failed(String),
    /// The operator's process or connection is lost (exit, silence, broken stream): it must
    /// be restarted, not asked again.
    #[error("operator crashed: {0}")]
    Crashed(String),
    /// A checkpoint could not be saved or restored.
    #[error("operator state: {0}")]
    State(String),
}

impl OperatorError {
    /// Whether the operator must be restarted (its actor or process is gone).
    pub fn needs_restart(&self) -> bool {
        matches!(self, OperatorError::Gone(_) | OperatorError::Crashed(_))
    }
}

/// A session could not go on.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SessionError {
    /// The environment failed.
    #[error("environment {env}: {message}")]
    Env {
        /// Environment name.
        env: String,
        /// What went wrong.
        message: String,
    },
    /// A control message came at the wrong time (e.g. Step All while running freely).
    #[error("{0}")]
    Control(String),
    /// The configuration could not be built.
    #[error("{0}")]
    Config(String),
    /// A child failed more often than the restart limit allows; the session gave up on it.
    #[error("escalated: {0}")]
    Escalated(String),
    /// An episode subscriber (e.g. the telemetry sink after a write failure) stopped before
    /// it confirmed the episode, so the episode is not known to be recorded.
    #[error("episode {episode} not confirmed: an episode subscriber stopped ({reason})")]
    Unconfirmed {
        /// The episode id.
        episode: String,
        /// Why the confirmation failed.
        reason: String,
    },
}

/// The telemetry sink could not record (the run must stop: records would be lost).
#[derive(Debug, Clone, thiserror::Error)]
pub enum SinkError {
    /// Writing the run directory failed.
    #[error("recording failed: {0}")]
    Recorder(String),
    /// The sink had already stopped after a failure.
    #[error("telemetry sink stopped: {0}")]
    Stopped(String),
}
