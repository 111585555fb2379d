//! Fault recovery: restarting children, rebuilding their state, resuming a stopped run.

use super::*;

impl Handles {
    /// Restarts `failed` (and its siblings as the strategy says), rebuilds their state and
    /// records the restart. Answers which children were restarted; gives up with
    /// [`SessionError::Escalated`] past the restart limit.
    pub(super) async fn restart(
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
    pub(super) async fn rebuild_env(
        &self,
        episode: &Episode,
    ) -> Result<(String, Option<String>), String> {
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
    pub(super) async fn restore_env(
        &self,
        env: &Addr<EnvActor>,
        episode: &Episode,
    ) -> Result<String, String> {
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
    pub(super) async fn rebuild_operator(
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
    pub(super) async fn restore_operator(
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

    /// Continues `episode` from a checkpoint written before the run's process stopped: the
    /// tallies rebuilt from the step records before it, the message channel and every
    /// operator restored, the environment restored from its snapshot (or reset and replayed
    /// through the recorded actions). Recorded as a restart of the child `run`.
    pub(super) async fn resume(
        &self,
        episode: &mut Episode,
        from: &ResumePoint,
    ) -> Result<(), SessionError> {
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
    pub(super) fn tally_records(
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
