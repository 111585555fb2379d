//! What happens to children, as errors and as events for subscribers.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Why a child failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// A handler (or the factory) panicked; the panic message.
    #[error("panicked: {0}")]
    Panicked(String),
    /// The child reported a failure through [`ChildLink::fail`](crate::ChildLink::fail) and stopped.
    #[error("failed: {0}")]
    Failed(String),
    /// No heartbeat for longer than the timeout.
    #[error("no heartbeat for {silent:?} (timeout {timeout:?})")]
    HeartbeatLost {
        /// Silence measured when the failure was declared.
        silent: Duration,
        /// The configured timeout.
        timeout: Duration,
    },
    /// A nested supervisor gave up.
    #[error("escalated: {0}")]
    Escalated(Box<SupervisorError>),
    /// The child's thread ended without the child stopping (its arbiter was stopped).
    #[error("its thread ended unexpectedly")]
    Vanished,
}

/// How a child ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It stopped by itself without a failure.
    Normal,
    /// It failed.
    Failed(Failure),
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exit::Normal => write!(f, "exited normally"),
            Exit::Failed(failure) => write!(f, "{failure}"),
        }
    }
}

/// A supervisor gave up.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SupervisorError {
    /// Restarts came faster than the intensity allows.
    #[error(
        "supervisor `{supervisor}` gave up: child `{child}` needed {restarts} restarts within \
         {period:?} (limit {limit}); it {exit}"
    )]
    IntensityExceeded {
        /// The supervisor that gave up.
        supervisor: String,
        /// The child whose failure exceeded the limit.
        child: String,
        /// Restarts within the period, counting the refused one.
        restarts: usize,
        /// Restarts allowed within the period.
        limit: u32,
        /// The period.
        period: Duration,
        /// How the child ended this time.
        exit: Exit,
    },
}

/// What happened to a child.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// It started (first start or restart); `generation` counts its starts from 1.
    Started {
        /// Number of this start.
        generation: u64,
    },
    /// It failed.
    Failed(Failure),
    /// It stopped normally by itself.
    Exited,
    /// It was started again `after` its failure was detected.
    Restarted {
        /// Time from failure detection to the new instance's start.
        after: Duration,
    },
    /// The supervisor gave up (the event names the supervisor as `child`'s parent).
    Escalated(SupervisorError),
}

/// One event of a supervision tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SupervisorEvent {
    /// The supervisor reporting.
    pub supervisor: String,
    /// The child concerned (for `Escalated`: the supervisor itself).
    pub child: String,
    /// What happened.
    pub kind: EventKind,
}

impl fmt::Display for SupervisorEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let who = format!("[{}] {}", self.supervisor, self.child);
        match &self.kind {
            EventKind::Started { generation } => write!(f, "{who} started (#{generation})"),
            EventKind::Failed(failure) => write!(f, "{who} {failure}"),
            EventKind::Exited => write!(f, "{who} exited normally"),
            EventKind::Restarted { after } => write!(f, "{who} restarted after {after:?}"),
            EventKind::Escalated(error) => write!(f, "{who} escalated: {error}"),
        }
    }
}

/// The subscriber of supervision events.
pub type EventSink = Arc<dyn Fn(&SupervisorEvent) + Send + Sync>;
