//! Errors of the actor layer.

use crate::channel::ChannelError;
use actix::MailboxError;
use mosaic_core::{EnvError, SpecError};
use mosaic_recorder::RecorderError;

/// Why a decision that missed its deadline took the fallback action (recorded in its
/// `decision.error`).
pub const DEADLINE_MISSED: &str = "no decision before the deadline";

/// A decider could not decide (its decision becomes the default action).
#[derive(Debug, Clone, thiserror::Error)]
pub enum DeciderError {
    /// The decider's actor is gone (stopped or crashed).
    #[error("operator mailbox closed: {0}")]
    Gone(String),
    /// The decider answered with something unusable (bad model output, illegal action,
    /// protocol error).
    #[error("operator failed: {0}")]
    Failed(String),
    /// The decider's process or connection is lost (exit, silence, broken stream): it must
    /// be restarted, not asked again.
    #[error("operator crashed: {0}")]
    Crashed(String),
    /// A checkpoint could not be saved or restored.
    #[error("operator state: {0}")]
    State(String),
}

impl DeciderError {
    /// Whether the decider must be restarted (its actor or process is gone).
    pub fn needs_restart(&self) -> bool {
        matches!(self, DeciderError::Gone(_) | DeciderError::Crashed(_))
    }
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
    Operator(#[from] DeciderError),
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
