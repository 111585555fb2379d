//! Stepping an episode: start, decisions, checkpoints, records and the roll-up.

use super::*;

impl Handles {
    pub(super) fn env_error(&self, message: impl std::fmt::Display) -> SessionError {
        SessionError::Env {
            env: self.spec.name.clone(),
            message: message.to_string(),
        }
    }

    pub(super) fn env(&self) -> Addr<EnvActor> {
        self.children.borrow().env.clone()
    }

    pub(super) fn operators(&self) -> Rc<Vec<OperatorHandle>> {
        self.children.borrow().operators.clone()
    }

    pub(super) fn child_name(&self, child: Child) -> &str {
        match child {
            Child::Env => "env",
            Child::Agent(agent) => &self.spec.agents[agent].id,
        }
    }

    pub(super) fn agent_context(&self, seed: u64, agent: usize) -> AgentContext {
        AgentContext::new(
            seed,
            agent,
            self.spec.agents[agent].id.clone(),
            self.spec.action_labels.len(),
        )
    }

    /// An episode that has not started yet (its reset is [`Handles::start`]).
    pub(super) fn new_episode(&self, index: u32, seed: u64) -> Episode {
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

    pub(super) async fn begin(&self, index: u32, seed: u64) -> Result<Episode, SessionError> {
        let mut episode = self.new_episode(index, seed);
        self.start(&mut episode).await?;
        Ok(episode)
    }

    /// Starts every operator's episode and resets the environment, restarting children
    /// that are down.
    pub(super) async fn start(&self, episode: &mut Episode) -> Result<(), SessionError> {
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
    pub(super) async fn ask_env<M>(
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
    pub(super) fn fallback_action(&self, obs: &Observation) -> Action {
        obs.fallback(self.spec.default_action)
    }

    /// Asks the acting agents in `agents` (indices into `episode.view.acting`) for their
    /// decisions. A late or failed answer becomes the fallback action; an operator that
    /// must be restarted answers `Err` with the failure.
    pub(super) async fn decide(
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
    pub(super) async fn decide_all(
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
    pub(super) async fn checkpoint(&self, episode: &mut Episode) {
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
    pub(super) async fn persist_checkpoint(&self, episode: &Episode) {
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

    /// Takes one step of `episode`; emits its records. Returns the env error, if any, after
    /// which the episode is over.
    pub(super) async fn step(&self, episode: &mut Episode) -> Result<(), SessionError> {
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

    pub(super) fn records(
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
    pub(super) async fn emit_step(&self, records: Vec<StepRecord>) {
        self.publisher.push_step(records).await;
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
    pub(super) async fn record_end(&self, episode: &Episode, error: Option<String>) -> Recorded {
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
}
