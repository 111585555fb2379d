//! The lock-step session: one operator configuration (an environment and the operators of
//! its agent slots) running episodes.
//!
//! One step: the environment's observations go to every acting agent's operator at once
//! (`Decide`), the session joins the decisions (a late or failed one becomes the
//! environment's default action, recorded as such), steps the environment, and hands the
//! step's records to its publisher (`crate::publish`), which sends them to the subscribers
//! in batches ([`StepEvent`]s). At the end of an episode it sends the last steps, then an
//! [`EpisodeEvent`]; the episode is done once every subscriber has handled it (durable sinks
//! answer only once the episode's records are on disk). See `docs/semantics.md` for the
//! guarantees.
//!
//! A session supervises its children, the environment and the operators of its agents. A
//! child whose actor died (a panic), whose process exited or fell silent, is restarted as
//! the experiment's [`SupervisionSpec`] says, brought back to its state before the failed
//! step (the last checkpoint, then a replay of what happened since), and the step is
//! retried. Each restart is recorded in the episode's roll-up.

use crate::channel::{Channel, ChannelConfig, LoadChannel, NewEpisode, SaveChannel};
use crate::env_actor::{
    EnvActor, EnvView, Observe, Reset, RestoreSnapshot, Step, Summarise, TakeSnapshot,
};
use crate::operator::{OperatorHandle, OperatorRegistry, SessionResources, SpawnContext};
use crate::publish::{Publisher, Recorded};
use crate::supervisor::{Intensity, RestartWindow};
use crate::{
    BeginEpisode, CheckpointEvent, Decide, EpisodeEvent, LoadState, OperatorError, SaveState,
    SessionError, StepEvent,
};
use actix::prelude::*;
use futures::future::join_all;
use mosaic_adapters::EnvRegistry;
use mosaic_adapters::registry::ScriptedConstructor;
use mosaic_core::experiment::{RestartStrategy, SpecError, SupervisionSpec};
use mosaic_core::record::{
    AgentResult, CHECKPOINT_SCHEMA, EpisodeCheckpoint, EpisodeRecord, RestartRecord, STEP_SCHEMA,
    StepRecord,
};
use mosaic_core::{
    Action, AgentContext, Decision, DecisionSource, EnvError, EnvSpec, Environment, EpisodeId,
    ObsRequest, Observation, OperatorId, OperatorSpec, Paradigm, RunId, Snapshot, Transition,
};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// Steps sent to step subscribers in one [`StepEvent`] at most. A session sends a batch
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
}

/// Who hears about steps and episodes.
#[derive(Clone, Default)]
pub struct Subscribers {
    /// Receive every [`StepEvent`].
    pub steps: Vec<Recipient<StepEvent>>,
    /// Receive every [`EpisodeEvent`]; the session waits for each to be handled.
    pub episodes: Vec<Recipient<EpisodeEvent>>,
    /// Receive the checkpoints of unfinished episodes ([`CheckpointEvent`]), each after
    /// the step events before it.
    pub checkpoints: Vec<Recipient<CheckpointEvent>>,
}

impl std::fmt::Debug for Subscribers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscribers")
            .field("steps", &self.steps.len())
            .field("episodes", &self.episodes.len())
            .field("checkpoints", &self.checkpoints.len())
            .finish()
    }
}

mod recovery;
mod step;

/// Everything a step needs, shared by the session and its in-flight futures.
struct Handles {
    config: SessionConfig,
    spec: Arc<EnvSpec>,
    factory: Factory,
    children: RefCell<Children>,
    /// Kind and paradigm of each agent's operator as first started (records keep them
    /// across restarts).
    agents: Vec<(String, Paradigm)>,
    channel: Addr<Channel>,
    wants: Arc<Vec<ObsRequest>>,
    /// Sends step records (batched) and roll-ups to the subscribers.
    publisher: Rc<Publisher>,
    /// Restarts per child (index 0: the environment; 1 + i: agent i).
    windows: RefCell<Vec<RestartWindow>>,
    /// Whether the environment answered its last snapshot request with a snapshot.
    env_snapshots: Cell<bool>,
    /// Per agent: whether its operator answered its last checkpoint request with a state.
    operator_states: RefCell<Vec<bool>>,
}

/// The session's running children; replaced one by one on restarts.
struct Children {
    env: Addr<EnvActor>,
    /// Shared with in-flight decisions; a restart swaps in a new list.
    operators: Rc<Vec<OperatorHandle>>,
}

/// One of a session's children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Child {
    Env,
    Agent(usize),
}

impl Child {
    fn index(self) -> usize {
        match self {
            Child::Env => 0,
            Child::Agent(agent) => agent + 1,
        }
    }
}

/// Starts the session's children: the first time and on every restart.
struct Factory {
    envs: EnvRegistry,
    kinds: OperatorRegistry,
    operator: OperatorSpec,
    spec: Arc<EnvSpec>,
    scripted: Option<ScriptedConstructor>,
    resources: SessionResources,
}

impl Factory {
    fn env(&self) -> Result<Box<dyn Environment>, SpecError> {
        self.envs
            .make(&self.operator.env, &self.operator.env_settings)
    }

    /// Errors name the field relative to the operator spec (e.g. `agents.green_0.kind`).
    fn operator(&self, agent: usize) -> Result<OperatorHandle, SpecError> {
        let agent_id = &self.spec.agents[agent].id;
        let key = if self.operator.agents.contains_key(agent_id) {
            agent_id.as_str()
        } else {
            mosaic_core::experiment::DEFAULT_SLOT
        };
        let slot = self.operator.agents.get(key).ok_or_else(|| {
            SpecError::new(
                "agents",
                format!("no operator for agent `{agent_id}` (name it, or add a `\"*\"` slot)"),
            )
        })?;
        let cx = SpawnContext {
            env_name: &self.operator.env,
            env_settings: &self.operator.env_settings,
            spec: &self.spec,
            agent,
            slot,
            scripted: self.scripted,
            session: &self.resources,
        };
        self.kinds.spawn(&cx).map_err(|e| {
            let path = if e.path.is_empty() {
                format!("agents.{key}")
            } else {
                format!("agents.{key}.{}", e.path)
            };
            e.at(path)
        })
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

/// One running episode.
struct Episode {
    index: u32,
    seed: u64,
    id: String,
    view: EnvView,
    started: Instant,
    returns: Vec<f64>,
    results: Vec<AgentTally>,
    alive: Vec<bool>,
    last_actions: Vec<Option<String>>,
    terminated: bool,
    truncated: bool,
    done: bool,
    recovery: Recovery,
    restarts: Vec<RestartRecord>,
}

/// What fault recovery needs to rebuild a child's state within the episode: the last
/// checkpoints and what happened since.
#[derive(Default)]
struct Recovery {
    /// When the last checkpoint was taken.
    checkpointed: Option<Instant>,
    /// The environment at some step, when it can save its state.
    env: Option<(u32, Snapshot)>,
    /// Joint actions since `env` (since the reset without one).
    actions: Vec<Vec<Option<Action>>>,
    /// Per agent: its operator's state, when it can save it.
    states: Vec<Option<serde_json::Value>>,
    /// Per agent: what it was asked since its state (since the episode start without one).
    asked: Vec<Vec<Asked>>,
}

/// One decision as first made, replayed into a restarted operator.
struct Asked {
    step: u32,
    obs: Arc<Observation>,
    action: Action,
    source: DecisionSource,
}

#[derive(Clone, Copy, Default)]
struct AgentTally {
    decisions: u32,
    timeouts: u32,
    errors: u32,
}

impl Episode {
    fn status(&self, operator_id: &OperatorId) -> SessionStatus {
        SessionStatus {
            operator_id: operator_id.to_string(),
            episode_index: self.index,
            seed: self.seed,
            steps: self.view.steps,
            done: self.done,
            returns: self.returns.clone(),
            last_actions: self.last_actions.clone(),
            acting: self.view.acting.clone(),
        }
    }
}

/// Runs the episodes of one operator configuration. See the module docs.
pub struct Session {
    handles: Rc<Handles>,
    episode: Option<Episode>,
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
        kinds: &OperatorRegistry,
        subscribers: Subscribers,
    ) -> Result<Self, SpecError> {
        let intensity = Intensity::new(
            config.supervision.max_restarts,
            Duration::from_millis(config.supervision.period_ms),
        );
        let mut env_window = RestartWindow::new(intensity);
        let env = retry_start(&mut env_window, || {
            envs.make(&operator.env, &operator.env_settings)
        })?;
        let spec = Arc::new(env.spec().clone());
        for slot in operator.agents.keys() {
            if slot != mosaic_core::experiment::DEFAULT_SLOT && spec.agent_index(slot).is_none() {
                let known: Vec<_> = spec.agents.iter().map(|a| a.id.as_str()).collect();
                return Err(SpecError::new(
                    format!("agents.{slot}"),
                    format!(
                        "`{slot}` is not an agent of {} (agents: {})",
                        spec.name,
                        known.join(", ")
                    ),
                ));
            }
        }
        let channel = Channel::start(&spec, ChannelConfig::default());
        let factory = Factory {
            envs: envs.clone(),
            kinds: kinds.clone(),
            operator: operator.clone(),
            spec: spec.clone(),
            scripted: envs.get(&operator.env).and_then(|k| k.scripted),
            resources: SessionResources {
                channel: Some(channel.clone()),
            },
        };
        let mut windows = vec![env_window];
        let mut operators = Vec::with_capacity(spec.agents.len());
        for agent in 0..spec.agents.len() {
            let mut window = RestartWindow::new(intensity);
            operators.push(retry_start(&mut window, || factory.operator(agent))?);
            windows.push(window);
        }
        let mut wants: Vec<ObsRequest> = operators.iter().map(|o| o.wants).collect();
        if config.record_observations {
            for want in &mut wants {
                want.text = true;
            }
        }
        let agents = operators
            .iter()
            .map(|o| (o.kind.clone(), o.paradigm))
            .collect();
        let operator_states = operators.iter().map(|o| o.state.is_some()).collect();
        let env = EnvActor::new(env).start();
        let publisher = Rc::new(Publisher::new(
            subscribers,
            config.step_batch,
            config.step_delay,
        ));
        Ok(Self {
            handles: Rc::new(Handles {
                config,
                spec,
                factory,
                children: RefCell::new(Children {
                    env,
                    operators: Rc::new(operators),
                }),
                agents,
                channel,
                wants: Arc::new(wants),
                publisher,
                windows: RefCell::new(windows),
                env_snapshots: Cell::new(true),
                operator_states: RefCell::new(operator_states),
            }),
            episode: None,
        })
    }

    /// The environment's spec.
    pub fn spec(&self) -> &Arc<EnvSpec> {
        &self.handles.spec
    }

    /// The paradigm and kind of each agent's operator, in agent order.
    pub fn operators(&self) -> Rc<Vec<OperatorHandle>> {
        self.handles.operators()
    }

    /// The environment actor (for rendering); a restart replaces it.
    pub fn env(&self) -> Addr<EnvActor> {
        self.handles.env()
    }
}

/// Starts a child with `start`, trying again after start failures while `window` allows.
fn retry_start<T>(
    window: &mut RestartWindow,
    mut start: impl FnMut() -> Result<T, SpecError>,
) -> Result<T, SpecError> {
    loop {
        match start() {
            Err(e) if e.start_failure && window.allow(Instant::now()) => {
                tracing::warn!(target: "mosaic::session", "{e}; starting again");
            }
            Err(e) if e.start_failure => {
                let attempts = window.count();
                return Err(SpecError {
                    message: format!("{} (gave up after {attempts} attempts)", e.message),
                    ..e
                });
            }
            other => return other,
        }
    }
}

impl Actor for Session {
    type Context = Context<Self>;
}

/// Runs one whole episode (script mode) and answers with its roll-up as soon as it is sent
/// to the subscribers, so the session can take the next episode while durable sinks make
/// this one durable: the episode is done only after [`Recorded::durable`]. An environment
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

impl Handler<RunEpisode> for Session {
    type Result = AtomicResponse<Self, Result<Recorded, SessionError>>;

    fn handle(&mut self, msg: RunEpisode, _: &mut Context<Self>) -> Self::Result {
        let handles = self.handles.clone();
        AtomicResponse::new(Box::pin(
            async move { handles.run_episode(msg.index, msg.seed, None).await }.into_actor(self),
        ))
    }
}

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

impl Handler<ResumeEpisode> for Session {
    type Result = AtomicResponse<Self, Result<Recorded, SessionError>>;

    fn handle(&mut self, msg: ResumeEpisode, _: &mut Context<Self>) -> Self::Result {
        let handles = self.handles.clone();
        AtomicResponse::new(Box::pin(
            async move {
                handles
                    .run_episode(msg.index, msg.seed, Some(&msg.from))
                    .await
            }
            .into_actor(self),
        ))
    }
}

impl Handler<BeginManual> for Session {
    type Result = AtomicResponse<Self, Result<SessionStatus, SessionError>>;

    fn handle(&mut self, msg: BeginManual, _: &mut Context<Self>) -> Self::Result {
        let handles = self.handles.clone();
        let previous = self.episode.take();
        AtomicResponse::new(Box::pin(
            async move {
                if let Some(previous) = previous {
                    handles.abandon(previous, ABANDONED_BY_RESET).await;
                }
                let episode = handles.begin(msg.index, msg.seed).await?;
                if episode.done {
                    handles.finish(&episode, None).await;
                }
                Ok::<_, SessionError>(episode)
            }
            .into_actor(self)
            .map(|begun, session, _| {
                let episode = begun?;
                let status = episode.status(&session.handles.config.operator_id);
                session.episode = Some(episode);
                Ok(status)
            }),
        ))
    }
}

impl Handler<StepManual> for Session {
    type Result = AtomicResponse<Self, Result<SessionStatus, SessionError>>;

    fn handle(&mut self, _: StepManual, _: &mut Context<Self>) -> Self::Result {
        let handles = self.handles.clone();
        let episode = self.episode.take();
        AtomicResponse::new(Box::pin(
            async move {
                let mut episode = episode.ok_or_else(|| {
                    SessionError::Control("no episode started: reset first".into())
                })?;
                if !episode.done {
                    if let Err(error) = handles.step(&mut episode).await {
                        episode.done = true;
                        handles.finish(&episode, Some(error.to_string())).await;
                    } else if episode.done {
                        handles.finish(&episode, None).await;
                    } else {
                        // Someone watches each manual step: its records go out before the
                        // answer, ahead of anything asked of the session after it.
                        handles.publisher.flush_steps().await;
                    }
                }
                Ok(episode)
            }
            .into_actor(self)
            .map(|stepped: Result<Episode, SessionError>, session, _| {
                let episode = stepped?;
                let status = episode.status(&session.handles.config.operator_id);
                session.episode = Some(episode);
                Ok(status)
            }),
        ))
    }
}

impl Handler<EndManual> for Session {
    type Result = AtomicResponse<Self, Option<SessionStatus>>;

    fn handle(&mut self, msg: EndManual, _: &mut Context<Self>) -> Self::Result {
        let handles = self.handles.clone();
        let episode = self.episode.take();
        AtomicResponse::new(Box::pin(
            async move { handles.abandon(episode?, &msg.reason).await }
                .into_actor(self)
                .map(|ended, session, _| {
                    session.episode = ended;
                    session
                        .episode
                        .as_ref()
                        .map(|e| e.status(&session.handles.config.operator_id))
                }),
        ))
    }
}

impl Handler<GetStatus> for Session {
    type Result = Option<SessionStatus>;

    fn handle(&mut self, _: GetStatus, _: &mut Context<Self>) -> Self::Result {
        self.episode
            .as_ref()
            .map(|e| e.status(&self.handles.config.operator_id))
    }
}
