//! Fault recovery: restarting children, rebuilding their state from the episode's journal,
//! resuming an episode whose run stopped.

use super::ResumePoint;
use super::children::{Child, LimitReached};
use super::driver::Driver;
use super::episode::Episode;
use crate::channel::{LoadChannel, NewEpisode};
use crate::decider::DeciderHandle;
use crate::env_actor::{EnvActor, Observe, Reset, RestoreSnapshot, Step};
use crate::{
    BeginEpisode, ChildFailure, Decide, DeciderError, LoadState, ResumeError, SessionError,
};
use actix::prelude::*;
use mosaic_core::record::RestartRecord;
use mosaic_core::{DecisionSource, ObsRequest};
use std::sync::Arc;
use std::time::Instant;

/// How a child was brought back, and where its replay diverged from the first run, if it
/// did.
type Rebuilt = (String, Option<String>);

impl Driver {
    /// Restarts `failed` (and its siblings as the strategy says), rebuilds their state and
    /// records the restart. Answers which children were restarted; gives up with
    /// [`SessionError::Escalated`] past the restart limit.
    pub(super) async fn restart(
        &mut self,
        episode: &mut Episode,
        failed: Child,
        failure: ChildFailure,
    ) -> Result<Vec<Child>, SessionError> {
        let detected = Instant::now();
        let timestamp = mosaic_core::record::now_ms();
        let set = self.children.restart_set(failed);
        tracing::warn!(target: "mosaic::session", operator = %self.cast.config.operator_id, episode = episode.index, child = self.child_name(failed), "{failure}");
        let failure_text = failure.to_string();
        let mut recovery = Vec::new();
        let mut diverged = None;
        let mut last_failure = failure;
        for &child in &set {
            loop {
                if let Err(LimitReached(intensity)) = self.children.allow_restart(child) {
                    episode.restarts.push(RestartRecord {
                        child: self.child_name(failed).to_owned(),
                        step_index: episode.view.steps,
                        failure: failure_text,
                        recovery: String::new(),
                        recovered: false,
                        diverged: None,
                        recovery_ms: detected.elapsed().as_millis() as u64,
                        timestamp,
                    });
                    return Err(SessionError::Escalated {
                        child: self.child_name(child).to_owned(),
                        max_restarts: intensity.max_restarts,
                        period_ms: intensity.period.as_millis() as u64,
                        last: Box::new(last_failure),
                    });
                }
                let rebuilt = match child {
                    Child::Env => self.rebuild_env(episode).await,
                    Child::Agent(agent) => self.rebuild_decider(episode, agent).await,
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
            failure: failure_text,
            recovery: recovery.join("; "),
            recovered: true,
            diverged,
            recovery_ms: detected.elapsed().as_millis() as u64,
            timestamp,
        });
        Ok(set)
    }

    /// A new environment brought to the episode's current step ([`Driver::restore_env`]).
    async fn rebuild_env(&mut self, episode: &Episode) -> Result<Rebuilt, ChildFailure> {
        let addr = self.children.new_env()?;
        if episode.view.observations.is_empty() && episode.view.steps == 0 {
            // Not reset yet: the episode's reset follows.
            self.children.env = addr;
            return Ok(("restarted before the reset".to_owned(), None));
        }
        let how = self.restore_env(&addr, episode).await?;
        let view = addr
            .send(Observe {
                wants: Arc::new(vec![ObsRequest::MASK_ONLY; self.cast.spec.agents.len()]),
            })
            .await?;
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
        self.children.env = addr;
        Ok((how, diverged))
    }

    /// Brings the environment `env` to the episode's current step: restored from the last
    /// snapshot (or reset from the seed), then the actions since replayed. Answers how.
    async fn restore_env(
        &self,
        env: &Addr<EnvActor>,
        episode: &Episode,
    ) -> Result<String, ChildFailure> {
        let masks = Arc::new(vec![ObsRequest::MASK_ONLY; self.cast.spec.agents.len()]);
        let journal = &episode.journal;
        let started_from = match &journal.env {
            Some((step, snapshot)) => {
                env.send(RestoreSnapshot(snapshot.clone())).await??;
                format!("snapshot at step {step}")
            }
            None => {
                env.send(Reset {
                    seed: episode.seed,
                    wants: masks.clone(),
                })
                .await??;
                "reset from the seed".to_owned()
            }
        };
        for actions in &journal.actions {
            env.send(Step {
                actions: actions.clone(),
                wants: masks.clone(),
            })
            .await??;
        }
        Ok(format!(
            "{started_from}, replayed {} steps",
            journal.actions.len()
        ))
    }

    /// A new operator for `agent` brought to its state before the current step
    /// ([`Driver::restore_decider`]).
    async fn rebuild_decider(
        &mut self,
        episode: &Episode,
        agent: usize,
    ) -> Result<Rebuilt, ChildFailure> {
        let handle = self.children.new_decider(agent)?;
        let rebuilt = self.restore_decider(&handle, episode, agent).await?;
        self.children.replace_decider(agent, handle);
        Ok(rebuilt)
    }

    /// Brings the operator `handle` of `agent` to its state before the current step: the
    /// episode begun, the last checkpointed state loaded, the decisions since replayed.
    async fn restore_decider(
        &self,
        handle: &DeciderHandle,
        episode: &Episode,
        agent: usize,
    ) -> Result<Rebuilt, ChildFailure> {
        let gone = |e: MailboxError| DeciderError::Gone(e.to_string());
        let spec = &self.cast.spec;
        handle
            .begin
            .send(BeginEpisode {
                ctx: self.agent_context(episode.seed, agent),
                spec: spec.clone(),
            })
            .await
            .map_err(gone)??;
        let mut how = "episode begun".to_owned();
        if let Some(state) = &episode.journal.states[agent] {
            let load = handle.state.as_ref().ok_or(ChildFailure::NoStateLoader)?;
            load.load
                .send(LoadState(state.clone()))
                .await
                .map_err(gone)??;
            how = "checkpoint restored".to_owned();
        }
        let mut diverged = None;
        let asked = &episode.journal.asked[agent];
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
                Err(e) if e.needs_restart() => return Err(e.into()),
                Err(_) => None,
            };
            if question.source == DecisionSource::Policy
                && answered != Some(question.action)
                && diverged.is_none()
            {
                diverged = Some(format!(
                    "{}'s replayed decision at step {} was {} instead of {}",
                    spec.agents[agent].id,
                    question.step,
                    answered.map_or("an error".to_owned(), |a| spec.action_label(a).to_owned()),
                    spec.action_label(question.action)
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
        &mut self,
        episode: &mut Episode,
        from: &ResumePoint,
    ) -> Result<(), SessionError> {
        self.children
            .renew_after_escalation()
            .map_err(SessionError::Renew)?;
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
        let unfit = |source: ResumeError| SessionError::Resume {
            episode: index,
            step: step_index,
            source,
        };
        let agents = self.cast.spec.agents.len();
        if checkpoint.operators.len() != agents {
            return Err(unfit(ResumeError::DeciderStates {
                held: checkpoint.operators.len(),
                agents,
            }));
        }
        let actions = episode
            .replay_records(&self.cast.spec, &from.records)
            .map_err(unfit)?;
        let journal = &mut episode.journal;
        journal.env = checkpoint
            .env
            .clone()
            .map(|snapshot| (step_index, snapshot));
        journal.actions = if checkpoint.env.is_some() {
            Vec::new()
        } else {
            actions
        };
        journal.states = checkpoint.operators.iter().cloned().map(Some).collect();
        let channel_gone = |e: MailboxError| unfit(ResumeError::ChannelGone(e));
        self.channel.send(NewEpisode).await.map_err(channel_gone)?;
        self.channel
            .send(LoadChannel(checkpoint.channel.clone()))
            .await
            .map_err(channel_gone)?
            .map_err(|e| unfit(e.into()))?;
        // A child failing to come back is restarted (and the restart recorded) as when it
        // fails in a step, within the same limits.
        let env = self.children.env.clone();
        let env_how = match self.restore_env(&env, episode).await {
            Ok(how) => how,
            Err(failure) => {
                self.restart(episode, Child::Env, failure).await?;
                "rebuilt by its restart".to_owned()
            }
        };
        for agent in 0..agents {
            let operator = self.children.operators[agent].clone();
            if let Err(failure) = self.restore_decider(&operator, episode, agent).await {
                self.restart(episode, Child::Agent(agent), failure).await?;
            }
        }
        let view = self
            .children
            .env
            .send(Observe {
                wants: self.wants.clone(),
            })
            .await
            .map_err(|e| unfit(ResumeError::EnvGone(e)))?;
        if view.steps != step_index {
            return Err(unfit(ResumeError::EnvAtStep(view.steps)));
        }
        episode.done = view.acting.is_empty();
        episode.view = view;
        episode.journal.mark_checkpoint();
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
}
