//! One episode's state: where the environment is, the agents' returns and tallies, its
//! journal and restarts; the step records and the roll-up are built here.

use super::journal::Journal;
use super::{SessionConfig, SessionStatus};
use crate::ResumeError;
use crate::env_actor::{EnvView, EpisodeSummary};
use mosaic_core::record::{AgentResult, EpisodeRecord, RestartRecord, STEP_SCHEMA, StepRecord};
use mosaic_core::{
    Action, Decision, DecisionSource, EnvSpec, EpisodeId, Event, Paradigm, REQUESTED_ACTION,
    Transition,
};
use std::sync::Arc;
use std::time::Instant;

/// Who takes part in a session's episodes, as its records name them.
pub(super) struct Cast {
    pub(super) config: SessionConfig,
    pub(super) spec: Arc<EnvSpec>,
    /// Kind and paradigm of each agent's decider as first started (records keep them
    /// across restarts).
    pub(super) operators: Vec<(String, Paradigm)>,
}

/// One running episode.
pub(super) struct Episode {
    pub(super) index: u32,
    pub(super) seed: u64,
    id: String,
    pub(super) view: EnvView,
    started: Instant,
    returns: Vec<f64>,
    tallies: Vec<AgentTally>,
    alive: Vec<bool>,
    last_actions: Vec<Option<String>>,
    terminated: bool,
    truncated: bool,
    pub(super) done: bool,
    pub(super) journal: Journal,
    pub(super) restarts: Vec<RestartRecord>,
}

/// Decisions of one agent in an episode, by where they came from.
#[derive(Clone, Copy, Default)]
struct AgentTally {
    decisions: u32,
    timeouts: u32,
    errors: u32,
}

impl AgentTally {
    fn count(&mut self, source: DecisionSource) {
        self.decisions += 1;
        match source {
            DecisionSource::Policy => {}
            DecisionSource::Timeout => self.timeouts += 1,
            DecisionSource::Error => self.errors += 1,
            DecisionSource::Environment => {}
        }
    }
}

impl Episode {
    /// An episode that has not started yet (no reset).
    pub(super) fn new(cast: &Cast, index: u32, seed: u64) -> Self {
        let agents = cast.spec.agents.len();
        Self {
            index,
            seed,
            id: EpisodeId::new(&cast.config.run_id, &cast.config.operator_id, index).0,
            view: EnvView {
                steps: 0,
                acting: Vec::new(),
                observations: Vec::new(),
                transition: None,
            },
            started: Instant::now(),
            returns: vec![0.0; agents],
            tallies: vec![AgentTally::default(); agents],
            alive: vec![true; agents],
            last_actions: vec![None; agents],
            terminated: false,
            truncated: false,
            done: false,
            journal: Journal::new(agents),
            restarts: Vec::new(),
        }
    }

    /// The environment's first view of the episode (after its reset).
    pub(super) fn reset(&mut self, view: EnvView) {
        self.done = view.acting.is_empty();
        self.terminated = self.done;
        self.view = view;
        self.journal.mark_checkpoint();
    }

    /// The public state of the episode.
    pub(super) fn status(&self, cast: &Cast) -> SessionStatus {
        SessionStatus {
            operator_id: cast.config.operator_id.to_string(),
            episode_index: self.index,
            seed: self.seed,
            steps: self.view.steps,
            done: self.done,
            returns: self.returns.clone(),
            last_actions: self.last_actions.clone(),
            acting: self.view.acting.clone(),
        }
    }

    /// Moves the episode past its current step to `view` (the environment after it):
    /// counts the decisions and rewards, decides whether the episode is over and answers
    /// the step's records (one per agent still in the episode).
    pub(super) fn take_step(
        &mut self,
        cast: &Cast,
        mut view: EnvView,
        decisions: Vec<(usize, Decision, u64)>,
    ) -> Vec<StepRecord> {
        let agents = cast.spec.agents.len();
        let transition = view
            .transition
            .take()
            .unwrap_or_else(|| Transition::new(agents));
        let before = std::mem::replace(&mut self.view, view);
        let over = self.view.acting.is_empty() || transition.all_done();
        let truncate = !over
            && cast
                .config
                .max_steps
                .is_some_and(|limit| self.view.steps >= limit);
        let records = self.records(cast, &before, decisions, &transition, truncate);
        for (agent, alive) in self.alive.iter_mut().enumerate() {
            let ended = transition.terminated.get(agent).copied().unwrap_or(false)
                || transition.truncated.get(agent).copied().unwrap_or(false);
            *alive &= !ended;
        }
        self.terminated |= transition.terminated.iter().any(|t| *t);
        self.truncated |= truncate || transition.truncated.iter().any(|t| *t);
        self.done = over || truncate || !self.alive.iter().any(|a| *a);
        records
    }

    fn records(
        &mut self,
        cast: &Cast,
        before: &EnvView,
        decisions: Vec<(usize, Decision, u64)>,
        transition: &Transition,
        truncate: bool,
    ) -> Vec<StepRecord> {
        let agents = cast.spec.agents.len();
        let mut acted: Vec<Option<(Decision, u64)>> = vec![None; agents];
        for (agent, decision, micros) in decisions {
            acted[agent] = Some((decision, micros));
        }
        let timestamp = mosaic_core::record::now_ms();
        let mut records = Vec::with_capacity(agents);
        let mut agentless_events = transition.events.iter().filter(|e| e.agent.is_none());
        for agent in (0..agents).filter(|a| self.alive[*a]) {
            let reward = transition.rewards.get(agent).copied().unwrap_or(0.0);
            self.returns[agent] += f64::from(reward);
            let mut events: Vec<_> = transition
                .events
                .iter()
                .filter(|e| e.agent == Some(agent))
                .cloned()
                .collect();
            if records.is_empty() {
                events.extend(agentless_events.by_ref().cloned());
            }
            let (kind, paradigm) = &cast.operators[agent];
            let (action, label, source, detail, micros, observation) = match acted[agent].take() {
                Some((mut decision, micros)) => {
                    self.tallies[agent].count(decision.source);
                    if let Some(executed) = transition.executed.get(agent).copied().flatten()
                        && executed != decision.action
                    {
                        // The environment decided for itself: the record holds what it did,
                        // the operator's request becomes an event.
                        events.push(Event {
                            kind: REQUESTED_ACTION.to_owned(),
                            agent: Some(agent),
                            detail: Some(serde_json::json!({
                                "action": decision.action.0,
                                "action_label": cast.spec.action_label(decision.action),
                                "source": decision.source,
                            })),
                        });
                        decision.action = executed;
                        decision.source = DecisionSource::Environment;
                    }
                    let label = cast.spec.action_label(decision.action);
                    // The status keeps its own copy; its buffer is reused step after step.
                    match &mut self.last_actions[agent] {
                        Some(last) => label.clone_into(last),
                        last => *last = Some(label.to_owned()),
                    }
                    let observation = if cast.config.record_observations {
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
                    self.last_actions[agent] = None;
                    (None, None, None, None, 0, None)
                }
            };
            records.push(StepRecord {
                schema: STEP_SCHEMA.to_owned(),
                // Cloned, not formatted through `Display`.
                run_id: cast.config.run_id.0.clone(),
                operator_id: cast.config.operator_id.0.clone(),
                episode_id: self.id.clone(),
                episode_index: self.index,
                seed: self.seed,
                step_index: before.steps,
                agent_id: cast.spec.agents[agent].id.clone(),
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

    /// Rebuilds the returns and tallies from the episode's step records, all of steps
    /// before `self.view.steps`. Answers the joint action of each of those steps.
    pub(super) fn replay_records(
        &mut self,
        spec: &EnvSpec,
        records: &[StepRecord],
    ) -> Result<Vec<Vec<Option<Action>>>, ResumeError> {
        let steps = self.view.steps as usize;
        let mut actions = vec![vec![None; spec.agents.len()]; steps];
        for record in records {
            let agent =
                spec.agent_index(&record.agent_id)
                    .ok_or_else(|| ResumeError::UnknownAgent {
                        agent: record.agent_id.clone(),
                        env: spec.name.clone(),
                    })?;
            let step = record.step_index as usize;
            let joint = actions
                .get_mut(step)
                .ok_or(ResumeError::StepAfterCheckpoint(step))?;
            joint[agent] = record.action.map(Action);
            self.returns[agent] += f64::from(record.reward);
            if let Some(source) = record.decision_source {
                self.tallies[agent].count(source);
            }
            self.alive[agent] &= !(record.terminated || record.truncated);
            self.terminated |= record.terminated;
            self.truncated |= record.truncated;
            if step + 1 == steps {
                self.last_actions[agent] = record.action_label.clone();
            }
        }
        Ok(actions)
    }

    /// The episode's roll-up, with the environment's `summary` (if it gave one) and the
    /// `error` that ended it.
    pub(super) fn roll_up(
        &self,
        cast: &Cast,
        summary: Option<EpisodeSummary>,
        error: Option<String>,
    ) -> EpisodeRecord {
        let (outcome, metrics) = summary.map(|s| (s.outcome, s.metrics)).unwrap_or_default();
        let duration = self.started.elapsed();
        let agents = cast
            .spec
            .agents
            .iter()
            .enumerate()
            .map(|(i, spec)| AgentResult {
                agent_id: spec.id.clone(),
                team: spec.team.clone(),
                paradigm: cast.operators[i].1,
                kind: cast.operators[i].0.clone(),
                total_reward: self.returns[i],
                outcome: outcome.as_ref().and_then(|o| o.get(i).copied()),
                decisions: self.tallies[i].decisions,
                timeouts: self.tallies[i].timeouts,
                errors: self.tallies[i].errors,
            })
            .collect();
        EpisodeRecord {
            steps: self.view.steps,
            terminated: self.terminated,
            truncated: self.truncated,
            agents,
            metrics,
            error,
            restarts: self.restarts.clone(),
            duration_ms: duration.as_millis() as u64,
            steps_per_s: f64::from(self.view.steps) / duration.as_secs_f64().max(1e-9),
            ..EpisodeRecord::new(
                &cast.config.run_id,
                &cast.config.operator_id,
                self.index,
                self.seed,
                cast.spec.name.clone(),
            )
        }
    }
}
