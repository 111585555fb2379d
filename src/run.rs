//! Script mode: run an experiment into a run directory.

use crate::Experiment;
#[cfg(feature = "llm")]
use crate::llm_cache::{LlmCache, LlmCacheError};
use mosaic_actors::error::SinkError;
use mosaic_actors::runner::{RunError, RunTally, Runner, UnitPlan};
use mosaic_actors::session::ResumePoint;
use mosaic_actors::sink::Sinks;
use mosaic_core::record::{RunManifest, now_ms};
use mosaic_core::{RunId, SpecError};
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
            | RunFailure::OtherExperiment { .. } => 2,
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
        let run_id = match &options.run_id {
            Some(id) => id.clone(),
            None => default_run_id(&self.spec().name, now_ms() / 1000),
        };
        let dir = options.out.join(&run_id);
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
        let manifest = RunManifest::new(run_id.clone(), self.spec().clone(), versions());
        let (_, store, sinks) = Sinks::create_run(&dir, &manifest, options.durability).map_err(
            |error| match error {
                SinkError::Recorder(error) => RunFailure::Recorder(error),
                error => RunFailure::Sink(error),
            },
        )?;
        self.families().attach(options, &store, prepared)?;
        let tally = self
            .run_units(&runner, sinks, UnitPlan::All, options)
            .await?;
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
        let tally = runner
            .run(plan, subscribers, |record| {
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
/// environments and operator kinds: what `mosaic resume` runs.
pub fn experiment_of_run(dir: &Path) -> Result<Experiment, RunFailure> {
    let run_dir = RunDir::open(dir)?;
    Ok(Experiment::from_spec(run_dir.manifest().experiment.clone()))
}

/// The first top-level field in which two experiments differ, ignoring how they are run
/// (`parallelism`, `pace_ms`), which never changes results.
fn first_difference(
    recorded: &mosaic_core::ExperimentSpec,
    given: &mosaic_core::ExperimentSpec,
) -> Option<String> {
    let as_map = |spec: &mosaic_core::ExperimentSpec| match serde_json::to_value(spec) {
        Ok(serde_json::Value::Object(mut map)) => {
            map.remove("parallelism");
            map.remove("pace_ms");
            map
        }
        _ => serde_json::Map::new(),
    };
    let (recorded, given) = (as_map(recorded), as_map(given));
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

/// `{name}-{YYYYMMDDTHHMMSS}` in UTC, with the name reduced to id characters.
pub fn default_run_id(name: &str, unix_seconds: u64) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
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
