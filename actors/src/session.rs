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
use mosaic_core::EnvRegistry;
use mosaic_core::experiment::{RestartStrategy, SpecError, SupervisionSpec};
use mosaic_core::record::{
    AgentResult, CHECKPOINT_SCHEMA, EpisodeCheckpoint, EpisodeRecord, RestartRecord, STEP_SCHEMA,
    StepRecord,
};
use mosaic_core::registry::ScriptedConstructor;
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

impl Handles {
    fn env_error(&self, message: impl std::fmt::Display) -> SessionError {
        SessionError::Env {
            env: self.spec.name.clone(),
            message: message.to_string(),
        }
    }

    fn env(&self) -> Addr<EnvActor> {
        self.children.borrow().env.clone()
    }

    fn operators(&self) -> Rc<Vec<OperatorHandle>> {
        self.children.borrow().operators.clone()
    }

    fn child_name(&self, child: Child) -> &str {
        match child {
            Child::Env => "env",
            Child::Agent(agent) => &self.spec.agents[agent].id,
        }
    }

    fn agent_context(&self, seed: u64, agent: usize) -> AgentContext {
        AgentContext::new(
            seed,
            agent,
            self.spec.agents[agent].id.clone(),
            self.spec.action_labels.len(),
        )
    }

    /// An episode that has not started yet (its reset is [`Handles::start`]).
    fn new_episode(&self, index: u32, seed: u64) -> Episode {
        let agents = self.spec.agents.len();
        Episode {
            index,
            seed,
            id: EpisodeId::new(&self.config.run_id, &self.config.operator_id, index).0,
            view: EnvView {
                steps: 0,
                acting: Vec::new(),
                observations: Vec::new(),
                transition: None,
            },
            started: Instant::now(),
            returns: vec![0.0; agents],
            results: vec![AgentTally::default(); agents],
            alive: vec![true; agents],
            last_actions: vec![None; agents],
            terminated: false,
            truncated: false,
            done: false,
            recovery: Recovery {
                states: vec![None; agents],
                asked: (0..agents).map(|_| Vec::new()).collect(),
                ..Recovery::default()
            },
            restarts: Vec::new(),
        }
    }

    async fn begin(&self, index: u32, seed: u64) -> Result<Episode, SessionError> {
        let mut episode = self.new_episode(index, seed);
        self.start(&mut episode).await?;
        Ok(episode)
    }

    /// Starts every operator's episode and resets the environment, restarting children
    /// that are down.
    async fn start(&self, episode: &mut Episode) -> Result<(), SessionError> {
        // Messages never cross episodes; the channel is cleared before anyone may post.
        self.channel
            .send(NewEpisode)
            .await
            .map_err(|e| SessionError::Control(format!("message channel gone: {e}")))?;
        let operators = self.operators();
        let begins = operators.iter().enumerate().map(|(agent, op)| {
            op.begin.send(BeginEpisode {
                ctx: self.agent_context(episode.seed, agent),
                spec: self.spec.clone(),
            })
        });
        let answers = join_all(begins).await;
        for (agent, answer) in answers.into_iter().enumerate() {
            let failure = match answer {
                Ok(Ok(())) => continue,
                Err(mailbox) => OperatorError::Gone(mailbox.to_string()),
                Ok(Err(e)) => e,
            };
            if !failure.needs_restart() {
                return Err(SessionError::Control(format!(
                    "operator of {} could not start episode {}: {failure}",
                    self.spec.agents[agent].id, episode.index
                )));
            }
            // A fresh operator begins the episode as part of its restart.
            self.restart(episode, Child::Agent(agent), failure.to_string())
                .await?;
        }
        let seed = episode.seed;
        let view = self
            .ask_env(episode, || Reset {
                seed,
                wants: self.wants.clone(),
            })
            .await?;
        episode.done = view.acting.is_empty();
        episode.terminated = episode.done;
        episode.view = view;
        episode.recovery.checkpointed = Some(Instant::now());
        Ok(())
    }

    /// Sends the environment the message `make` builds, restarting the environment (and
    /// rebuilding its state) while it crashes; other errors end the episode.
    async fn ask_env<M>(
        &self,
        episode: &mut Episode,
        make: impl Fn() -> M,
    ) -> Result<EnvView, SessionError>
    where
        M: Message<Result = Result<EnvView, EnvError>> + Send + 'static,
        EnvActor: Handler<M>,
    {
        loop {
            let failure = match self.env().send(make()).await {
                Ok(Ok(view)) => return Ok(view),
                Ok(Err(EnvError::Crashed(failure))) => failure,
                Err(mailbox) => mailbox.to_string(),
                Ok(Err(e)) => return Err(self.env_error(e)),
            };
            self.restart(episode, Child::Env, failure).await?;
        }
    }

    /// The action taken when an operator gives none: the default action if legal here,
    /// else the first legal action.
    fn fallback_action(&self, obs: &Observation) -> Action {
        obs.fallback(self.spec.default_action)
    }

    /// Asks the acting agents in `agents` (indices into `episode.view.acting`) for their
    /// decisions. A late or failed answer becomes the fallback action; an operator that
    /// must be restarted answers `Err` with the failure.
    async fn decide(
        &self,
        episode: &Episode,
        agents: &[usize],
    ) -> Vec<(usize, Result<(Decision, u64), String>)> {
        let deadline = self
            .config
            .decision_timeout
            .map(|t| tokio::time::Instant::now() + t);
        let step = episode.view.steps;
        let operators = self.operators();
        let asks = agents.iter().map(|&slot| {
            let agent = episode.view.acting[slot];
            let obs = &episode.view.observations[slot];
            let request = operators[agent].decide.send(Decide {
                obs: obs.clone(),
                step,
                deadline: deadline.map(tokio::time::Instant::into_std),
            });
            async move {
                let started = Instant::now();
                let answer = match deadline {
                    Some(at) => tokio::time::timeout_at(at, request).await.ok(),
                    None => Some(request.await),
                };
                let decision = match answer {
                    None => Decision::fallback(
                        self.fallback_action(obs),
                        DecisionSource::Timeout,
                        crate::error::DEADLINE_MISSED,
                    ),
                    Some(Err(mailbox)) => {
                        return (
                            slot,
                            Err(OperatorError::Gone(mailbox.to_string()).to_string()),
                        );
                    }
                    Some(Ok(Err(failure))) if failure.needs_restart() => {
                        return (slot, Err(failure.to_string()));
                    }
                    Some(Ok(Err(failure))) => Decision::fallback(
                        self.fallback_action(obs),
                        DecisionSource::Error,
                        failure.to_string(),
                    ),
                    Some(Ok(Ok(decision))) if obs.is_legal(decision.action) => decision,
                    Some(Ok(Ok(decision))) => {
                        let mut fallback = Decision::fallback(
                            self.fallback_action(obs),
                            DecisionSource::Error,
                            format!(
                                "illegal action {} ({})",
                                decision.action.0,
                                self.spec.action_label(decision.action)
                            ),
                        );
                        if let (Some(serde_json::Value::Object(into)), Some(original)) =
                            (fallback.detail.as_mut(), decision.detail)
                        {
                            into.insert("operator".into(), original);
                        }
                        fallback
                    }
                };
                (slot, Ok((decision, started.elapsed().as_micros() as u64)))
            }
        });
        join_all(asks).await
    }

    /// Every acting agent's decision, restarting operators that fail until all have
    /// answered (or the session gives up). In acting order: `(agent, decision, µs)`.
    async fn decide_all(
        &self,
        episode: &mut Episode,
    ) -> Result<Vec<(usize, Decision, u64)>, SessionError> {
        let acting = episode.view.acting.len();
        let mut decided: Vec<Option<(Decision, u64)>> = vec![None; acting];
        let mut pending: Vec<usize> = (0..acting).collect();
        while !pending.is_empty() {
            let mut failed = None;
            for (slot, answer) in self.decide(episode, &pending).await {
                match answer {
                    Ok(decision) => decided[slot] = Some(decision),
                    Err(failure) => {
                        failed.get_or_insert((episode.view.acting[slot], failure));
                    }
                }
            }
            pending.clear();
            if let Some((agent, failure)) = failed {
                let restarted = self.restart(episode, Child::Agent(agent), failure).await?;
                // A restarted operator is back to its state before this step: ask it again
                // (a deterministic operator answers the same).
                for (slot, acting_agent) in episode.view.acting.iter().enumerate() {
                    if decided[slot].is_none() || restarted.contains(&Child::Agent(*acting_agent)) {
                        decided[slot] = None;
                        pending.push(slot);
                    }
                }
            }
        }
        Ok(episode
            .view
            .acting
            .iter()
            .zip(decided)
            .filter_map(|(&agent, decision)| decision.map(|(d, us)| (agent, d, us)))
            .collect())
    }

    /// Saves the environment's and the operators' state when the checkpoint interval has
    /// passed; from then on recovery replays only what follows.
    async fn checkpoint(&self, episode: &mut Episode) {
        let interval = Duration::from_millis(self.config.supervision.checkpoint_interval_ms);
        if episode
            .recovery
            .checkpointed
            .is_some_and(|at| at.elapsed() < interval)
        {
            return;
        }
        episode.recovery.checkpointed = Some(Instant::now());
        let step = episode.view.steps;
        if self.env_snapshots.get() {
            match self.env().send(TakeSnapshot).await {
                Ok(Some(snapshot)) => {
                    episode.recovery.env = Some((step, snapshot));
                    episode.recovery.actions.clear();
                }
                // The environment cannot save its state: recovery replays from the reset.
                Ok(None) => self.env_snapshots.set(false),
                Err(_) => {}
            }
        }
        let operators = self.operators();
        let wanted: Vec<usize> = (0..operators.len())
            .filter(|&agent| self.operator_states.borrow()[agent])
            .collect();
        let saves = wanted.iter().map(|&agent| {
            let state = operators[agent].state.clone();
            async move {
                let answer = match state {
                    Some(state) => state.save.send(SaveState).await.ok(),
                    None => Some(Ok(None)),
                };
                (agent, answer)
            }
        });
        for (agent, answer) in join_all(saves).await {
            match answer {
                Some(Ok(Some(state))) => {
                    episode.recovery.states[agent] = Some(state);
                    episode.recovery.asked[agent].clear();
                }
                Some(Ok(None)) => self.operator_states.borrow_mut()[agent] = false,
                // A failing checkpoint leaves the last one in place; the failure itself
                // surfaces at the next decision.
                Some(Err(e)) => {
                    tracing::warn!(target: "mosaic::session", agent = %self.spec.agents[agent].id, "checkpoint failed: {e}");
                }
                None => {}
            }
        }
        self.persist_checkpoint(episode).await;
    }

    /// Sends the checkpoint just taken to the checkpoint subscribers, when it holds the whole
    /// episode state at this step: every operator's state (the environment's may be missing:
    /// a resume then replays the recorded actions).
    async fn persist_checkpoint(&self, episode: &Episode) {
        let recovery = &episode.recovery;
        let complete =
            recovery.asked.iter().all(Vec::is_empty) && recovery.states.iter().all(Option::is_some);
        if !self.publisher.wants_checkpoints() || !complete {
            return;
        }
        let Ok(channel) = self.channel.send(SaveChannel).await else {
            return;
        };
        let step_index = episode.view.steps;
        let env = match &recovery.env {
            Some((step, snapshot)) if *step == step_index => Some(snapshot.clone()),
            _ => None,
        };
        self.publisher
            .publish_checkpoint(Arc::new(EpisodeCheckpoint {
                schema: CHECKPOINT_SCHEMA.to_owned(),
                run_id: self.config.run_id.to_string(),
                operator_id: self.config.operator_id.to_string(),
                episode_index: episode.index,
                step_index,
                env,
                operators: recovery.states.iter().flatten().cloned().collect(),
                channel,
                restarts: episode.restarts.clone(),
            }))
            .await;
    }

    /// Restarts `failed` (and its siblings as the strategy says), rebuilds their state and
    /// records the restart. Answers which children were restarted; gives up with
    /// [`SessionError::Escalated`] past the restart limit.
    async fn restart(
        &self,
        episode: &mut Episode,
        failed: Child,
        failure: String,
    ) -> Result<Vec<Child>, SessionError> {
        let detected = Instant::now();
        let timestamp = mosaic_core::record::now_ms();
        let agents = self.spec.agents.len();
        let all = std::iter::once(Child::Env).chain((0..agents).map(Child::Agent));
        let set: Vec<Child> = match self.config.supervision.strategy {
            RestartStrategy::OneForOne => vec![failed],
            RestartStrategy::OneForAll => all.collect(),
            RestartStrategy::RestForOne => all.filter(|c| c.index() >= failed.index()).collect(),
        };
        tracing::warn!(target: "mosaic::session", operator = %self.config.operator_id, episode = episode.index, child = self.child_name(failed), "{failure}");
        let mut recovery = Vec::new();
        let mut diverged = None;
        let mut last_failure = failure.clone();
        for &child in &set {
            loop {
                if !self.windows.borrow_mut()[child.index()].allow(Instant::now()) {
                    let intensity = self.windows.borrow()[child.index()].intensity();
                    let error = format!(
                        "{} failed more than {} times within {} ms (last: {last_failure})",
                        self.child_name(child),
                        intensity.max_restarts,
                        intensity.period.as_millis()
                    );
                    episode.restarts.push(RestartRecord {
                        child: self.child_name(failed).to_owned(),
                        step_index: episode.view.steps,
                        failure: failure.clone(),
                        recovery: String::new(),
                        recovered: false,
                        diverged: None,
                        recovery_ms: detected.elapsed().as_millis() as u64,
                        timestamp,
                    });
                    return Err(SessionError::Escalated(error));
                }
                let rebuilt = match child {
                    Child::Env => self.rebuild_env(episode).await,
                    Child::Agent(agent) => self.rebuild_operator(episode, agent).await,
                };
                match rebuilt {
                    Ok((how, divergence)) => {
                        recovery.push(format!("{}: {how}", self.child_name(child)));
                        diverged = diverged.or(divergence);
                        break;
                    }
                    Err(again) => last_failure = again,
                }
            }
        }
        episode.restarts.push(RestartRecord {
            child: self.child_name(failed).to_owned(),
            step_index: episode.view.steps,
            failure,
            recovery: recovery.join("; "),
            recovered: true,
            diverged,
            recovery_ms: detected.elapsed().as_millis() as u64,
            timestamp,
        });
        Ok(set)
    }

    /// A new environment brought to the episode's current step ([`Handles::restore_env`]).
    /// Answers how, and where the replay diverged from the first run, if it did.
    async fn rebuild_env(&self, episode: &Episode) -> Result<(String, Option<String>), String> {
        let env = self.factory.env().map_err(|e| e.to_string())?;
        let addr = EnvActor::new(env).start();
        if episode.view.observations.is_empty() && episode.view.steps == 0 {
            // Not reset yet: the episode's reset follows.
            self.children.borrow_mut().env = addr;
            return Ok(("restarted before the reset".to_owned(), None));
        }
        let how = self.restore_env(&addr, episode).await?;
        let view = addr
            .send(Observe {
                wants: Arc::new(vec![ObsRequest::MASK_ONLY; self.spec.agents.len()]),
            })
            .await
            .map_err(|e| e.to_string())?;
        // While an episode resumes there is no view yet to compare with but the step.
        let resuming = episode.view.observations.is_empty();
        let diverged = (view.steps != episode.view.steps
            || (!resuming && view.acting != episode.view.acting)
            || view
                .observations
                .iter()
                .zip(&episode.view.observations)
                .any(|(now, then)| now.legal != then.legal))
        .then(|| {
            format!(
                "environment replay reached step {} with agents {:?} acting; the episode was at step {} with {:?}",
                view.steps, view.acting, episode.view.steps, episode.view.acting
            )
        });
        self.children.borrow_mut().env = addr;
        Ok((how, diverged))
    }

    /// Brings the environment `env` to the episode's current step: restored from the last
    /// snapshot (or reset from the seed), then the actions since replayed. Answers how.
    async fn restore_env(&self, env: &Addr<EnvActor>, episode: &Episode) -> Result<String, String> {
        let masks = Arc::new(vec![ObsRequest::MASK_ONLY; self.spec.agents.len()]);
        let started_from = match &episode.recovery.env {
            Some((step, snapshot)) => {
                env.send(RestoreSnapshot(snapshot.clone()))
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| e.to_string())?;
                format!("snapshot at step {step}")
            }
            None => {
                env.send(Reset {
                    seed: episode.seed,
                    wants: masks.clone(),
                })
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
                "reset from the seed".to_owned()
            }
        };
        for actions in &episode.recovery.actions {
            env.send(Step {
                actions: actions.clone(),
                wants: masks.clone(),
            })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        }
        Ok(format!(
            "{started_from}, replayed {} steps",
            episode.recovery.actions.len()
        ))
    }

    /// A new operator for `agent` brought to its state before the current step: the
    /// episode begun, the last checkpointed state loaded, the decisions since replayed.
    async fn rebuild_operator(
        &self,
        episode: &Episode,
        agent: usize,
    ) -> Result<(String, Option<String>), String> {
        let handle = self.factory.operator(agent).map_err(|e| e.to_string())?;
        let rebuilt = self.restore_operator(&handle, episode, agent).await?;
        let mut children = self.children.borrow_mut();
        let mut operators = children.operators.as_ref().clone();
        operators[agent] = handle;
        children.operators = Rc::new(operators);
        Ok(rebuilt)
    }

    /// Brings the operator `handle` of `agent` to its state before the current step: the
    /// episode begun, the last checkpointed state loaded, the decisions since replayed.
    /// Answers how, and where the replay diverged from the first run, if it did.
    async fn restore_operator(
        &self,
        handle: &OperatorHandle,
        episode: &Episode,
        agent: usize,
    ) -> Result<(String, Option<String>), String> {
        let gone = |e: MailboxError| OperatorError::Gone(e.to_string()).to_string();
        handle
            .begin
            .send(BeginEpisode {
                ctx: self.agent_context(episode.seed, agent),
                spec: self.spec.clone(),
            })
            .await
            .map_err(gone)?
            .map_err(|e| e.to_string())?;
        let mut how = "episode begun".to_owned();
        if let Some(state) = &episode.recovery.states[agent] {
            let load = handle
                .state
                .as_ref()
                .ok_or_else(|| "the restarted operator cannot restore its checkpoint".to_owned())?;
            load.load
                .send(LoadState(state.clone()))
                .await
                .map_err(gone)?
                .map_err(|e| e.to_string())?;
            how = "checkpoint restored".to_owned();
        }
        let mut diverged = None;
        let asked = &episode.recovery.asked[agent];
        for question in asked {
            let answer = handle
                .decide
                .send(Decide {
                    obs: question.obs.clone(),
                    step: question.step,
                    deadline: None,
                })
                .await
                .map_err(gone)?;
            let answered = match answer {
                Ok(decision) => Some(decision.action),
                Err(e) if e.needs_restart() => return Err(e.to_string()),
                Err(_) => None,
            };
            if question.source == DecisionSource::Policy
                && answered != Some(question.action)
                && diverged.is_none()
            {
                diverged = Some(format!(
                    "{}'s replayed decision at step {} was {} instead of {}",
                    self.spec.agents[agent].id,
                    question.step,
                    answered.map_or("an error".to_owned(), |a| self
                        .spec
                        .action_label(a)
                        .to_owned()),
                    self.spec.action_label(question.action)
                ));
            }
        }
        Ok((
            format!("{how}, replayed {} decisions", asked.len()),
            diverged,
        ))
    }

    /// Takes one step of `episode`; emits its records. Returns the env error, if any, after
    /// which the episode is over.
    async fn step(&self, episode: &mut Episode) -> Result<(), SessionError> {
        self.checkpoint(episode).await;
        let decisions = self.decide_all(episode).await?;
        let agents = self.spec.agents.len();
        let mut actions: Vec<Option<Action>> = vec![None; agents];
        let step_index = episode.view.steps;
        for ((agent, decision, _), obs) in decisions.iter().zip(&episode.view.observations) {
            actions[*agent] = Some(decision.action);
            episode.recovery.asked[*agent].push(Asked {
                step: step_index,
                obs: obs.clone(),
                action: decision.action,
                source: decision.source,
            });
        }
        let mut view = self
            .ask_env(episode, || Step {
                actions: actions.clone(),
                wants: self.wants.clone(),
            })
            .await?;
        episode.recovery.actions.push(actions);
        let transition = view
            .transition
            .take()
            .unwrap_or_else(|| Transition::new(agents));
        let observations = std::mem::replace(&mut episode.view, view);
        let over = episode.view.acting.is_empty() || transition.all_done();
        let truncate = !over
            && self
                .config
                .max_steps
                .is_some_and(|limit| episode.view.steps >= limit);

        let records = self.records(
            episode,
            step_index,
            &observations,
            decisions,
            &transition,
            truncate,
        );
        for (agent, alive) in episode.alive.iter_mut().enumerate() {
            let ended = transition.terminated.get(agent).copied().unwrap_or(false)
                || transition.truncated.get(agent).copied().unwrap_or(false);
            *alive &= !ended;
        }
        episode.terminated |= transition.terminated.iter().any(|t| *t);
        episode.truncated |= truncate || transition.truncated.iter().any(|t| *t);
        episode.done = over || truncate || !episode.alive.iter().any(|a| *a);
        self.emit_step(records).await;
        Ok(())
    }

    fn records(
        &self,
        episode: &mut Episode,
        step_index: u32,
        before: &EnvView,
        decisions: Vec<(usize, Decision, u64)>,
        transition: &Transition,
        truncate: bool,
    ) -> Vec<StepRecord> {
        let agents = self.spec.agents.len();
        let mut acted: Vec<Option<(Decision, u64)>> = vec![None; agents];
        for (agent, decision, micros) in decisions {
            acted[agent] = Some((decision, micros));
        }
        let timestamp = mosaic_core::record::now_ms();
        let mut records = Vec::with_capacity(agents);
        let mut agentless_events = transition.events.iter().filter(|e| e.agent.is_none());
        for agent in (0..agents).filter(|a| episode.alive[*a]) {
            let reward = transition.rewards.get(agent).copied().unwrap_or(0.0);
            episode.returns[agent] += f64::from(reward);
            let mut events: Vec<_> = transition
                .events
                .iter()
                .filter(|e| e.agent == Some(agent))
                .cloned()
                .collect();
            if records.is_empty() {
                events.extend(agentless_events.by_ref().cloned());
            }
            let (kind, paradigm) = &self.agents[agent];
            let tally = &mut episode.results[agent];
            let (action, label, source, detail, micros, observation) = match acted[agent].take() {
                Some((decision, micros)) => {
                    tally.decisions += 1;
                    match decision.source {
                        DecisionSource::Policy => {}
                        DecisionSource::Timeout => tally.timeouts += 1,
                        DecisionSource::Error => tally.errors += 1,
                    }
                    let label = self.spec.action_label(decision.action);
                    // The status keeps its own copy; its buffer is reused step after step.
                    match &mut episode.last_actions[agent] {
                        Some(last) => label.clone_into(last),
                        last => *last = Some(label.to_owned()),
                    }
                    let observation = if self.config.record_observations {
                        before
                            .acting
                            .iter()
                            .position(|a| *a == agent)
                            .and_then(|i| before.observations[i].text.clone())
                    } else {
                        None
                    };
                    (
                        Some(decision.action.0),
                        Some(label.to_owned()),
                        Some(decision.source),
                        decision.detail,
                        micros,
                        observation,
                    )
                }
                None => {
                    episode.last_actions[agent] = None;
                    (None, None, None, None, 0, None)
                }
            };
            records.push(StepRecord {
                schema: STEP_SCHEMA.to_owned(),
                // Cloned, not formatted through `Display`.
                run_id: self.config.run_id.0.clone(),
                operator_id: self.config.operator_id.0.clone(),
                episode_id: episode.id.clone(),
                episode_index: episode.index,
                seed: episode.seed,
                step_index,
                agent_id: self.spec.agents[agent].id.clone(),
                paradigm: *paradigm,
                kind: kind.clone(),
                action,
                action_label: label,
                decision_source: source,
                reward,
                terminated: transition.terminated.get(agent).copied().unwrap_or(false),
                truncated: truncate || transition.truncated.get(agent).copied().unwrap_or(false),
                observation,
                events,
                decision: detail,
                decision_us: micros,
                timestamp,
            });
        }
        records
    }

    /// Hands a step's records to the publisher (sent in batches). Anything else sent to the
    /// subscribers that must follow the steps goes after `self.publisher.flush_steps()`.
    async fn emit_step(&self, records: Vec<StepRecord>) {
        self.publisher.push_step(records).await;
    }

    /// Ends the episode and waits until its subscribers have confirmed it (durable sinks:
    /// on disk). A subscriber that stopped instead is left to report its own failure.
    async fn finish(&self, episode: &Episode, error: Option<String>) {
        if let Err(e) = self.record_end(episode, error).await.durable().await {
            tracing::warn!(target: "mosaic::session", "{e}");
        }
    }

    /// Ends the episode: its roll-up goes to the subscribers after its last steps; the
    /// answer's [`Recorded::durable`] waits for their confirmation.
    async fn record_end(&self, episode: &Episode, error: Option<String>) -> Recorded {
        let summary = self.env().send(Summarise).await.ok();
        let (outcome, metrics) = summary.map(|s| (s.outcome, s.metrics)).unwrap_or_default();
        let duration = episode.started.elapsed();
        let agents = self
            .spec
            .agents
            .iter()
            .enumerate()
            .map(|(i, spec)| AgentResult {
                agent_id: spec.id.clone(),
                team: spec.team.clone(),
                paradigm: self.agents[i].1,
                kind: self.agents[i].0.clone(),
                total_reward: episode.returns[i],
                outcome: outcome.as_ref().and_then(|o| o.get(i).copied()),
                decisions: episode.results[i].decisions,
                timeouts: episode.results[i].timeouts,
                errors: episode.results[i].errors,
            })
            .collect();
        let record = Arc::new(EpisodeRecord {
            steps: episode.view.steps,
            terminated: episode.terminated,
            truncated: episode.truncated,
            agents,
            metrics,
            error,
            restarts: episode.restarts.clone(),
            duration_ms: duration.as_millis() as u64,
            steps_per_s: f64::from(episode.view.steps) / duration.as_secs_f64().max(1e-9),
            ..EpisodeRecord::new(
                &self.config.run_id,
                &self.config.operator_id,
                episode.index,
                episode.seed,
                self.spec.name.clone(),
            )
        });
        let durable = self.publisher.announce_episode(&record).await;
        Recorded::new(record, durable)
    }

    /// Ends an unfinished manual episode, recorded with `reason` as its error. One that took
    /// no step emitted nothing: it is dropped (`None`).
    async fn abandon(&self, mut episode: Episode, reason: &str) -> Option<Episode> {
        if !episode.done {
            if episode.view.steps == 0 {
                return None;
            }
            episode.done = true;
            self.finish(&episode, Some(reason.to_owned())).await;
        }
        Some(episode)
    }

    /// Runs a whole episode, from its start or, when `from` is given, from a checkpoint.
    /// Every failure, including one to start it, is recorded in its roll-up. Answers once
    /// the roll-up is sent, before the subscribers confirm it.
    async fn run_episode(
        &self,
        index: u32,
        seed: u64,
        from: Option<&ResumePoint>,
    ) -> Result<Recorded, SessionError> {
        let mut episode = self.new_episode(index, seed);
        let started = match from {
            Some(from) => self.resume(&mut episode, from).await,
            None => self.start(&mut episode).await,
        };
        if let Err(error) = started {
            episode.done = true;
            return Ok(self.record_end(&episode, Some(error.to_string())).await);
        }
        while !episode.done {
            if let Err(error) = self.step(&mut episode).await {
                episode.done = true;
                return Ok(self.record_end(&episode, Some(error.to_string())).await);
            }
            if !self.config.pace.is_zero() && !episode.done {
                tokio::time::sleep(self.config.pace).await;
            }
        }
        Ok(self.record_end(&episode, None).await)
    }

    /// Continues `episode` from a checkpoint written before the run's process stopped: the
    /// tallies rebuilt from the step records before it, the message channel and every
    /// operator restored, the environment restored from its snapshot (or reset and replayed
    /// through the recorded actions). Recorded as a restart of the child `run`.
    async fn resume(&self, episode: &mut Episode, from: &ResumePoint) -> Result<(), SessionError> {
        let detected = Instant::now();
        let timestamp = mosaic_core::record::now_ms();
        let checkpoint = &from.checkpoint;
        let step_index = checkpoint.step_index;
        episode.view.steps = step_index;
        episode.restarts = checkpoint.restarts.clone();
        // Tells the sinks that the steps before it are written already.
        self.publisher
            .publish_checkpoint(Arc::new(checkpoint.clone()))
            .await;
        let index = episode.index;
        let unfit = |what: String| {
            SessionError::Control(format!(
                "cannot resume episode {index} from its checkpoint at step {step_index}: {what}"
            ))
        };
        let agents = self.spec.agents.len();
        if checkpoint.operators.len() != agents {
            return Err(unfit(format!(
                "it holds {} operator states for {agents} agents",
                checkpoint.operators.len()
            )));
        }
        let actions = self.tally_records(episode, &from.records).map_err(unfit)?;
        let recovery = &mut episode.recovery;
        recovery.env = checkpoint
            .env
            .clone()
            .map(|snapshot| (step_index, snapshot));
        recovery.actions = if checkpoint.env.is_some() {
            Vec::new()
        } else {
            actions
        };
        recovery.states = checkpoint.operators.iter().cloned().map(Some).collect();
        let channel_gone = |e: MailboxError| unfit(format!("message channel gone: {e}"));
        self.channel.send(NewEpisode).await.map_err(channel_gone)?;
        self.channel
            .send(LoadChannel(checkpoint.channel.clone()))
            .await
            .map_err(channel_gone)?
            .map_err(|e| unfit(e.to_string()))?;
        // A child failing to come back is restarted (and the restart recorded) as when it
        // fails in a step, within the same limits.
        let env_how = match self.restore_env(&self.env(), episode).await {
            Ok(how) => how,
            Err(failure) => {
                self.restart(episode, Child::Env, failure).await?;
                "rebuilt by its restart".to_owned()
            }
        };
        for agent in 0..agents {
            let operator = self.operators()[agent].clone();
            if let Err(failure) = self.restore_operator(&operator, episode, agent).await {
                self.restart(episode, Child::Agent(agent), failure).await?;
            }
        }
        let view = self
            .env()
            .send(Observe {
                wants: self.wants.clone(),
            })
            .await
            .map_err(|e| unfit(e.to_string()))?;
        if view.steps != step_index {
            return Err(unfit(format!(
                "the environment came back at step {}",
                view.steps
            )));
        }
        episode.done = view.acting.is_empty();
        episode.view = view;
        episode.recovery.checkpointed = Some(Instant::now());
        episode.restarts.push(RestartRecord {
            child: "run".to_owned(),
            step_index,
            failure: "the run stopped before the episode ended".to_owned(),
            recovery: format!(
                "resumed from the checkpoint at step {step_index}: env {env_how}; every operator's state restored"
            ),
            recovered: true,
            diverged: None,
            recovery_ms: detected.elapsed().as_millis() as u64,
            timestamp,
        });
        Ok(())
    }

    /// Rebuilds the tallies of `episode` from its step records, all of steps before
    /// `episode.view.steps`. Answers the joint action of each of those steps.
    fn tally_records(
        &self,
        episode: &mut Episode,
        records: &[StepRecord],
    ) -> Result<Vec<Vec<Option<Action>>>, String> {
        let steps = episode.view.steps as usize;
        let mut actions = vec![vec![None; self.spec.agents.len()]; steps];
        for record in records {
            let agent = self.spec.agent_index(&record.agent_id).ok_or_else(|| {
                format!(
                    "`{}` is not an agent of {}",
                    record.agent_id, self.spec.name
                )
            })?;
            let step = record.step_index as usize;
            let joint = actions
                .get_mut(step)
                .ok_or_else(|| format!("a step record of step {step}"))?;
            joint[agent] = record.action.map(Action);
            episode.returns[agent] += f64::from(record.reward);
            if let Some(source) = record.decision_source {
                let tally = &mut episode.results[agent];
                tally.decisions += 1;
                match source {
                    DecisionSource::Policy => {}
                    DecisionSource::Timeout => tally.timeouts += 1,
                    DecisionSource::Error => tally.errors += 1,
                }
            }
            episode.alive[agent] &= !(record.terminated || record.truncated);
            episode.terminated |= record.terminated;
            episode.truncated |= record.truncated;
            if step + 1 == steps {
                episode.last_actions[agent] = record.action_label.clone();
            }
        }
        Ok(actions)
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
