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
