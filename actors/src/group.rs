//! N sessions advanced together: the manual mode's Step All / Reset All / Run / Pause.
//!
//! Every session of a group gets the same seed and episode index at Reset All, and Step All
//! advances every unfinished session by exactly one environment step (joined: the call
//! answers when all have stepped, so a human's pending choice holds the whole group).
//!
//! Episode indices are unique among the episodes the sessions record: Reset All takes the
//! next index once the current episode has records in some session (it took a step or
//! ended), and gives the untouched episode's index to its replacement otherwise. A session
//! records an episode that Reset All abandons mid-way as ended with the error
//! [`ABANDONED_BY_RESET`](crate::session::ABANDONED_BY_RESET); [`EndAll`] ends the
//! episodes in progress the same way when the group closes.

use crate::SessionError;
use crate::session::{BeginManual, EndManual, GetStatus, Session, SessionStatus, StepManual};
use actix::prelude::*;
use futures::future::join_all;
use std::time::Duration;

/// Controls a group of sessions side by side.
pub struct SessionGroup {
    sessions: Vec<Addr<Session>>,
    /// The index of the episode begun last.
    current: Option<u32>,
    running: bool,
    pace: Duration,
}

impl std::fmt::Debug for SessionGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionGroup").finish_non_exhaustive()
    }
}

impl SessionGroup {
    /// A group over `sessions` (typically one per operator of an experiment).
    pub fn new(sessions: Vec<Addr<Session>>) -> Self {
        Self {
            sessions,
            current: None,
            running: false,
            pace: Duration::ZERO,
        }
    }

    /// Whether any session has records of its current episode: it took a step, or it
    /// ended (sessions record every episode that ends). A session that cannot tell counts
    /// as having records, so that an index is never given twice.
    async fn recorded(sessions: &[Addr<Session>]) -> bool {
        join_all(sessions.iter().map(|s| s.send(GetStatus)))
            .await
            .into_iter()
            .any(|status| match status {
                Ok(Some(status)) => status.steps > 0 || status.done,
                Ok(None) => false,
                Err(_) => true,
            })
    }

    fn collect(
        results: Vec<Result<Result<SessionStatus, SessionError>, MailboxError>>,
    ) -> Result<Vec<SessionStatus>, SessionError> {
        results.into_iter().map(|r| r.map_err(gone)?).collect()
    }
}

/// A session that no longer answers.
fn gone(error: MailboxError) -> SessionError {
    SessionError::Gone(error)
}

impl Actor for SessionGroup {
    type Context = Context<Self>;
}

/// Starts a new episode in every session with one shared seed.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<SessionStatus>, SessionError>")]
pub struct ResetAll {
    /// The shared seed.
    pub seed: u64,
}

/// Ends every session's episode in progress (when the group closes): those that took steps
/// are recorded with `reason` as their error, the others are dropped. Answers the statuses
/// (`None` for a session without an episode).
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<Option<SessionStatus>>, SessionError>")]
pub struct EndAll {
    /// Why the episodes ended.
    pub reason: String,
}

/// Advances every unfinished session by exactly one step.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<SessionStatus>, SessionError>")]
pub struct StepAll;

/// Steps the group repeatedly, `pace` apart, until every episode is over or [`Pause`].
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Resume {
    /// Delay between steps.
    pub pace: Duration,
}

/// Stops a [`Resume`]d group after the step in progress.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Pause;

/// Status of every session (`None` for a session with no episode yet).
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<Option<SessionStatus>>, SessionError>")]
pub struct GroupStatus;

#[derive(Debug, Message)]
#[rtype(result = "()")]
struct Tick;

impl Handler<ResetAll> for SessionGroup {
    type Result = AtomicResponse<Self, Result<Vec<SessionStatus>, SessionError>>;

    fn handle(&mut self, msg: ResetAll, _: &mut Context<Self>) -> Self::Result {
        self.running = false;
        let sessions = self.sessions.clone();
        let current = self.current;
        AtomicResponse::new(Box::pin(
            async move {
                let index = match current {
                    None => 0,
                    Some(index) if Self::recorded(&sessions).await => index + 1,
                    Some(index) => index,
                };
                let begins = sessions.iter().map(|s| {
                    s.send(BeginManual {
                        index,
                        seed: msg.seed,
                    })
                });
                (index, Self::collect(join_all(begins).await))
            }
            .into_actor(self)
            .map(|(index, begun), group, _| {
                group.current = Some(index);
                begun
            }),
        ))
    }
}

impl Handler<StepAll> for SessionGroup {
    type Result = AtomicResponse<Self, Result<Vec<SessionStatus>, SessionError>>;

    fn handle(&mut self, _: StepAll, _: &mut Context<Self>) -> Self::Result {
        let all = join_all(self.sessions.iter().map(|s| s.send(StepManual)));
        AtomicResponse::new(Box::pin(
            async move { Self::collect(all.await) }.into_actor(self),
        ))
    }
}

impl Handler<EndAll> for SessionGroup {
    type Result = AtomicResponse<Self, Result<Vec<Option<SessionStatus>>, SessionError>>;

    fn handle(&mut self, msg: EndAll, _: &mut Context<Self>) -> Self::Result {
        self.running = false;
        let ends = self.sessions.iter().map(|s| {
            s.send(EndManual {
                reason: msg.reason.clone(),
            })
        });
        let all = join_all(ends);
        AtomicResponse::new(Box::pin(
            async move { all.await.into_iter().map(|r| r.map_err(gone)).collect() }
                .into_actor(self),
        ))
    }
}

impl Handler<Resume> for SessionGroup {
    type Result = ();

    fn handle(&mut self, msg: Resume, ctx: &mut Context<Self>) {
        self.pace = msg.pace;
        if !self.running {
            self.running = true;
            ctx.notify(Tick);
        }
    }
}

impl Handler<Pause> for SessionGroup {
    type Result = ();

    fn handle(&mut self, _: Pause, _: &mut Context<Self>) {
        self.running = false;
    }
}

impl Handler<Tick> for SessionGroup {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, _: Tick, _: &mut Context<Self>) -> Self::Result {
        if !self.running {
            return AtomicResponse::new(Box::pin(actix::fut::ready(())));
        }
        let all = join_all(self.sessions.iter().map(|s| s.send(StepManual)));
        AtomicResponse::new(Box::pin(
            async move { Self::collect(all.await) }
                .into_actor(self)
                .map(|stepped, group, ctx| match stepped {
                    Ok(statuses) if statuses.iter().any(|s| !s.done) && group.running => {
                        ctx.notify_later(Tick, group.pace);
                    }
                    Ok(_) => group.running = false,
                    Err(error) => {
                        tracing::warn!(%error, "stopping the group's run");
                        group.running = false;
                    }
                }),
        ))
    }
}

impl Handler<GroupStatus> for SessionGroup {
    type Result = ResponseFuture<Result<Vec<Option<SessionStatus>>, SessionError>>;

    fn handle(&mut self, _: GroupStatus, _: &mut Context<Self>) -> Self::Result {
        let all = join_all(self.sessions.iter().map(|s| s.send(GetStatus)));
        Box::pin(async move { all.await.into_iter().map(|r| r.map_err(gone)).collect() })
    }
}
