//! Errors of the actor layer.

use crate::channel::ChannelError;
use actix::MailboxError;
use mosaic_core::{EnvError, SpecError};
use mosaic_external::WorkerError;
use mosaic_recorder::RecorderError;
use std::sync::Arc;

/// Why a decision that missed its deadline took the fallback action (recorded in its
/// `decision.error`).
pub const DEADLINE_MISSED: &str = "no decision before the deadline";

/// A decider could not decide, or could not save or load its state (a failed decision
/// becomes the default action; one that [needs a restart](DeciderError::needs_restart)
/// restarts the decider).
#[derive(Debug, Clone, thiserror::Error)]
pub enum DeciderError {
    /// The decider's actor is gone (stopped or crashed).
    #[error("operator mailbox closed: {0}")]
    Gone(#[from] MailboxError),
    /// A policy worker failed: an unusable answer (asked again next time), or a lost
    /// process or stream (restarted).
    #[error("operator {}: {worker}: {source}", if source.is_fatal() { "crashed" } else { "failed" })]
    Worker {
        /// The worker's name.
        worker: String,
        /// What the worker link reported.
        #[source]
        source: Box<WorkerError>,
    },
    /// A policy worker could not save or load its state: it refused it (asked again at the
    /// next checkpoint), or its process or stream was lost (restarted).
    #[error("operator {}: {worker}: {source}", if source.is_fatal() { "crashed" } else { "state" })]
    WorkerState {
        /// The worker's name.
        worker: String,
        /// What the worker link reported.
        #[source]
        source: Box<WorkerError>,
    },
    /// A human player's seat gave no choice.
    #[error("operator failed: {0}")]
    Human(#[from] crate::human::HumanError),
    /// The policy worker was stopped after an earlier crash and not started again.
    #[error("operator crashed: {worker}: the policy worker stopped")]
    WorkerStopped {
        /// The worker's name.
        worker: String,
    },
    /// A checkpoint state could not be saved, or does not fit this decider.
    #[error("operator state: {0}")]
    State(#[from] StateError),
    /// A decider kind's own failure (deciders written outside this crate), made with
    /// [`DeciderError::failed`].
    #[error("operator failed: {0}")]
    Failed(Arc<dyn std::error::Error + Send + Sync>),
}

impl DeciderError {
    /// A decider's own failure: a message or any error.
    ///
    /// ```
    /// use mosaic_actors::DeciderError;
    /// let error = DeciderError::failed("no legal action");
    /// assert_eq!(error.to_string(), "operator failed: no legal action");
    /// assert!(!error.needs_restart());
    /// ```
    pub fn failed(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        DeciderError::Failed(Arc::from(error.into()))
    }

    /// Whether the decider must be restarted (its actor or process is gone).
    pub fn needs_restart(&self) -> bool {
        match self {
            DeciderError::Gone(_) | DeciderError::WorkerStopped { .. } => true,
            DeciderError::Worker { source, .. } | DeciderError::WorkerState { source, .. } => {
                source.is_fatal()
            }
            DeciderError::State(_) | DeciderError::Human(_) | DeciderError::Failed(_) => false,
        }
    }
}

/// Why a decider's checkpoint state could not be saved or loaded.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StateError {
    /// The state could not be written as JSON.
    #[error("cannot save the {kind} decider's state: {source}")]
    Save {
        /// The decider kind.
        kind: &'static str,
        /// What serde reported.
        #[source]
        source: Arc<serde_json::Error>,
    },
    /// The state is not one of this decider kind.
    #[error("not {kind} decider state: {source}")]
    Malformed {
        /// The decider kind.
        kind: &'static str,
        /// What serde reported.
        #[source]
        source: Arc<serde_json::Error>,
    },
    /// A policy worker's state must be the base64 string its worker saved.
    #[error("{worker}: not a policy worker state (a base64 string)")]
    NotWorkerState {
        /// The worker's name.
        worker: String,
    },
    /// The policy refused the state, for the reason given.
    #[error("{0}")]
    Policy(String),
    /// The worker does not save or load states.
    #[error("{worker}: the worker does not announce the `checkpoint` capability")]
    NoCheckpoints {
        /// The worker's name.
        worker: String,
    },
}

/// A session could not go on. Each variant names what failed (the environment, the agent,
/// the child, the episode and step) and carries the error underneath.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The environment failed (other than by crashing, which restarts it).
    #[error("environment {env}: {source}")]
    Env {
        /// Environment name.
        env: String,
        /// What went wrong.
        #[source]
        source: EnvError,
    },
    /// The session's message channel stopped.
    #[error("message channel gone: {0}")]
    ChannelGone(#[source] MailboxError),
    /// A decider could not begin an episode (for a reason a restart does not cure).
    #[error("operator of {agent} could not start episode {episode}: {source}")]
    EpisodeStart {
        /// The agent whose decider failed.
        agent: String,
        /// The episode index.
        episode: u32,
        /// The decider's answer.
        #[source]
        source: DeciderError,
    },
    /// Step All (or End) came before any Reset All.
    #[error("no episode started: reset first")]
    NoEpisode,
    /// A request came while another one was running (requests to a session are atomic,
    /// so this does not happen through its messages).
    #[error("the session is busy with another request")]
    Busy,
    /// A session no longer answers (its actor stopped).
    #[error("session gone: {0}")]
    Gone(#[source] MailboxError),
    /// A child failed more often than the restart limit allows; the session gave up on it.
    #[error(
        "escalated: {child} failed more than {max_restarts} times within {period_ms} ms (last: {last})"
    )]
    Escalated {
        /// The child given up on (`env` or an agent id).
        child: String,
        /// The restart limit.
        max_restarts: u32,
        /// The period of the limit, in milliseconds.
        period_ms: u64,
        /// The last failure.
        #[source]
        last: Box<ChildFailure>,
    },
    /// After an escalation, fresh children could not be started for the next episode.
    #[error("escalated earlier, and fresh children could not start: {0}")]
    Renew(#[source] SpecError),
    /// An episode could not be resumed from its checkpoint.
    #[error("cannot resume episode {episode} from its checkpoint at step {step}: {source}")]
    Resume {
        /// The episode index.
        episode: u32,
        /// The checkpoint's step.
        step: u32,
        /// What did not fit.
        #[source]
        source: ResumeError,
    },
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

/// Why a session child (the environment or an agent's decider) needs a restart, or why
/// bringing a restarted one back failed. Its text is what restart records show.
#[derive(Debug, thiserror::Error)]
pub enum ChildFailure {
    /// The environment's process died, hung or broke its stream.
    #[error("{0}")]
    EnvCrashed(String),
    /// The child's actor is gone.
    #[error("{0}")]
    Mailbox(#[from] MailboxError),
    /// The environment refused a message while its state was rebuilt.
    #[error("{0}")]
    Env(#[from] EnvError),
    /// The decider failed (crashed, gone, or refused its state).
    #[error("{0}")]
    Decider(#[from] DeciderError),
    /// A new child could not be started.
    #[error("{0}")]
    Start(#[from] SpecError),
    /// The restarted decider cannot load the state its predecessor saved.
    #[error("the restarted decider cannot restore its checkpoint")]
    NoStateLoader,
}

/// Why a checkpoint (and the step records before it) does not fit the session resuming it.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// The checkpoint holds a different number of decider states than there are agents.
    #[error("it holds {held} decider states for {agents} agents")]
    DeciderStates {
        /// States in the checkpoint.
        held: usize,
        /// Agents of the environment.
        agents: usize,
    },
    /// A step record names an agent the environment does not have.
    #[error("`{agent}` is not an agent of {env}")]
    UnknownAgent {
        /// The agent id in the record.
        agent: String,
        /// The environment name.
        env: String,
    },
    /// A step record lies at or after the checkpoint's step.
    #[error("a step record of step {0}")]
    StepAfterCheckpoint(usize),
    /// The message channel stopped.
    #[error("message channel gone: {0}")]
    ChannelGone(#[source] MailboxError),
    /// The message channel refused the checkpoint's state.
    #[error("{0}")]
    Channel(#[from] ChannelError),
    /// The environment stopped while it was observed.
    #[error("{0}")]
    EnvGone(#[source] MailboxError),
    /// The restored environment is at another step than the checkpoint.
    #[error("the environment came back at step {0}")]
    EnvAtStep(u32),
}

/// The telemetry sink could not record (the run must stop: records would be lost).
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// Writing the run directory failed.
    #[error("recording failed: {0}")]
    Recorder(#[from] RecorderError),
    /// The sink had already stopped after a failure.
    #[error("telemetry sink stopped: {0}")]
    Stopped(String),
}
