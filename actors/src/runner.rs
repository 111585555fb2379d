//! Script mode: every episode of every operator of an experiment, `parallelism` at a time.
//!
//! Work is split into units (operator × episode, the recorder's [`Unit`]), handed out in
//! episode-major order (all of them, a shard's contiguous range of them, or a given list) so operators side by side advance together. Units are planned
//! lazily and finished episodes are not kept: a run of millions of episodes holds only
//! the episodes in flight, and the caller sees each roll-up once, through `on_episode`. Each of the `parallelism` lanes is an arbiter
//! thread that keeps one session per operator and runs its units one after another.
//! Results never depend on the lane a unit ran on: a session resets its environment and
//! every operator from the episode seed at the start of each episode.

use crate::SessionError;
use crate::decider::DeciderRegistry;
use crate::publish::Recorded;
use crate::session::{ResumeEpisode, ResumePoint, RunEpisode, Session, SessionConfig, Subscribers};
use actix::prelude::*;
use mosaic_core::EnvRegistry;
use mosaic_core::experiment::OnEscalation;
use mosaic_core::record::{EpisodeRecord, Shard};
use mosaic_core::{ExperimentSpec, OperatorId, RunId, SpecError};
use mosaic_recorder::Unit;
use mosaic_recorder::pool::{Claim, Pool, PoolError};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// Which units a run covers.
#[derive(Clone, Debug, Default)]
pub enum UnitPlan {
    /// Every unit of the experiment, episode-major (each episode's operators in the
    /// experiment's order), planned as the lanes ask for them.
    #[default]
    All,
    /// These units, in this order (e.g. what a resumed run has left).
    Only(Vec<Unit>),
    /// A shard's share of the units: a contiguous range of the episode-major order (see
    /// [`Shard`]), planned lazily like [`UnitPlan::All`].
    Shard(Shard),
    /// Units claimed one at a time from a pool shared with other processes, until none is
    /// left; a lane waits while other workers hold the last claims (they may expire). The
    /// caller marks each unit complete in the pool once its episode is confirmed.
    Pool(Arc<Pool>),
}

/// What a run did, counted as its episodes were confirmed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunTally {
    /// Episodes recorded (failed ones included).
    pub episodes: u64,
    /// Environment steps over those episodes.
    pub steps: u64,
    /// Decisions asked of the agents over those episodes.
    pub decisions: u64,
    /// Episodes that ended with an error.
    pub failed: u64,
}

impl RunTally {
    /// Counts `record`.
    pub fn add(&mut self, record: &EpisodeRecord) {
        self.episodes += 1;
        self.steps += u64::from(record.steps);
        self.decisions += record
            .agents
            .iter()
            .map(|agent| u64::from(agent.decisions))
            .sum::<u64>();
        self.failed += u64::from(record.error.is_some());
    }
}

/// A unit resolved against the experiment: its operator's index and its episode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Slot {
    operator: usize,
    episode: u32,
}

/// Hands out the units of a run, one at a time, to the lanes.
enum Queue {
    /// The next index into the episode-major order of all units, and the end of the range
    /// handed out.
    All {
        next: u64,
        end: u64,
        operators: u64,
    },
    Only(VecDeque<Slot>),
    /// Claimed from a pool, with the experiment's operator count.
    Pool {
        pool: Arc<Pool>,
        operators: u64,
    },
    /// Nothing more (the run is stopping).
    Closed,
}

/// What a lane does next.
enum Next {
    Unit(Slot),
    Wait(std::time::Duration),
    Done,
}

impl Queue {
    fn next(&mut self) -> Result<Next, PoolError> {
        if let Queue::Pool { pool, operators } = self {
            return Ok(match pool.claim()? {
                Claim::Unit(index) => match u32::try_from(index / *operators) {
                    Ok(episode) => Next::Unit(Slot {
                        operator: (index % *operators) as usize,
                        episode,
                    }),
                    Err(_) => Next::Done,
                },
                Claim::Wait => Next::Wait(pool.retry_after()),
                Claim::Finished => Next::Done,
            });
        }
        Ok(self.pop().map_or(Next::Done, Next::Unit))
    }

    fn pop(&mut self) -> Option<Slot> {
        match self {
            Queue::All {
                next,
                end,
                operators,
            } => {
                if *next >= *end {
                    return None;
                }
                let slot = Slot {
                    operator: (*next % *operators) as usize,
                    episode: u32::try_from(*next / *operators).ok()?,
                };
                *next += 1;
                Some(slot)
            }
            Queue::Only(units) => units.pop_front(),
            Queue::Pool { .. } | Queue::Closed => None,
        }
    }

    fn clear(&mut self) {
        *self = Queue::Closed;
    }
}

/// A run failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The experiment does not fit the registered environments and decider kinds.
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
    /// The pool of units could not be read or written.
    #[error(transparent)]
    Pool(#[from] PoolError),
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
    kinds: Arc<DeciderRegistry>,
    /// Units that continue from a checkpoint instead of starting from their seeds.
    resume_points: Arc<HashMap<Slot, Arc<ResumePoint>>>,
}

impl Runner {
    /// A runner for `spec` under `run_id`.
    pub fn new(
        spec: ExperimentSpec,
        run_id: RunId,
        envs: Arc<EnvRegistry>,
        kinds: Arc<DeciderRegistry>,
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
    ///
    /// # Errors
    ///
    /// A unit that is not part of the experiment.
    pub fn resuming(mut self, points: HashMap<Unit, ResumePoint>) -> Result<Self, SpecError> {
        let mut resolved = HashMap::with_capacity(points.len());
        for (unit, point) in points {
            resolved.insert(self.slot(&unit)?, Arc::new(point));
        }
        self.resume_points = Arc::new(resolved);
        Ok(self)
    }

    /// Where `unit` is in the experiment.
    fn slot(&self, unit: &Unit) -> Result<Slot, SpecError> {
        let operator = self
            .spec
            .operators
            .iter()
            .position(|o| o.id == unit.operator_id);
        match operator {
            Some(operator) if unit.episode_index < self.spec.episodes => Ok(Slot {
                operator,
                episode: unit.episode_index,
            }),
            _ => Err(SpecError::new(
                "units",
                format!(
                    "{unit} is not part of the experiment ({} operators, {} episodes)",
                    self.spec.operators.len(),
                    self.spec.episodes
                ),
            )),
        }
    }

    /// How many units `plan` covers.
    pub fn unit_count(&self, plan: &UnitPlan) -> u64 {
        let range = self.range(plan);
        match plan {
            UnitPlan::All | UnitPlan::Shard(_) | UnitPlan::Pool(_) => range.end - range.start,
            UnitPlan::Only(units) => units.len() as u64,
        }
    }

    /// The episode-major indices `plan` covers, when it is a range of them.
    fn range(&self, plan: &UnitPlan) -> std::ops::Range<u64> {
        let total = u64::from(self.spec.episodes) * self.spec.operators.len() as u64;
        match plan {
            UnitPlan::Shard(shard) => shard.units(total),
            UnitPlan::All | UnitPlan::Only(_) | UnitPlan::Pool(_) => 0..total,
        }
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

    /// Runs the units of `plan`, calling `on_episode` with each episode's roll-up once it
    /// is confirmed (durable sinks: on disk), in completion order. Answers with the tally;
    /// the roll-ups themselves are not kept.
    pub async fn run(
        &self,
        plan: UnitPlan,
        subscribers: Subscribers,
        mut on_episode: impl FnMut(&EpisodeRecord),
    ) -> Result<RunTally, RunError> {
        self.spec.validate()?;
        let count = self.unit_count(&plan);
        let range = self.range(&plan);
        let queue = match plan {
            UnitPlan::All | UnitPlan::Shard(_) => Queue::All {
                next: range.start,
                end: range.end,
                operators: self.spec.operators.len() as u64,
            },
            UnitPlan::Only(units) => {
                let mut seen = HashSet::with_capacity(units.len());
                let mut slots = VecDeque::with_capacity(units.len());
                for unit in &units {
                    let slot = self.slot(unit)?;
                    if !seen.insert(slot) {
                        return Err(SpecError::new(
                            "units",
                            format!("{unit} is listed twice (it would run twice)"),
                        )
                        .into());
                    }
                    slots.push_back(slot);
                }
                Queue::Only(slots)
            }
            UnitPlan::Pool(pool) => Queue::Pool {
                pool,
                operators: self.spec.operators.len() as u64,
            },
        };
        let queue = Arc::new(Mutex::new(queue));
        let failed = Arc::new(FailedEpisodes::new(self.spec.operators.len()));
        let lanes = self
            .spec
            .parallelism
            .max(1)
            .min(usize::try_from(count).unwrap_or(usize::MAX).max(1));
        let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
        let mut arbiters = Vec::with_capacity(lanes);
        for _ in 0..lanes {
            let arbiter = Arbiter::new();
            let lane = Lane {
                runner: self.clone(),
                queue: queue.clone(),
                failed: failed.clone(),
                subscribers: subscribers.clone(),
                done: done_tx.clone(),
            };
            arbiter.spawn(lane.run());
            arbiters.push(arbiter);
        }
        drop(done_tx);
        let mut tally = RunTally::default();
        let mut failure = None;
        while let Some(outcome) = done_rx.recv().await {
            match outcome {
                Ok(record) => {
                    tally.add(&record);
                    on_episode(&record);
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
            None => Ok(tally),
        }
    }
}

type UnitResult = Result<Arc<EpisodeRecord>, RunError>;

/// Failed episodes per operator configuration in this run, across lanes (for
/// `supervision.max_failed_episodes`).
struct FailedEpisodes(Vec<AtomicU32>);

impl FailedEpisodes {
    fn new(operators: usize) -> Self {
        Self((0..operators).map(|_| AtomicU32::new(0)).collect())
    }

    fn count(&self, operator: usize) -> u32 {
        self.0[operator].load(Ordering::Relaxed)
    }

    fn add(&self, operator: usize) {
        self.0[operator].fetch_add(1, Ordering::Relaxed);
    }
}

/// Episodes a lane may have run whose confirmation (durable sinks: their sync) is still
/// pending. Syncs then overlap the next episodes, and one sync covers several short ones.
pub const UNCONFIRMED_PER_LANE: usize = 8;

struct Lane {
    runner: Runner,
    queue: Arc<Mutex<Queue>>,
    failed: Arc<FailedEpisodes>,
    subscribers: Subscribers,
    done: tokio::sync::mpsc::UnboundedSender<UnitResult>,
}

impl Lane {
    /// The next unit, waiting while a pool has none to give yet.
    async fn next(&self) -> Result<Option<Slot>, RunError> {
        loop {
            let next = match self.queue.lock() {
                Ok(mut queue) => queue.next()?,
                Err(_) => return Ok(None),
            };
            match next {
                Next::Unit(slot) => return Ok(Some(slot)),
                Next::Done => return Ok(None),
                Next::Wait(pause) => {
                    if self.done.is_closed() {
                        return Ok(None);
                    }
                    actix_rt::time::sleep(pause).await;
                }
            }
        }
    }

    /// Runs units one after another. An episode is reported done once its subscribers have
    /// confirmed it (durable sinks: on disk); meanwhile the lane runs the next ones, with at
    /// most [`UNCONFIRMED_PER_LANE`] episodes waiting for their confirmation.
    async fn run(self) {
        let mut sessions: HashMap<usize, Addr<Session>> = HashMap::new();
        let mut confirming = VecDeque::with_capacity(UNCONFIRMED_PER_LANE);
        loop {
            let unit = match self.next().await {
                Ok(Some(unit)) => unit,
                Ok(None) => break,
                Err(error) => {
                    let _ = self.done.send(Err(error));
                    break;
                }
            };
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
                        let _ = done.send(confirmed);
                    }));
                }
                Err(error) => {
                    let _ = self.done.send(Err(error));
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
        unit: Slot,
        sessions: &mut HashMap<usize, Addr<Session>>,
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
        if let Some(limit) = spec.supervision.max_failed_episodes
            && self.failed.count(unit.operator) >= limit
        {
            let error = format!(
                "not run: configuration `{operator_id}` gave up after {limit} failed episodes \
                 (supervision.max_failed_episodes)"
            );
            return Ok(self.not_run(unit, seed, error));
        }
        let session = match sessions.entry(unit.operator) {
            Entry::Occupied(session) => Ok(session.into_mut()),
            Entry::Vacant(vacant) => {
                match self.runner.build(unit.operator, self.subscribers.clone()) {
                    Ok(session) => Ok(vacant.insert(session.start())),
                    Err(e) => Err(e),
                }
            }
        };
        let (record, escalated) = match session {
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
                let record = answer
                    .map_err(|e| fail(SessionError::Gone(e)))?
                    .map_err(fail)?;
                let escalated = record.record().restarts.iter().any(|r| !r.recovered);
                (record, escalated)
            }
            // Children that never started: the episode is recorded as failed (it is not
            // retried, so nothing runs twice); the next episode tries to start them afresh.
            Err(e) if e.start_failure => {
                let error = format!("escalated: could not start: {e}");
                (self.not_run(unit, seed, error), true)
            }
            Err(e) => return Err(e.into()),
        };
        if record.record().error.is_some() {
            self.failed.add(unit.operator);
        }
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

    /// Records episode `unit` as failed without running it, with `error` saying why.
    fn not_run(&self, unit: Slot, seed: u64, error: String) -> Recorded {
        let spec = &self.runner.spec;
        let operator = &spec.operators[unit.operator];
        let record = Arc::new(EpisodeRecord {
            error: Some(error),
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
