//! The lock-step session: one operator configuration (an environment and the operators of
//! its agent slots) running episodes.
//!
//! One step: the environment's observations go to every acting agent's operator at once
//! (`Decide`), the session joins the decisions (a late or failed one becomes the
//! environment's default action, recorded as such), steps the environment, and emits one
//! [`StepEvent`] to its subscribers. At the end of an episode it emits an [`EpisodeEvent`]
//! and waits until every subscriber has handled it (durable sinks answer only once the
//! episode's records are on disk). See `docs/semantics.md` for the guarantees.

use crate::channel::{Channel, ChannelConfig, NewEpisode};
use crate::env_actor::{EnvActor, EnvView, Reset, Step, Summarise};
use crate::operator::{OperatorHandle, OperatorRegistry, SessionResources, SpawnContext};
use crate::{BeginEpisode, Decide, EpisodeEvent, OperatorError, SessionError, StepEvent};
use actix::prelude::*;
use futures::future::join_all;
use mosaic_adapters::EnvRegistry;
use mosaic_core::record::{AgentResult, EPISODE_SCHEMA, EpisodeRecord, STEP_SCHEMA, StepRecord};
use mosaic_core::{
    Action, AgentContext, Decision, DecisionSource, EnvSpec, EpisodeId, ObsRequest, Observation,
    OperatorId, OperatorSpec, RunId, Transition,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// Step events a subscriber may have queued per session before the session waits for
    /// it (backpressure with pipelining).
    pub step_window: u32,
}

impl SessionConfig {
    /// Defaults for `operator_id` in `run_id`: no limits, a window of 64 steps.
    pub fn new(run_id: RunId, operator_id: OperatorId) -> Self {
        Self {
            run_id,
            operator_id,
            max_steps: None,
            decision_timeout: None,
            record_observations: false,
            pace: Duration::ZERO,
            step_window: 64,
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
}

impl std::fmt::Debug for Subscribers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscribers")
            .field("steps", &self.steps.len())
            .field("episodes", &self.episodes.len())
            .finish()
    }
}

/// Everything a step needs, shared by the session and its in-flight futures.
struct Handles {
    config: SessionConfig,
    spec: Arc<EnvSpec>,
    env: Addr<EnvActor>,
    channel: Addr<Channel>,
    operators: Vec<OperatorHandle>,
    wants: Arc<Vec<ObsRequest>>,
    subscribers: Subscribers,
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
    steps_since_sync: u32,
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

    async fn begin(&self, index: u32, seed: u64) -> Result<Episode, SessionError> {
        // Messages never cross episodes; the channel is cleared before anyone may post.
        self.channel
            .send(NewEpisode)
            .await
            .map_err(|e| SessionError::Control(format!("message channel gone: {e}")))?;
        let begins = self.operators.iter().enumerate().map(|(agent, op)| {
            let ctx = AgentContext::new(
                seed,
                agent,
                self.spec.agents[agent].id.clone(),
                self.spec.action_labels.len(),
            );
            op.begin.send(BeginEpisode {
                ctx,
                spec: self.spec.clone(),
            })
        });
        for (agent, result) in join_all(begins).await.into_iter().enumerate() {
            let failure = match result {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => e.to_string(),
                Err(e) => e.to_string(),
            };
            return Err(SessionError::Control(format!(
                "operator of {} could not start episode {index}: {failure}",
                self.spec.agents[agent].id
            )));
        }
        let view = self
            .env
            .send(Reset {
                seed,
                wants: self.wants.clone(),
            })
            .await
            .map_err(|e| self.env_error(e))?
            .map_err(|e| self.env_error(e))?;
        let agents = self.spec.agents.len();
        let done = view.acting.is_empty();
        Ok(Episode {
            index,
            seed,
            id: EpisodeId::new(&self.config.run_id, &self.config.operator_id, index).0,
            view,
            started: Instant::now(),
            returns: vec![0.0; agents],
            results: vec![AgentTally::default(); agents],
            alive: vec![true; agents],
            last_actions: vec![None; agents],
            terminated: done,
            truncated: false,
            done,
            steps_since_sync: 0,
        })
    }

    /// The action taken when an operator gives none: the default action if legal here,
    /// else the first legal action.
    fn fallback_action(&self, obs: &Observation) -> Action {
        obs.fallback(self.spec.default_action)
    }

    async fn decide(&self, episode: &Episode) -> Vec<(usize, Decision, u64)> {
        let deadline = self
            .config
            .decision_timeout
            .map(|t| tokio::time::Instant::now() + t);
        let step = episode.view.steps;
        let asks = episode
            .view
            .acting
            .iter()
            .zip(&episode.view.observations)
            .map(|(&agent, obs)| {
                let request = self.operators[agent].decide.send(Decide {
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
                        Some(Err(mailbox)) => Decision::fallback(
                            self.fallback_action(obs),
                            DecisionSource::Error,
                            OperatorError::Gone(mailbox.to_string()).to_string(),
                        ),
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
                    (agent, decision, started.elapsed().as_micros() as u64)
                }
            });
        join_all(asks).await
    }

    /// Takes one step of `episode`; emits its records. Returns the env error, if any, after
    /// which the episode is over.
    async fn step(&self, episode: &mut Episode) -> Result<(), SessionError> {
        let decisions = self.decide(episode).await;
        let agents = self.spec.agents.len();
        let mut actions: Vec<Option<Action>> = vec![None; agents];
        for (agent, decision, _) in &decisions {
            actions[*agent] = Some(decision.action);
        }
        let step_index = episode.view.steps;
        let mut view = self
            .env
            .send(Step {
                actions,
                wants: self.wants.clone(),
            })
            .await
            .map_err(|e| self.env_error(e))?
            .map_err(|e| self.env_error(e))?;
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
        self.emit_step(episode, records).await;
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
            let op = &self.operators[agent];
            let tally = &mut episode.results[agent];
            let (action, label, source, detail, micros, observation) = match acted[agent].take() {
                Some((decision, micros)) => {
                    tally.decisions += 1;
                    match decision.source {
                        DecisionSource::Policy => {}
                        DecisionSource::Timeout => tally.timeouts += 1,
                        DecisionSource::Error => tally.errors += 1,
                    }
                    let label = self.spec.action_label(decision.action).to_owned();
                    episode.last_actions[agent] = Some(label.clone());
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
                        Some(label),
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
                run_id: self.config.run_id.to_string(),
                operator_id: self.config.operator_id.to_string(),
                episode_id: episode.id.clone(),
                episode_index: episode.index,
                seed: episode.seed,
                step_index,
                agent_id: self.spec.agents[agent].id.clone(),
                paradigm: op.paradigm,
                kind: op.kind.clone(),
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

    async fn emit_step(&self, episode: &mut Episode, records: Vec<StepRecord>) {
        if self.subscribers.steps.is_empty() {
            return;
        }
        let event = StepEvent {
            records: Arc::new(records),
        };
        episode.steps_since_sync += 1;
        if episode.steps_since_sync < self.config.step_window {
            // `do_send` keeps the order of events; the periodic `send` below bounds how many
            // a subscriber can have queued (it is handled after all earlier ones).
            for subscriber in &self.subscribers.steps {
                subscriber.do_send(event.clone());
            }
        } else {
            episode.steps_since_sync = 0;
            join_all(self.subscribers.steps.iter().map(|s| s.send(event.clone()))).await;
        }
    }

    async fn finish(&self, episode: &Episode, error: Option<String>) -> Arc<EpisodeRecord> {
        let summary = self.env.send(Summarise).await.ok();
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
                paradigm: self.operators[i].paradigm,
                kind: self.operators[i].kind.clone(),
                total_reward: episode.returns[i],
                outcome: outcome.as_ref().and_then(|o| o.get(i).copied()),
                decisions: episode.results[i].decisions,
                timeouts: episode.results[i].timeouts,
                errors: episode.results[i].errors,
            })
            .collect();
        let record = Arc::new(EpisodeRecord {
            schema: EPISODE_SCHEMA.to_owned(),
            run_id: self.config.run_id.to_string(),
            operator_id: self.config.operator_id.to_string(),
            episode_id: episode.id.clone(),
            episode_index: episode.index,
            seed: episode.seed,
            env: self.spec.name.clone(),
            steps: episode.view.steps,
            terminated: episode.terminated,
            truncated: episode.truncated,
            agents,
            metrics,
            error,
            duration_ms: duration.as_millis() as u64,
            steps_per_s: f64::from(episode.view.steps) / duration.as_secs_f64().max(1e-9),
            timestamp: mosaic_core::record::now_ms(),
        });
        let event = EpisodeEvent {
            record: record.clone(),
        };
        join_all(
            self.subscribers
                .episodes
                .iter()
                .map(|s| s.send(event.clone())),
        )
        .await;
        record
    }

    async fn run_episode(&self, index: u32, seed: u64) -> Result<Arc<EpisodeRecord>, SessionError> {
        let mut episode = self.begin(index, seed).await?;
        while !episode.done {
            if let Err(error) = self.step(&mut episode).await {
                episode.done = true;
                return Ok(self.finish(&episode, Some(error.to_string())).await);
            }
            if !self.config.pace.is_zero() && !episode.done {
                tokio::time::sleep(self.config.pace).await;
            }
        }
        Ok(self.finish(&episode, None).await)
    }
}

/// Runs the episodes of one operator configuration. See the module docs.
pub struct Session {
    handles: Arc<Handles>,
    episode: Option<Episode>,
}

impl Session {
    /// Builds the environment and the operators of `operator` on the current arbiter.
    /// Errors name the offending field relative to the operator spec
    /// (e.g. `agents.green_0.kind`).
    pub fn build(
        config: SessionConfig,
        operator: &OperatorSpec,
        envs: &EnvRegistry,
        kinds: &OperatorRegistry,
        subscribers: Subscribers,
    ) -> Result<Self, mosaic_core::SpecError> {
        let env = envs.make(&operator.env, &operator.env_settings)?;
        let spec = Arc::new(env.spec().clone());
        let scripted = envs.get(&operator.env).and_then(|k| k.scripted);
        for slot in operator.agents.keys() {
            if slot != mosaic_core::experiment::DEFAULT_SLOT && spec.agent_index(slot).is_none() {
                let known: Vec<_> = spec.agents.iter().map(|a| a.id.as_str()).collect();
                return Err(mosaic_core::SpecError::new(
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
        let resources = SessionResources {
            channel: Some(channel.clone()),
        };
        let mut operators = Vec::with_capacity(spec.agents.len());
        for (agent, agent_spec) in spec.agents.iter().enumerate() {
            let key = if operator.agents.contains_key(&agent_spec.id) {
                agent_spec.id.as_str()
            } else {
                mosaic_core::experiment::DEFAULT_SLOT
            };
            let slot = operator.agents.get(key).ok_or_else(|| {
                mosaic_core::SpecError::new(
                    "agents",
                    format!(
                        "no operator for agent `{}` (name it, or add a `\"*\"` slot)",
                        agent_spec.id
                    ),
                )
            })?;
            let cx = SpawnContext {
                env_name: &operator.env,
                env_settings: &operator.env_settings,
                spec: &spec,
                agent,
                slot,
                scripted,
                session: &resources,
            };
            let handle = kinds.spawn(&cx).map_err(|e| {
                let path = if e.path.is_empty() {
                    format!("agents.{key}")
                } else {
                    format!("agents.{key}.{}", e.path)
                };
                mosaic_core::SpecError::new(path, e.message)
            })?;
            operators.push(handle);
        }
        let mut wants: Vec<ObsRequest> = operators.iter().map(|o| o.wants).collect();
        if config.record_observations {
            for want in &mut wants {
                want.text = true;
            }
        }
        let env = EnvActor::new(env).start();
        Ok(Self {
            handles: Arc::new(Handles {
                config,
                spec,
                env,
                channel,
                operators,
                wants: Arc::new(wants),
                subscribers,
            }),
            episode: None,
        })
    }

    /// The environment's spec.
    pub fn spec(&self) -> &Arc<EnvSpec> {
        &self.handles.spec
    }

    /// The paradigm and kind of each agent's operator, in agent order.
    pub fn operators(&self) -> &[OperatorHandle] {
        &self.handles.operators
    }

    /// The environment actor (for rendering).
    pub fn env(&self) -> Addr<EnvActor> {
        self.handles.env.clone()
    }
}

impl Actor for Session {
    type Context = Context<Self>;
}

/// Runs one whole episode (script mode) and answers with its roll-up. An environment
/// failure ends the episode with its error recorded in the roll-up.
#[derive(Debug, Message)]
#[rtype(result = "Result<Arc<EpisodeRecord>, SessionError>")]
pub struct RunEpisode {
    /// Episode index within the operator.
    pub index: u32,
    /// Episode seed.
    pub seed: u64,
}

/// Starts episode `index` with `seed` for manual stepping (Reset All), abandoning any
/// unfinished one.
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

/// The session's status (`None` before the first manual episode).
#[derive(Debug, Message)]
#[rtype(result = "Option<SessionStatus>")]
pub struct GetStatus;

impl Handler<RunEpisode> for Session {
    type Result = AtomicResponse<Self, Result<Arc<EpisodeRecord>, SessionError>>;

    fn handle(&mut self, msg: RunEpisode, _: &mut Context<Self>) -> Self::Result {
        let handles = self.handles.clone();
        AtomicResponse::new(Box::pin(
            async move { handles.run_episode(msg.index, msg.seed).await }.into_actor(self),
        ))
    }
}

impl Handler<BeginManual> for Session {
    type Result = AtomicResponse<Self, Result<SessionStatus, SessionError>>;

    fn handle(&mut self, msg: BeginManual, _: &mut Context<Self>) -> Self::Result {
        let handles = self.handles.clone();
        self.episode = None;
        AtomicResponse::new(Box::pin(
            async move { handles.begin(msg.index, msg.seed).await }
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

impl Handler<GetStatus> for Session {
    type Result = Option<SessionStatus>;

    fn handle(&mut self, _: GetStatus, _: &mut Context<Self>) -> Self::Result {
        self.episode
            .as_ref()
            .map(|e| e.status(&self.handles.config.operator_id))
    }
}
