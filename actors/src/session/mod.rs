//! The lock-step session: one operator configuration (an environment and the operators of
//! its agent slots) running episodes.
//!
//! One step: the environment's observations go to every acting agent's decider at once
//! (`Decide`), the session joins the decisions (a late or failed one becomes the
//! environment's default action, recorded as such), steps the environment, and hands the
//! step's records to its publisher (`crate::publish`), which sends them to the subscribers
//! in batches ([`StepEvent`](crate::StepEvent)s). At the end of an episode it sends the last
//! steps, then an [`EpisodeEvent`](crate::EpisodeEvent); the episode is done once every subscriber has handled it (durable sinks
//! answer only once the episode's records are on disk). See `docs/semantics.md` for the
//! guarantees.
//!
//! A session supervises its children, the environment and the operators of its agents. A
//! child whose actor died (a panic), whose process exited or fell silent, is restarted as
//! the experiment's [`SupervisionSpec`] says, brought back to its state before the failed
//! step (the last checkpoint, then a replay of what happened since), and the step is
//! retried. Each restart is recorded in the episode's roll-up.
//!
//! The parts: the [`Session`] actor is a thin shell around a `Driver` (stepping in
//! `driver`, restarts and resume in `recovery`), which owns the session's `Children`
//! (their factory, the restart set the strategy picks, the restart windows) and runs one
//! `Episode` at a time (its records, tallies and roll-up), whose `Journal` keeps what
//! happened since the last checkpoint. The shell lends the driver to one request at a time:
//! every request is atomic, so the driver is always back before the next one.

mod children;
mod driver;
mod episode;
mod journal;
mod recovery;

use crate::SessionError;
use crate::decider::{DeciderHandle, DeciderRegistry};
use crate::env_actor::EnvActor;
use crate::publish::{Publisher, Recorded};
use actix::prelude::*;
use children::Children;
use driver::Driver;
use episode::{Cast, Episode};
use mosaic_core::EnvRegistry;
use mosaic_core::experiment::{SpecError, SupervisionSpec};
use mosaic_core::record::{EpisodeCheckpoint, StepRecord};
use mosaic_core::{EnvSpec, ExperimentSpec, ObsRequest, OperatorId, OperatorSpec, RunId};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

pub use crate::publish::Subscribers;

/// The error recorded for a manual episode that a Reset All ([`BeginManual`]) abandons
/// before it ends.
pub const ABANDONED_BY_RESET: &str = "abandoned by reset";

/// How a session runs its episodes.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// The run the records belong to.
    pub run_id: RunId,
    /// The operator configuration this session runs.
    pub operator_id: OperatorId,
    /// Step limit on top of the environment's own.
    pub max_steps: Option<u32>,
    /// Deadline of one decision; `None` waits as long as it takes.
    pub decision_timeout: Option<Duration>,
    /// Copy each acting agent's observation text into its step record.
    pub record_observations: bool,
    /// Delay after each step of a free-running episode (for watching).
    pub pace: Duration,
    /// Steps sent to step subscribers in one [`StepEvent`](crate::StepEvent) at most. A session sends a batch
    /// once the subscribers have handled the previous one (backpressure with pipelining).
    pub step_batch: u32,
    /// Longest a step's records wait in a batch before they are sent anyway.
    pub step_delay: Duration,
    /// Restarts of failed children and checkpoints.
    pub supervision: SupervisionSpec,
}

impl SessionConfig {
    /// Defaults for `operator_id` in `run_id`: no limits, batches of up to 64 steps sent
    /// at most 2 ms after their first step.
    pub fn new(run_id: RunId, operator_id: OperatorId) -> Self {
        Self {
            run_id,
            operator_id,
            max_steps: None,
            decision_timeout: None,
            record_observations: false,
            pace: Duration::ZERO,
            step_batch: 64,
            step_delay: Duration::from_millis(2),
            supervision: SupervisionSpec::default(),
        }
    }

    /// The configuration of the session running `operator` of `experiment` in `run_id`:
    /// the experiment's step limit, decision deadline, observation recording, pace and
    /// supervision. Script runs and manual sessions both start here.
    ///
    /// ```
    /// use mosaic_actors::session::SessionConfig;
    /// use mosaic_core::{ExperimentSpec, RunId};
    ///
    /// let experiment: ExperimentSpec = serde_json::from_value(serde_json::json!({
    ///     "name": "duel",
    ///     "episodes": 1,
    ///     "supervision": {"max_restarts": 1},
    ///     "operators": [{"id": "op", "env": "walk", "agents": {"*": {"kind": "random"}}}]
    /// }))
    /// .unwrap();
    /// let config =
    ///     SessionConfig::from_spec(&experiment, &experiment.operators[0], RunId::from("r"));
    /// assert_eq!(config.operator_id.0, "op");
    /// assert_eq!(config.supervision.max_restarts, 1);
    /// ```
    pub fn from_spec(experiment: &ExperimentSpec, operator: &OperatorSpec, run_id: RunId) -> Self {
        Self {
            max_steps: experiment.max_steps,
            decision_timeout: experiment.decision_timeout_ms.map(Duration::from_millis),
            record_observations: experiment.record_observations,
            pace: Duration::from_millis(experiment.pace_ms),
            supervision: experiment.supervision.clone(),
            ..Self::new(run_id, OperatorId(operator.id.clone()))
        }
    }
}

/// A session's public state, for controllers and viewers.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SessionStatus {
    /// The operator configuration.
    pub operator_id: String,
    /// Current (or last) episode index.
    pub episode_index: u32,
    /// Its seed.
    pub seed: u64,
    /// Steps taken in the episode.
    pub steps: u32,
    /// Whether the episode is over.
    pub done: bool,
    /// Return of every agent so far.
    pub returns: Vec<f64>,
    /// Label of each agent's last action (`None`: did not act).
    pub last_actions: Vec<Option<String>>,
    /// Agents whose decision is awaited next.
    pub acting: Vec<usize>,
}

/// Runs the episodes of one operator configuration. See the module docs.
pub struct Session {
    /// Lent to the request being handled (requests are atomic), here between them.
    driver: Option<Box<Driver>>,
    episode: Option<Episode>,
    spec: Arc<EnvSpec>,
    /// The children as of the last request, for viewers.
    env: Addr<EnvActor>,
    operators: Rc<Vec<DeciderHandle>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").finish_non_exhaustive()
    }
}

impl Session {
    /// Builds the environment and the operators of `operator` on the current arbiter.
    /// Errors name the offending field relative to the operator spec
    /// (e.g. `agents.green_0.kind`). A child that fails to start is tried again within the
    /// restart limit of `config.supervision`; past it, the error is a start failure
    /// ([`SpecError::start_failure`]).
    pub fn build(
        config: SessionConfig,
        operator: &OperatorSpec,
        envs: &EnvRegistry,
        kinds: &DeciderRegistry,
        subscribers: Subscribers,
    ) -> Result<Self, SpecError> {
        let (children, spec, channel) = Children::start(&config, operator, envs, kinds)?;
        let operators = children.deciders.clone();
        let mut wants: Vec<ObsRequest> = operators.iter().map(|o| o.wants).collect();
        if config.record_observations {
            for want in &mut wants {
                want.text = true;
            }
        }
        let publisher = Rc::new(Publisher::new(
            subscribers,
            config.step_batch,
            config.step_delay,
        ));
        let cast = Cast {
            config,
            spec: spec.clone(),
            operators: operators
                .iter()
                .map(|o| (o.kind.clone(), o.paradigm))
                .collect(),
        };
        let env = children.env.clone();
        Ok(Self {
            driver: Some(Box::new(Driver {
                cast,
                children,
                channel,
                wants: Arc::new(wants),
                publisher,
            })),
            episode: None,
            spec,
            env,
            operators,
        })
    }

    /// The environment's spec.
    pub fn spec(&self) -> &Arc<EnvSpec> {
        &self.spec
    }

    /// The paradigm and kind of each agent's decider, in agent order.
    pub fn operators(&self) -> Rc<Vec<DeciderHandle>> {
        self.operators.clone()
    }

    /// The environment actor (for rendering); a restart replaces it.
    pub fn env(&self) -> Addr<EnvActor> {
        self.env.clone()
    }

    /// Lends the driver to a request; `None` only if a request is already running (which
    /// atomic requests rule out).
    fn lend(&mut self) -> Result<Box<Driver>, SessionError> {
        self.driver.take().ok_or(SessionError::Busy)
    }

    /// Takes the driver back after a request, with the children it may have replaced.
    fn give_back(&mut self, driver: Box<Driver>) {
        self.env = driver.children.env.clone();
        self.operators = driver.children.deciders.clone();
        self.driver = Some(driver);
    }

    fn status(&self) -> Option<SessionStatus> {
        let (episode, driver) = (self.episode.as_ref()?, self.driver.as_ref()?);
        Some(episode.status(&driver.cast))
    }
}

impl Actor for Session {
    type Context = Context<Self>;
}

/// Runs one whole episode (script mode) and answers with its roll-up as soon as it is sent
/// to the subscribers, so the session can take the next episode while durable sinks make
/// this one durable: the episode is done only after its roll-up is confirmed durable. An environment
/// failure ends the episode with its error recorded in the roll-up.
#[derive(Debug, Message)]
#[rtype(result = "Result<Recorded, SessionError>")]
pub struct RunEpisode {
    /// Episode index within the operator.
    pub index: u32,
    /// Episode seed.
    pub seed: u64,
}

/// Starts episode `index` with `seed` for manual stepping (Reset All). An unfinished
/// episode that took steps is first recorded as ended with the error
/// [`ABANDONED_BY_RESET`]; one that took none is dropped (it has no records). An episode
/// over at once (nobody acts) is recorded at once, as in script mode.
#[derive(Debug, Message)]
#[rtype(result = "Result<SessionStatus, SessionError>")]
pub struct BeginManual {
    /// Episode index within the operator.
    pub index: u32,
    /// Episode seed.
    pub seed: u64,
}

/// Takes exactly one environment step of the manual episode (Step All). A finished
/// episode is left as it is.
#[derive(Debug, Message)]
#[rtype(result = "Result<SessionStatus, SessionError>")]
pub struct StepManual;

/// Ends the manual episode in progress (e.g. when the interface closes): recorded with
/// `reason` as its error if it took steps, dropped if it took none. Answers the status.
#[derive(Debug, Message)]
#[rtype(result = "Option<SessionStatus>")]
pub struct EndManual {
    /// Why the episode ended, recorded as its error.
    pub reason: String,
}

/// The session's status (`None` before the first manual episode).
#[derive(Debug, Message)]
#[rtype(result = "Option<SessionStatus>")]
pub struct GetStatus;

/// Where a resumed episode continues: its last durable checkpoint and its step records
/// before it (as `mosaic resume` finds them in the run directory).
#[derive(Clone, Debug)]
pub struct ResumePoint {
    /// The checkpoint.
    pub checkpoint: EpisodeCheckpoint,
    /// The episode's step records before the checkpoint's step, in step order.
    pub records: Vec<StepRecord>,
}

/// Runs the rest of an episode whose run stopped, from `from`, to its end (script mode).
/// Answers its roll-up, like [`RunEpisode`].
#[derive(Debug, Message)]
#[rtype(result = "Result<Recorded, SessionError>")]
pub struct ResumeEpisode {
    /// Episode index within the operator.
    pub index: u32,
    /// Episode seed.
    pub seed: u64,
    /// The checkpoint and the records before it.
    pub from: Arc<ResumePoint>,
}

impl Handler<RunEpisode> for Session {
    type Result = AtomicResponse<Self, Result<Recorded, SessionError>>;

    fn handle(&mut self, msg: RunEpisode, _: &mut Context<Self>) -> Self::Result {
        self.run(msg.index, msg.seed, None)
    }
}

impl Handler<ResumeEpisode> for Session {
    type Result = AtomicResponse<Self, Result<Recorded, SessionError>>;

    fn handle(&mut self, msg: ResumeEpisode, _: &mut Context<Self>) -> Self::Result {
        self.run(msg.index, msg.seed, Some(msg.from))
    }
}

impl Session {
    /// Runs a whole episode with the driver lent to it ([`RunEpisode`], [`ResumeEpisode`]).
    fn run(
        &mut self,
        index: u32,
        seed: u64,
        from: Option<Arc<ResumePoint>>,
    ) -> AtomicResponse<Self, Result<Recorded, SessionError>> {
        let mut driver = match self.lend() {
            Ok(driver) => driver,
            Err(busy) => return AtomicResponse::new(Box::pin(fut::ready(Err(busy)))),
        };
        AtomicResponse::new(Box::pin(
            async move {
                let recorded = driver.run_episode(index, seed, from.as_deref()).await;
                (driver, recorded)
            }
            .into_actor(self)
            .map(|(driver, recorded), session, _| {
                session.give_back(driver);
                Ok(recorded)
            }),
        ))
    }

    /// Runs `work` on the manual episode with the driver lent to it; answers the status.
    fn manual<F>(
        &mut self,
        work: impl FnOnce(Box<Driver>, Option<Episode>) -> F,
    ) -> AtomicResponse<Self, Result<SessionStatus, SessionError>>
    where
        F: Future<Output = (Box<Driver>, Result<Option<Episode>, SessionError>)> + 'static,
    {
        let driver = match self.lend() {
            Ok(driver) => driver,
            Err(busy) => return AtomicResponse::new(Box::pin(fut::ready(Err(busy)))),
        };
        let episode = self.episode.take();
        AtomicResponse::new(Box::pin(work(driver, episode).into_actor(self).map(
            |(driver, worked), session, _| {
                session.give_back(driver);
                session.episode = worked?;
                session.status().ok_or(SessionError::NoEpisode)
            },
        )))
    }
}

impl Handler<BeginManual> for Session {
    type Result = AtomicResponse<Self, Result<SessionStatus, SessionError>>;

    fn handle(&mut self, msg: BeginManual, _: &mut Context<Self>) -> Self::Result {
        self.manual(|mut driver, previous| async move {
            if let Some(previous) = previous {
                driver.abandon(previous, ABANDONED_BY_RESET).await;
            }
            let begun = driver.begin(msg.index, msg.seed).await;
            if let Ok(episode) = &begun
                && episode.done
            {
                driver.finish(episode, None).await;
            }
            (driver, begun.map(Some))
        })
    }
}

impl Handler<StepManual> for Session {
    type Result = AtomicResponse<Self, Result<SessionStatus, SessionError>>;

    fn handle(&mut self, _: StepManual, _: &mut Context<Self>) -> Self::Result {
        self.manual(|mut driver, episode| async move {
            let Some(mut episode) = episode else {
                return (driver, Err(SessionError::NoEpisode));
            };
            if !episode.done {
                if let Err(error) = driver.step(&mut episode).await {
                    episode.done = true;
                    driver.finish(&episode, Some(error.to_string())).await;
                } else if episode.done {
                    driver.finish(&episode, None).await;
                } else {
                    // Someone watches each manual step: its records go out before the
                    // answer, ahead of anything asked of the session after it.
                    driver.publisher.flush_steps().await;
                }
            }
            (driver, Ok(Some(episode)))
        })
    }
}

impl Handler<EndManual> for Session {
    type Result = AtomicResponse<Self, Option<SessionStatus>>;

    fn handle(&mut self, msg: EndManual, _: &mut Context<Self>) -> Self::Result {
        let Some(episode) = self.episode.take() else {
            return AtomicResponse::new(Box::pin(fut::ready(None)));
        };
        let Ok(driver) = self.lend() else {
            self.episode = Some(episode);
            return AtomicResponse::new(Box::pin(fut::ready(None)));
        };
        AtomicResponse::new(Box::pin(
            async move {
                let ended = driver.abandon(episode, &msg.reason).await;
                (driver, ended)
            }
            .into_actor(self)
            .map(|(driver, ended), session, _| {
                session.give_back(driver);
                session.episode = ended;
                session.status()
            }),
        ))
    }
}

impl Handler<GetStatus> for Session {
    type Result = Option<SessionStatus>;

    fn handle(&mut self, _: GetStatus, _: &mut Context<Self>) -> Self::Result {
        self.status()
    }
}
