//! Script mode: run an experiment into a run directory.

use crate::Experiment;
#[cfg(feature = "llm")]
use crate::llm_cache::{LlmCache, LlmCacheError};
use mosaic_actors::error::SinkError;
use mosaic_actors::runner::{RunError, RunTally, Runner, UnitPlan};
use mosaic_actors::session::ResumePoint;
use mosaic_actors::sink::Sinks;
use mosaic_core::record::{RunManifest, RunPart, Shard, ShardTag, now_ms};
use mosaic_core::{ExperimentSpec, RunId, SpecError};
use mosaic_recorder::merge::{deciding_fields, experiment_identity};
use mosaic_recorder::pool::{Pool, PoolError, PoolManifest};
use mosaic_recorder::{Durability, RunDir, Unit};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The key in `run.json`'s `versions` naming how a run was made, when not by `mosaic run`.
pub const MODE_KEY: &str = "mode";
/// Its value for runs played by hand in `mosaic serve`.
pub const MANUAL_MODE: &str = "manual";

/// Where and how to run.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Parent directory of run directories.
    pub out: PathBuf,
    /// The run id (default: the experiment name and the UTC start time).
    pub run_id: Option<String>,
    /// Show a progress bar on the terminal.
    pub progress: bool,
    /// How far an episode's records must have gone before it counts as done.
    pub durability: Durability,
    /// How LLM answers are recorded into (or replayed from) a run store.
    #[cfg(feature = "llm")]
    pub llm_cache: LlmCache,
    /// Run only this shard's share of the units, into the shard's own directory
    /// ([`shard_dir_name`]); the run id defaults to [`shard_run_id`], the same in every
    /// shard.
    pub shard: Option<Shard>,
    /// Take units from a pool shared with other processes, into this worker's own
    /// directory ([`pool_dir_name`]); the run id defaults to [`shard_run_id`]. Ignored
    /// when `shard` is set.
    pub pool: Option<PoolOptions>,
}

/// How a process works on a pool of units (`mosaic run --pool`).
#[derive(Clone, Debug)]
pub struct PoolOptions {
    /// The pool directory, shared by every worker.
    pub dir: PathBuf,
    /// This worker's name, unique among the pool's workers (default: [`default_worker`]).
    pub worker: String,
    /// How long a claim holds without renewal: a claim older than this is taken over.
    pub lease: Duration,
}

/// `{host name}-{process id}`: a worker name no other process on the pool has.
pub fn default_worker() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .unwrap_or_default();
    let host = id_characters(host.trim());
    let host = if host.is_empty() {
        "host".to_owned()
    } else {
        host
    };
    format!("{host}-{}", std::process::id())
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            out: PathBuf::from("runs"),
            run_id: None,
            progress: false,
            durability: Durability::Sync,
            #[cfg(feature = "llm")]
            llm_cache: LlmCache::default(),
            shard: None,
            pool: None,
        }
    }
}

/// A finished run.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// The run id.
    pub run_id: String,
    /// Its directory.
    pub dir: PathBuf,
    /// The run's episodes, steps and failed episodes (after a resume: the whole run's).
    pub tally: RunTally,
    /// Wall time of the whole run.
    pub wall: Duration,
}

/// A run could not start or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum RunFailure {
    /// The experiment does not fit the registries (nothing was written).
    #[error("{0}")]
    Spec(SpecError),
    /// The run directory could not be created or written.
    #[error(transparent)]
    Recorder(#[from] mosaic_recorder::RecorderError),
    /// A session failed (what was recorded before is kept).
    #[error(transparent)]
    Run(RunError),
    /// Recording failed (what was made durable before is kept).
    #[error("recording failed: {0}")]
    Sink(SinkError),
    /// `mosaic run` was pointed at a run that did not finish.
    #[error(
        "{} holds the unfinished run `{run_id}` ({done} of {planned} episodes done): finish it with `mosaic resume {}`",
        path.display(), path.display()
    )]
    Unfinished {
        /// The run directory.
        path: PathBuf,
        /// Its run id.
        run_id: String,
        /// Episodes complete.
        done: usize,
        /// Episodes planned.
        planned: usize,
    },
    /// `mosaic resume` was pointed at a run with nothing left to do.
    #[error("{} holds the finished run `{run_id}`: nothing to resume", path.display())]
    Finished {
        /// The run directory.
        path: PathBuf,
        /// Its run id.
        run_id: String,
    },
    /// The run was played by hand (`mosaic serve`): its episodes follow a person's resets.
    #[error("{}: `{run_id}` was played by hand in `mosaic serve`; only script-mode runs can be resumed", path.display())]
    Manual {
        /// The run directory.
        path: PathBuf,
        /// Its run id.
        run_id: String,
    },
    /// The experiment resuming a run is not the one the run was started with.
    #[error("{}: the run was started with another experiment than the one given ({field} differs)", path.display())]
    OtherExperiment {
        /// The run directory.
        path: PathBuf,
        /// The first top-level field that differs.
        field: String,
    },
    /// The pool of units could not be joined or used.
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// `mosaic resume` was pointed at a pool worker's part.
    #[error("{}: a pool worker's part is not resumed: start a new worker on the pool (`mosaic run EXP --pool {}`); its complete units are kept", path.display(), pool.display())]
    PoolPart {
        /// The run directory.
        path: PathBuf,
        /// Its pool.
        pool: PathBuf,
    },
    /// The LLM response cache could not be used, or a replay missed requests.
    #[cfg(feature = "llm")]
    #[error(transparent)]
    LlmCache(#[from] LlmCacheError),
}

impl RunFailure {
    /// The exit code of the `mosaic` command for this failure: 2 for bad input.
    pub fn exit_code(&self) -> u8 {
        match self {
            RunFailure::Spec(_) => 2,
            RunFailure::Recorder(e) if e.is_bad_input() => 2,
            RunFailure::Unfinished { .. }
            | RunFailure::Finished { .. }
            | RunFailure::Manual { .. }
            | RunFailure::OtherExperiment { .. }
            | RunFailure::PoolPart { .. } => 2,
            RunFailure::Pool(PoolError::OtherRun { .. } | PoolError::Malformed { .. }) => 2,
            #[cfg(feature = "llm")]
            RunFailure::LlmCache(e) if e.is_bad_input() => 2,
            _ => 1,
        }
    }
}

impl Experiment {
    fn runner(&self, run_id: &str) -> Runner {
        Runner::new(
            self.spec().clone(),
            RunId::from(run_id),
            Arc::new(self.envs().clone()),
            Arc::new(self.kinds().clone()),
        )
    }

    /// Checks the experiment against the registries (builds every environment and
    /// operator once). Runs its own actix system: call it outside one.
    pub fn validate(&self) -> Result<(), SpecError> {
        let runner = self.runner("validate");
        actix::System::new().block_on(async move { runner.validate() })
    }

    /// Runs every episode into a new run directory under `options.out`. Runs its own actix
    /// system: call it outside one (inside, use [`Experiment::run_async`]).
    pub fn run(&self, options: &RunOptions) -> Result<RunOutcome, RunFailure> {
        actix::System::new().block_on(self.run_async(options))
    }

    /// [`Experiment::run`] inside a running actix system.
    pub async fn run_async(&self, options: &RunOptions) -> Result<RunOutcome, RunFailure> {
        let started = Instant::now();
        let part = match (options.shard, &options.pool) {
            (Some(shard), _) => Some(RunPart::Shard(shard)),
            (None, Some(pool)) => Some(RunPart::Pool {
                worker: pool.worker.clone(),
                // Absolute: `mosaic runs` looks at the pool from anywhere.
                pool: std::path::absolute(&pool.dir).unwrap_or_else(|_| pool.dir.clone()),
            }),
            (None, None) => None,
        };
        let run_id = match (&options.run_id, &part) {
            (Some(id), _) => id.clone(),
            (None, Some(_)) => shard_run_id(self.spec()),
            (None, None) => default_run_id(&self.spec().name, now_ms() / 1000),
        };
        let dir = match &part {
            Some(RunPart::Shard(shard)) => options.out.join(shard_dir_name(&run_id, *shard)),
            Some(RunPart::Pool { worker, .. }) => options.out.join(pool_dir_name(&run_id, worker)),
            None => options.out.join(&run_id),
        };
        if is_run_dir(&dir) {
            let run = RunDir::open(&dir)?;
            let store = run.store()?;
            let done = store.completed_count();
            if done < run.planned() {
                return Err(RunFailure::Unfinished {
                    path: dir,
                    run_id,
                    done,
                    planned: run.planned(),
                });
            }
        }
        let runner = self.runner(&run_id);
        let prepared = self.families().prepare(options)?;
        runner.validate().map_err(RunFailure::Spec)?;
        let identity = experiment_identity(self.spec());
        let pool = match options.pool.as_ref().filter(|_| options.shard.is_none()) {
            Some(pool) => Some(Arc::new(Pool::join(
                &pool.dir,
                &PoolManifest {
                    experiment: identity.clone(),
                    run_id: run_id.clone(),
                    units: runner.unit_count(&UnitPlan::All),
                    lease_ms: u64::try_from(pool.lease.as_millis()).unwrap_or(u64::MAX),
                },
                &pool.worker,
            )?)),
            None => None,
        };
        let manifest = RunManifest {
            shard: part.map(|part| ShardTag {
                experiment: identity,
                part,
            }),
            ..RunManifest::new(run_id.clone(), self.spec().clone(), versions())
        };
        let (_, store, sinks) = Sinks::create_run(&dir, &manifest, options.durability).map_err(
            |error| match error {
                SinkError::Recorder(error) => RunFailure::Recorder(error),
                error => RunFailure::Sink(error),
            },
        )?;
        self.families().attach(options, &store, prepared)?;
        let plan = match (&pool, options.shard) {
            (Some(pool), _) => UnitPlan::Pool(pool.clone()),
            (None, Some(shard)) => UnitPlan::Shard(shard),
            (None, None) => UnitPlan::All,
        };
        let renewal = pool.clone().map(Renewal::start);
        let tally = self.run_units(&runner, sinks, plan, options).await;
        drop(renewal);
        let tally = tally?;
        Ok(RunOutcome {
            run_id,
            dir,
            tally,
            wall: started.elapsed(),
        })
    }

    /// Finishes the run in `dir` whose process died: its complete episodes are kept, an
    /// unfinished one continues from its last checkpoint (keeping its step records before
    /// it), or, without one, has its records dropped and runs again from its seed, so that
    /// the run ends with the records an uninterrupted run would have. The experiment must
    /// be the one the run started with (see [`experiment_of_run`]).
    pub fn resume(&self, dir: &Path, options: &RunOptions) -> Result<RunOutcome, RunFailure> {
        actix::System::new().block_on(self.resume_async(dir, options))
    }

    /// [`Experiment::resume`] inside a running actix system.
    pub async fn resume_async(
        &self,
        dir: &Path,
        options: &RunOptions,
    ) -> Result<RunOutcome, RunFailure> {
        let started = Instant::now();
        let run_dir = RunDir::open(dir)?;
        let run_id = run_dir.manifest().run_id.clone();
        if run_dir.manifest().versions.get(MODE_KEY) == Some(&MANUAL_MODE.into()) {
            return Err(RunFailure::Manual {
                path: dir.to_owned(),
                run_id,
            });
        }
        if let Some(RunPart::Pool { pool, .. }) =
            run_dir.manifest().shard.as_ref().map(|tag| &tag.part)
        {
            return Err(RunFailure::PoolPart {
                path: dir.to_owned(),
                pool: pool.clone(),
            });
        }
        if let Some(field) = first_difference(&run_dir.manifest().experiment, self.spec()) {
            return Err(RunFailure::OtherExperiment {
                path: dir.to_owned(),
                field,
            });
        }
        let store = run_dir.store()?;
        let prepared = self.families().prepare(options)?;
        self.families().attach(options, &store, prepared)?;
        let discarded = run_dir.discard_incomplete(&store)?;
        if !discarded.units.is_empty() {
            tracing::info!(target: "mosaic::run", "dropped the partial records of {} unfinished episodes", discarded.units.len());
        }
        let mut resume_points = HashMap::new();
        for checkpoint in discarded.resumable {
            let unit = Unit::new(checkpoint.operator_id.clone(), checkpoint.episode_index);
            let records = store.steps_of(&unit)?;
            tracing::info!(target: "mosaic::run", "{} episode {} continues from its checkpoint at step {}", checkpoint.operator_id, checkpoint.episode_index, checkpoint.step_index);
            resume_points.insert(
                unit,
                ResumePoint {
                    checkpoint,
                    records,
                },
            );
        }
        let runner = self
            .runner(&run_id)
            .resuming(resume_points)
            .map_err(RunFailure::Spec)?;
        // The order `mosaic run` follows: episode-major, operators in the experiment's order.
        let operator_order: HashMap<&str, usize> = self
            .spec()
            .operators
            .iter()
            .enumerate()
            .map(|(i, o)| (o.id.as_str(), i))
            .collect();
        let mut units = store.remaining_units()?;
        units.sort_by_key(|unit| {
            (
                unit.episode_index,
                operator_order.get(unit.operator_id.as_str()).copied(),
            )
        });
        if units.is_empty() {
            return Err(RunFailure::Finished {
                path: dir.to_owned(),
                run_id,
            });
        }
        runner.validate().map_err(RunFailure::Spec)?;
        let sinks = Sinks::start(&run_dir, &store, options.durability).map_err(RunFailure::Sink)?;
        self.run_units(&runner, sinks, UnitPlan::Only(units), options)
            .await?;
        let mut tally = RunTally::default();
        for record in store.complete_episodes() {
            tally.add(&record?);
        }
        Ok(RunOutcome {
            run_id,
            dir: dir.to_owned(),
            tally,
            wall: started.elapsed(),
        })
    }

    /// Runs the units of `plan` into the run `sinks` record, with a progress bar over them.
    async fn run_units(
        &self,
        runner: &Runner,
        sinks: Sinks,
        plan: UnitPlan,
        options: &RunOptions,
    ) -> Result<RunTally, RunFailure> {
        let subscribers = sinks.subscribers();
        let bar = progress_bar(options.progress, runner.unit_count(&plan));
        let pool = match &plan {
            UnitPlan::Pool(pool) => Some(pool.clone()),
            _ => None,
        };
        let operators: HashMap<String, u64> = runner
            .spec()
            .operators
            .iter()
            .enumerate()
            .map(|(i, o)| (o.id.clone(), i as u64))
            .collect();
        let tally = runner
            .run(plan, subscribers, |record| {
                if let (Some(pool), Some(operator)) = (&pool, operators.get(&record.operator_id)) {
                    let index = u64::from(record.episode_index) * operators.len() as u64 + operator;
                    // A marker not written leaves the unit to another worker: its records
                    // then exist twice, and merging keeps one copy.
                    match pool.complete(index) {
                        Ok(true) => {}
                        Ok(false) => tracing::warn!(target: "mosaic::run", "{} episode {} was completed by another worker too", record.operator_id, record.episode_index),
                        Err(error) => tracing::warn!(target: "mosaic::run", "{error}"),
                    }
                }
                bar.inc(1);
                bar.set_message(format!(
                    "{} ep {}",
                    record.operator_id, record.episode_index
                ));
            })
            .await;
        bar.finish_and_clear();
        self.families().shutdown().await;
        let closed = sinks.close().await;
        // A failed sink is the cause of any episode it could not confirm.
        closed.map_err(RunFailure::Sink)?;
        let tally = tally.map_err(RunFailure::Run)?;
        self.families().check(options)?;
        Ok(tally)
    }
}

/// The experiment a run was started with (from its `run.json`), with the default
/// environments and decider kinds: what `mosaic resume` runs.
pub fn experiment_of_run(dir: &Path) -> Result<Experiment, RunFailure> {
    let run_dir = RunDir::open(dir)?;
    Ok(Experiment::from_spec(run_dir.manifest().experiment.clone()))
}

/// The first top-level field in which two experiments differ, ignoring how they are run
/// (`parallelism`, `pace_ms`), which never changes results.
fn first_difference(recorded: &ExperimentSpec, given: &ExperimentSpec) -> Option<String> {
    let (recorded, given) = (deciding_fields(recorded), deciding_fields(given));
    recorded
        .keys()
        .chain(given.keys())
        .find(|key| recorded.get(*key) != given.get(*key))
        .cloned()
}

fn progress_bar(show: bool, units: u64) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    // indicatif draws nothing when stderr is not a terminal.
    let bar = indicatif::ProgressBar::new(units);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} episodes {msg}",
    ) {
        bar.set_style(style);
    }
    bar
}

/// The software versions a run's manifest records: `mosaic` and the record schemas.
pub fn versions() -> serde_json::Map<String, serde_json::Value> {
    let mut versions = serde_json::Map::new();
    versions.insert("mosaic".into(), env!("CARGO_PKG_VERSION").into());
    versions.insert(
        "step_schema".into(),
        mosaic_core::record::STEP_SCHEMA.into(),
    );
    versions.insert(
        "episode_schema".into(),
        mosaic_core::record::EPISODE_SCHEMA.into(),
    );
    versions
}

/// `name` reduced to the characters of run ids.
fn id_characters(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The run id shards of `spec` share unless one is given: `{name}-{identity}`, with the
/// first 12 hex digits of the experiment's identity, so that shards started apart (on other
/// machines, at other times) agree on it without talking to each other.
pub fn shard_run_id(spec: &ExperimentSpec) -> String {
    let identity = experiment_identity(spec);
    format!(
        "{}-{}",
        id_characters(&spec.name),
        identity.get(..12).unwrap_or(&identity)
    )
}

/// The directory name of pool worker `worker`'s part of run `run_id`:
/// `{run_id}.pool-{worker}` (`mosaic merge OUT/{run_id}.pool-*`).
pub fn pool_dir_name(run_id: &str, worker: &str) -> String {
    format!("{run_id}.pool-{}", id_characters(worker))
}

/// Renews a pool worker's claims on a thread of its own until dropped.
struct Renewal {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Renewal {
    fn start(pool: Arc<Pool>) -> Self {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(pool.renew_every())
            {
                match pool.renew() {
                    Ok(lost) => {
                        for unit in lost {
                            tracing::warn!(target: "mosaic::run", "the claim of unit {unit} expired and another worker took it over");
                        }
                    }
                    Err(error) => tracing::warn!(target: "mosaic::run", "renewing claims: {error}"),
                }
            }
        });
        Self {
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Renewal {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The directory name of shard `shard` of run `run_id`: `{run_id}.shard-{K}-of-{N}`, beside
/// the others under one output directory (`mosaic merge OUT/{run_id}.shard-*`).
pub fn shard_dir_name(run_id: &str, shard: Shard) -> String {
    format!("{run_id}.shard-{}-of-{}", shard.index, shard.count)
}

/// `{name}-{YYYYMMDDTHHMMSS}` in UTC, with the name reduced to id characters.
pub fn default_run_id(name: &str, unix_seconds: u64) -> String {
    let clean = id_characters(name);
    let days = (unix_seconds / 86_400) as i64;
    let secs = unix_seconds % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{clean}-{y:04}{m:02}{d:02}T{:02}{:02}{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Whether `path` already holds a run.
pub fn is_run_dir(path: &Path) -> bool {
    path.join(mosaic_recorder::run_dir::MANIFEST_FILE).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_readable_utc_stamps() {
        assert_eq!(default_run_id("a7 vs/x", 0), "a7_vs_x-19700101T000000");
        assert_eq!(
            default_run_id("a7-scripted-vs-random", 0),
            "a7-scripted-vs-random-19700101T000000"
        );
        assert_eq!(default_run_id("d", 1_795_305_950), "d-20261122T000550");
        assert_eq!(default_run_id("d", 951_782_400), "d-20000229T000000");
    }
}
