//! Script mode: every episode of every operator of an experiment, `parallelism` at a time.
//!
//! Work is split into units (operator × episode), handed out in episode-major order so
//! operators side by side advance together. Each of the `parallelism` lanes is an arbiter
//! thread that keeps one session per operator and runs its units one after another.
//! Results never depend on the lane a unit ran on: a session resets its environment and
//! every operator from the episode seed at the start of each episode.

use crate::SessionError;
use crate::operator::OperatorRegistry;
use crate::publish::Recorded;
use crate::session::{ResumeEpisode, ResumePoint, RunEpisode, Session, SessionConfig, Subscribers};
use actix::prelude::*;
use mosaic_core::EnvRegistry;
use mosaic_core::experiment::OnEscalation;
use mosaic_core::record::EpisodeRecord;
use mosaic_core::{ExperimentSpec, OperatorId, RunId, SpecError};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// One operator × episode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Unit {
    /// Index into the experiment's operators.
    pub operator: usize,
    /// Episode index.
    pub episode: u32,
}

/// A run failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The experiment does not fit the registered environments and operator kinds.
    #[error("{0}")]
    Spec(#[from] SpecError),
    /// A session failed outside an episode (an operator could not start).
    #[error("operator {operator}, episode {episode}: {error}")]
    Session {
        /// The operator id.
        operator: String,
        /// The episode index.
        episode: u32,
        /// What went wrong.
        error: SessionError,
    },
    /// A session gave up on a failing child and the experiment says to stop
    /// (`supervision.on_escalation = "stop"`).
    #[error(
        "operator {operator}, episode {episode}: {error} (stopping, as supervision.on_escalation says)"
    )]
    Escalated {
        /// The operator id.
        operator: String,
        /// The episode index.
        episode: u32,
        /// The episode's error.
        error: String,
    },
}

/// Everything needed to run an experiment's sessions.
#[derive(Clone)]
pub struct Runner {
    spec: Arc<ExperimentSpec>,
    run_id: RunId,
    envs: Arc<EnvRegistry>,
    kinds: Arc<OperatorRegistry>,
    /// Units that continue from a checkpoint instead of starting from their seeds.
    resume_points: Arc<HashMap<Unit, Arc<ResumePoint>>>,
}

impl Runner {
    /// A runner for `spec` under `run_id`.
    pub fn new(
        spec: ExperimentSpec,
        run_id: RunId,
        envs: Arc<EnvRegistry>,
        kinds: Arc<OperatorRegistry>,
    ) -> Self {
        Self {
            spec: Arc::new(spec),
            run_id,
            envs,
            kinds,
            resume_points: Arc::default(),
        }
    }

    /// Runs the units in `points` from their checkpoints (see `mosaic resume`).
    pub fn resuming(mut self, points: HashMap<Unit, ResumePoint>) -> Self {
        self.resume_points = Arc::new(points.into_iter().map(|(u, p)| (u, Arc::new(p))).collect());
        self
    }

    /// The experiment.
    pub fn spec(&self) -> &ExperimentSpec {
        &self.spec
    }

    fn build(&self, operator: usize, subscribers: Subscribers) -> Result<Session, SpecError> {
        Session::build(
            SessionConfig::from_spec(
                &self.spec,
                &self.spec.operators[operator],
                self.run_id.clone(),
            ),
            &self.spec.operators[operator],
            &self.envs,
            &self.kinds,
            subscribers,
        )
        .map_err(|e| {
            let path = format!("operators[{operator}].{}", e.path);
            e.at(path)
        })
    }

    /// Checks the whole experiment against the registries by building every operator's
    /// environment and agents once (inside an actix system), then dropping them. A worker
    /// that cannot start is not a configuration error: the run's supervision deals with it.
    pub fn validate(&self) -> Result<(), SpecError> {
        self.spec.validate()?;
        for operator in 0..self.spec.operators.len() {
            match self.build(operator, Subscribers::default()) {
                Ok(session) => drop(session),
                Err(e) if e.start_failure => {
                    tracing::warn!(target: "mosaic::run", "{e}");
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Runs `units` (all of the experiment's when `None`), calling `on_episode` as each
    /// episode ends. Answers with the roll-ups in unit order.
    pub async fn run(
        &self,
        units: Option<Vec<Unit>>,
        subscribers: Subscribers,
        mut on_episode: impl FnMut(&EpisodeRecord),
    ) -> Result<Vec<Arc<EpisodeRecord>>, RunError> {
        self.spec.validate()?;
        let units = units.unwrap_or_else(|| self.all_units());
        let (operators, episodes) = (self.spec.operators.len(), self.spec.episodes);
        if let Some(unit) = units
            .iter()
            .find(|u| u.operator >= operators || u.episode >= episodes)
        {
            return Err(SpecError::new(
                "units",
                format!(
                    "operator {} episode {} is not part of the experiment ({operators} operators, {episodes} episodes)",
                    unit.operator, unit.episode
                ),
            )
            .into());
        }
        let order: HashMap<Unit, usize> = units.iter().enumerate().map(|(i, u)| (*u, i)).collect();
        if order.len() < units.len() {
            return Err(
                SpecError::new("units", "a unit is listed twice (it would run twice)").into(),
            );
        }
        let queue = Arc::new(Mutex::new(VecDeque::from(units)));
        let lanes = self.spec.parallelism.max(1).min(order.len().max(1));
        let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
        let mut arbiters = Vec::with_capacity(lanes);
        for _ in 0..lanes {
            let arbiter = Arbiter::new();
            let lane = Lane {
                runner: self.clone(),
                queue: queue.clone(),
                subscribers: subscribers.clone(),
                done: done_tx.clone(),
            };
            arbiter.spawn(lane.run());
            arbiters.push(arbiter);
        }
        drop(done_tx);
        let mut results: Vec<Option<Arc<EpisodeRecord>>> = vec![None; order.len()];
        let mut failure = None;
        while let Some((unit, outcome)) = done_rx.recv().await {
            match outcome {
                Ok(record) => {
                    on_episode(&record);
                    results[order[&unit]] = Some(record);
                }
                Err(error) => {
                    failure.get_or_insert(error);
                    if let Ok(mut queue) = queue.lock() {
                        queue.clear();
                    }
                }
            }
        }
        for arbiter in arbiters {
            arbiter.stop();
        }
        match failure {
            Some(error) => Err(error),
            None => Ok(results.into_iter().flatten().collect()),
        }
    }

    /// Every unit of the experiment, episode-major.
    pub fn all_units(&self) -> Vec<Unit> {
        (0..self.spec.episodes)
            .flat_map(|episode| {
                (0..self.spec.operators.len()).map(move |operator| Unit { operator, episode })
            })
            .collect()
    }
}

type UnitResult = (Unit, Result<Arc<EpisodeRecord>, RunError>);

/// Episodes a lane may have run whose confirmation (durable sinks: their sync) is still
/// pending. Syncs then overlap the next episodes, and one sync covers several short ones.
pub const UNCONFIRMED_PER_LANE: usize = 8;

struct Lane {
    runner: Runner,
    queue: Arc<Mutex<VecDeque<Unit>>>,
    subscribers: Subscribers,
    done: tokio::sync::mpsc::UnboundedSender<UnitResult>,
}

impl Lane {
    fn next(&self) -> Option<Unit> {
        self.queue.lock().ok()?.pop_front()
    }

    /// Runs units one after another. An episode is reported done once its subscribers have
    /// confirmed it (durable sinks: on disk); meanwhile the lane runs the next ones, with at
    /// most [`UNCONFIRMED_PER_LANE`] episodes waiting for their confirmation.
    async fn run(self) {
        let mut sessions: HashMap<usize, Result<Addr<Session>, SpecError>> = HashMap::new();
        let mut confirming = VecDeque::with_capacity(UNCONFIRMED_PER_LANE);
        while let Some(unit) = self.next() {
            let outcome = self.run_unit(unit, &mut sessions).await;
            if confirming.len() == UNCONFIRMED_PER_LANE
                && let Some(oldest) = confirming.pop_front()
            {
                let _ = oldest.await;
            }
            match outcome {
                Ok(recorded) => {
                    let done = self.done.clone();
                    let operator = self.runner.spec.operators[unit.operator].id.clone();
                    confirming.push_back(actix_rt::spawn(async move {
                        let confirmed =
                            recorded.durable().await.map_err(|error| RunError::Session {
                                operator,
                                episode: unit.episode,
                                error,
                            });
                        let _ = done.send((unit, confirmed));
                    }));
                }
                Err(error) => {
                    let _ = self.done.send((unit, Err(error)));
                    break;
                }
            }
            if self.done.is_closed() {
                break;
            }
        }
        for unconfirmed in confirming {
            let _ = unconfirmed.await;
        }
    }

    async fn run_unit(
        &self,
        unit: Unit,
        sessions: &mut HashMap<usize, Result<Addr<Session>, SpecError>>,
    ) -> Result<Recorded, RunError> {
        let spec = &self.runner.spec;
        let operator_id = spec.operators[unit.operator].id.clone();
        let fail = |error: SessionError| RunError::Session {
            operator: operator_id.clone(),
            episode: unit.episode,
            error,
        };
        let seed = spec.seeds.seed(unit.episode).ok_or_else(|| {
            SpecError::new("seeds", format!("no seed for episode {}", unit.episode))
        })?;
        let session = sessions.entry(unit.operator).or_insert_with(|| {
            self.runner
                .build(unit.operator, self.subscribers.clone())
                .map(Actor::start)
        });
        let record = match session {
            Ok(session) => {
                let answer = match self.runner.resume_points.get(&unit) {
                    Some(from) => {
                        let from = from.clone();
                        session
                            .send(ResumeEpisode {
                                index: unit.episode,
                                seed,
                                from,
                            })
                            .await
                    }
                    None => {
                        session
                            .send(RunEpisode {
                                index: unit.episode,
                                seed,
                            })
                            .await
                    }
                };
                answer
                    .map_err(|e| fail(SessionError::Gone(e)))?
                    .map_err(fail)?
            }
            // Children that never started: the episode is recorded as failed (it is not
            // retried, so nothing runs twice).
            Err(e) if e.start_failure => self.unstarted(unit, seed, e.to_string()),
            Err(e) => return Err(e.clone().into()),
        };
        let escalated = record.record().restarts.iter().any(|r| !r.recovered)
            || matches!(session, Err(e) if e.start_failure);
        if escalated && spec.supervision.on_escalation == OnEscalation::Stop {
            let error = record.record().error.clone().unwrap_or_default();
            // The failed episode is recorded before the run stops.
            record.durable().await.map_err(fail)?;
            return Err(RunError::Escalated {
                operator: operator_id,
                episode: unit.episode,
                error,
            });
        }
        Ok(record)
    }

    /// Records episode `unit` as failed because its session could not start.
    fn unstarted(&self, unit: Unit, seed: u64, error: String) -> Recorded {
        let spec = &self.runner.spec;
        let operator = &spec.operators[unit.operator];
        let record = Arc::new(EpisodeRecord {
            error: Some(format!("escalated: could not start: {error}")),
            ..EpisodeRecord::new(
                &self.runner.run_id,
                &OperatorId(operator.id.clone()),
                unit.episode,
                seed,
                operator.env.clone(),
            )
        });
        let durable = self.subscribers.announce_episode(&record);
        Recorded::new(record, durable)
    }
}
