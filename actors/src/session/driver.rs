//! The driver of a session's episodes: start, decisions, checkpoints, steps and the
//! roll-up. Recovery (restarts, resume) is in `recovery`.

use super::children::{Child, Children};
use super::episode::{Cast, Episode};
use super::{ResumePoint, SessionError};
use crate::channel::{Channel, NewEpisode, SaveChannel};
use crate::env_actor::{EnvActor, EnvView, Reset, Step, Summarise, TakeSnapshot};
use crate::publish::{Publisher, Recorded};
use crate::{BeginEpisode, ChildFailure, Decide, DeciderError, SaveState};
use actix::prelude::*;
use futures::future::join_all;
use mosaic_core::record::{CHECKPOINT_SCHEMA, EpisodeCheckpoint};
use mosaic_core::{
    Action, AgentContext, Decision, DecisionSource, EnvError, ObsRequest, Observation,
};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Everything a session's episodes need: who takes part, the children, the message
/// channel and the publisher. The session lends it to one request at a time.
pub(super) struct Driver {
    pub(super) cast: Cast,
    pub(super) children: Children,
    pub(super) channel: Addr<Channel>,
    pub(super) wants: Arc<Vec<ObsRequest>>,
    /// Sends step records (batched) and roll-ups to the subscribers.
    pub(super) publisher: Rc<Publisher>,
}

/// An operator's answer to one decision: the decision and how long it took (µs), or the
/// failure that needs its restart.
type Answer = Result<(Decision, u64), DeciderError>;

impl Driver {
    pub(super) fn child_name(&self, child: Child) -> &str {
        match child {
            Child::Env => "env",
            Child::Agent(agent) => &self.cast.spec.agents[agent].id,
        }
    }

    pub(super) fn agent_context(&self, seed: u64, agent: usize) -> AgentContext {
        let spec = &self.cast.spec;
        AgentContext::new(
            seed,
            agent,
            spec.agents[agent].id.clone(),
            spec.action_labels.len(),
        )
    }

    pub(super) fn new_episode(&self, index: u32, seed: u64) -> Episode {
        Episode::new(&self.cast, index, seed)
    }

    /// A started episode (see [`Driver::start`]).
    pub(super) async fn begin(&mut self, index: u32, seed: u64) -> Result<Episode, SessionError> {
        let mut episode = self.new_episode(index, seed);
        self.start(&mut episode).await?;
        Ok(episode)
    }

    /// Starts every operator's episode and resets the environment, restarting children
    /// that are down (all of them, with fresh restart windows, after an escalation).
    async fn start(&mut self, episode: &mut Episode) -> Result<(), SessionError> {
        self.children
            .renew_after_escalation()
            .map_err(SessionError::Renew)?;
        // Messages never cross episodes; the channel is cleared before anyone may post.
        self.channel
            .send(NewEpisode)
            .await
            .map_err(SessionError::ChannelGone)?;
        let operators = self.children.operators.clone();
        let begins = operators.iter().enumerate().map(|(agent, op)| {
            op.begin.send(BeginEpisode {
                ctx: self.agent_context(episode.seed, agent),
                spec: self.cast.spec.clone(),
            })
        });
        let answers = join_all(begins).await;
        for (agent, answer) in answers.into_iter().enumerate() {
            let failure = match answer {
                Ok(Ok(())) => continue,
                Err(mailbox) => DeciderError::Gone(mailbox.to_string()),
                Ok(Err(e)) => e,
            };
            if !failure.needs_restart() {
                return Err(SessionError::EpisodeStart {
                    agent: self.cast.spec.agents[agent].id.clone(),
                    episode: episode.index,
                    source: failure,
                });
            }
            // A fresh operator begins the episode as part of its restart.
            self.restart(episode, Child::Agent(agent), failure.into())
                .await?;
        }
        let (seed, wants) = (episode.seed, self.wants.clone());
        let view = self
            .ask_env(episode, || Reset {
                seed,
                wants: wants.clone(),
            })
            .await?;
        episode.reset(view);
        Ok(())
    }

    /// Sends the environment the message `make` builds, restarting the environment (and
    /// rebuilding its state) while it crashes; other errors end the episode.
    async fn ask_env<M>(
        &mut self,
        episode: &mut Episode,
        make: impl Fn() -> M,
    ) -> Result<EnvView, SessionError>
    where
        M: Message<Result = Result<EnvView, EnvError>> + Send + 'static,
        EnvActor: Handler<M>,
    {
        loop {
            let failure = match self.children.env.send(make()).await {
                Ok(Ok(view)) => return Ok(view),
                Ok(Err(EnvError::Crashed(failure))) => ChildFailure::EnvCrashed(failure),
                Err(mailbox) => mailbox.into(),
                Ok(Err(source)) => {
                    return Err(SessionError::Env {
                        env: self.cast.spec.name.clone(),
                        source,
                    });
                }
            };
            self.restart(episode, Child::Env, failure).await?;
        }
    }

    /// The action taken when an operator gives none: the default action if legal here,
    /// else the first legal action.
    fn fallback_action(&self, obs: &Observation) -> Action {
        obs.fallback(self.cast.spec.default_action)
    }

    /// Asks the acting agents in `agents` (indices into `episode.view.acting`) for their
    /// decisions. A late or failed answer becomes the fallback action; an operator that
    /// must be restarted answers `Err` with the failure.
    async fn decide(&self, episode: &Episode, agents: &[usize]) -> Vec<(usize, Answer)> {
        let deadline = self
            .cast
            .config
            .decision_timeout
            .map(|t| tokio::time::Instant::now() + t);
        let step = episode.view.steps;
        let operators = &self.children.operators;
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
                        return (slot, Err(DeciderError::Gone(mailbox.to_string())));
                    }
                    Some(Ok(Err(failure))) if failure.needs_restart() => {
                        return (slot, Err(failure));
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
                                self.cast.spec.action_label(decision.action)
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
        &mut self,
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
                let restarted = self
                    .restart(episode, Child::Agent(agent), failure.into())
                    .await?;
                // A restarted decider is back to its state before this step: ask it again
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
    async fn checkpoint(&mut self, episode: &mut Episode) {
        let interval = Duration::from_millis(self.cast.config.supervision.checkpoint_interval_ms);
        if !episode.journal.checkpoint_due(interval) {
            return;
        }
        episode.journal.mark_checkpoint();
        let step = episode.view.steps;
        if self.children.env_snapshots {
            match self.children.env.send(TakeSnapshot).await {
                Ok(Some(snapshot)) => episode.journal.env_saved(step, snapshot),
                // The environment cannot save its state: recovery replays from the reset.
                Ok(None) => self.children.env_snapshots = false,
                Err(_) => {}
            }
        }
        let operators = self.children.operators.clone();
        let wanted: Vec<usize> = (0..operators.len())
            .filter(|&agent| self.children.decider_states[agent])
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
                Some(Ok(Some(state))) => episode.journal.decider_saved(agent, state),
                Some(Ok(None)) => self.children.decider_states[agent] = false,
                // A failing checkpoint leaves the last one in place; the failure itself
                // surfaces at the next decision.
                Some(Err(e)) => {
                    tracing::warn!(target: "mosaic::session", agent = %self.cast.spec.agents[agent].id, "checkpoint failed: {e}");
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
        if !self.publisher.wants_checkpoints() || !episode.journal.complete() {
            return;
        }
        let Ok(channel) = self.channel.send(SaveChannel).await else {
            return;
        };
        let step_index = episode.view.steps;
        let config = &self.cast.config;
        self.publisher
            .publish_checkpoint(Arc::new(EpisodeCheckpoint {
                schema: CHECKPOINT_SCHEMA.to_owned(),
                run_id: config.run_id.to_string(),
                operator_id: config.operator_id.to_string(),
                episode_index: episode.index,
                step_index,
                env: episode.journal.env_at(step_index),
                operators: episode.journal.states.iter().flatten().cloned().collect(),
                channel,
                restarts: episode.restarts.clone(),
            }))
            .await;
    }

    /// Takes one step of `episode`; emits its records. Returns the env error, if any, after
    /// which the episode is over.
    pub(super) async fn step(&mut self, episode: &mut Episode) -> Result<(), SessionError> {
        self.checkpoint(episode).await;
        let decisions = self.decide_all(episode).await?;
        let mut actions: Vec<Option<Action>> = vec![None; self.cast.spec.agents.len()];
        let step_index = episode.view.steps;
        for ((agent, decision, _), obs) in decisions.iter().zip(&episode.view.observations) {
            actions[*agent] = Some(decision.action);
            episode.journal.asked[*agent].push(super::journal::Asked {
                step: step_index,
                obs: obs.clone(),
                action: decision.action,
                source: decision.source,
            });
        }
        let wants = self.wants.clone();
        let view = self
            .ask_env(episode, || Step {
                actions: actions.clone(),
                wants: wants.clone(),
            })
            .await?;
        episode.journal.actions.push(actions);
        let records = episode.take_step(&self.cast, view, decisions);
        self.publisher.push_step(records).await;
        Ok(())
    }

    /// Ends the episode and waits until its subscribers have confirmed it (durable sinks:
    /// on disk). A subscriber that stopped instead is left to report its own failure.
    pub(super) async fn finish(&self, episode: &Episode, error: Option<String>) {
        if let Err(e) = self.record_end(episode, error).await.durable().await {
            tracing::warn!(target: "mosaic::session", "{e}");
        }
    }

    /// Ends the episode: its roll-up goes to the subscribers after its last steps; the
    /// answer's [`Recorded::durable`] waits for their confirmation.
    async fn record_end(&self, episode: &Episode, error: Option<String>) -> Recorded {
        let summary = self.children.env.send(Summarise).await.ok();
        let record = Arc::new(episode.roll_up(&self.cast, summary, error));
        let durable = self.publisher.announce_episode(&record).await;
        Recorded::new(record, durable)
    }

    /// Ends an unfinished manual episode, recorded with `reason` as its error. One that took
    /// no step emitted nothing: it is dropped (`None`).
    pub(super) async fn abandon(&self, mut episode: Episode, reason: &str) -> Option<Episode> {
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
    pub(super) async fn run_episode(
        &mut self,
        index: u32,
        seed: u64,
        from: Option<&ResumePoint>,
    ) -> Recorded {
        let mut episode = self.new_episode(index, seed);
        let started = match from {
            Some(from) => self.resume(&mut episode, from).await,
            None => self.start(&mut episode).await,
        };
        if let Err(error) = started {
            episode.done = true;
            return self.record_end(&episode, Some(error.to_string())).await;
        }
        while !episode.done {
            if let Err(error) = self.step(&mut episode).await {
                episode.done = true;
                return self.record_end(&episode, Some(error.to_string())).await;
            }
            let pace = self.cast.config.pace;
            if !pace.is_zero() && !episode.done {
                tokio::time::sleep(pace).await;
            }
        }
        self.record_end(&episode, None).await
    }
}
