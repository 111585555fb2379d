//! `mosaic run EXPERIMENT` and `mosaic resume RUN_DIR`: run an experiment headless into a
//! run directory, or finish one whose process died; both print the run's summary.

use super::{CliError, print};
use mosaic::Experiment;
use mosaic::experiment_file::ExperimentFile;
use mosaic::run::{RunFailure, RunOptions, RunOutcome};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

/// Runs an experiment file.
#[derive(clap::Args)]
pub(crate) struct RunArgs {
    /// The experiment file (TOML, or JSON by extension).
    pub experiment: PathBuf,
    /// Parent directory of the run directory.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Run id (default: the experiment name and the UTC start time).
    #[arg(long)]
    pub run_id: Option<String>,
    /// Delay after each step, in milliseconds (overrides the file).
    #[arg(long)]
    pub pace_ms: Option<u64>,
    /// Episodes running at once (overrides the file).
    #[arg(long)]
    pub parallelism: Option<usize>,
    /// Run only shard K (from 0) of N: a contiguous range of the units, into
    /// `OUT/{run_id}.shard-K-of-N`; the run id defaults to the experiment's name and
    /// identity, the same in every shard. Merge the shards with `mosaic merge`.
    #[arg(long, value_name = "K/N", conflicts_with = "pool")]
    pub shard: Option<mosaic_core::record::Shard>,
    /// Take units one at a time from this pool directory, shared with any number of other
    /// processes (machines of different speeds, preemptible ones), into
    /// `OUT/{run_id}.pool-{worker}`. A unit whose claim is not renewed within the lease is
    /// offered again. Merge the workers' parts with `mosaic merge`.
    #[arg(long, value_name = "DIR")]
    pub pool: Option<PathBuf>,
    /// This worker's name in the pool (default: host name and process id).
    #[arg(long, requires = "pool")]
    pub worker: Option<String>,
    /// Seconds a pool claim holds without renewal (renewed every third of it).
    #[arg(long, requires = "pool", value_name = "SECONDS", default_value = "60", value_parser = parse_lease)]
    pub lease: Duration,
    /// Write the step records compressed, as zstd frames in `steps.jsonl.zst` (about 30
    /// times smaller; every command reads both kinds).
    #[arg(long)]
    pub compress: bool,
    /// How far an episode's records must have gone before it counts as done: `sync`
    /// (fsynced: survives a power loss) or `flush` (handed to the operating system:
    /// survives a kill of mosaic; cheaper where fsync is slow).
    #[arg(long, value_enum, default_value = "sync")]
    pub(crate) durability: DurabilityArg,
    /// Exit with code 3 (after the summary) when every decision of some LLM or VLM agent
    /// failed or missed its deadline: the run then measured the fallback action, not the
    /// model.
    #[arg(long)]
    pub fail_on_model_failure: bool,
    /// Only check the experiment: build every environment and agent once (settings,
    /// checkpoints against their environment, model backends' settings), print what would
    /// run and exit, recording nothing.
    #[arg(long)]
    pub check: bool,
    #[command(flatten)]
    pub families: FamilyArgs,
}

/// `--durability`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum DurabilityArg {
    /// Synced to the disk (fsync).
    Sync,
    /// Handed to the operating system.
    Flush,
}

/// Finishes a run whose process died.
#[derive(clap::Args)]
pub(crate) struct ResumeArgs {
    /// The run directory (as printed by `mosaic run` and listed by `mosaic runs`).
    pub run: PathBuf,
    /// Episodes running at once (overrides the run's experiment; never changes results).
    #[arg(long)]
    pub parallelism: Option<usize>,
    /// Exit with code 3 (after the summary) when every decision of some LLM or VLM agent
    /// failed or missed its deadline: the run then measured the fallback action, not the
    /// model.
    #[arg(long)]
    pub fail_on_model_failure: bool,
    #[command(flatten)]
    pub families: FamilyArgs,
}

/// The options of the operator families built in (with feature `llm`: the LLM response
/// cache).
#[derive(clap::Args)]
pub(crate) struct FamilyArgs {
    #[cfg(feature = "llm")]
    #[command(flatten)]
    llm_cache: LlmCacheArgs,
}

impl FamilyArgs {
    /// `options` with these set.
    fn apply(self, options: RunOptions) -> RunOptions {
        RunOptions {
            #[cfg(feature = "llm")]
            llm_cache: self.llm_cache.cache(),
            ..options
        }
    }
}

#[cfg(feature = "llm")]
#[derive(clap::Args)]
struct LlmCacheArgs {
    /// LLM response cache: record (keep every answer in the run store), replay (answer
    /// only from the run given by --llm-cache-from; call no model) or off.
    #[arg(long, value_enum, default_value = "record")]
    llm_cache: mosaic::llm_cache::LlmCacheMode,
    /// The recorded run whose LLM response cache is replayed (or, when recording, reused).
    #[arg(long, value_name = "RUN_DIR")]
    llm_cache_from: Option<PathBuf>,
}

#[cfg(feature = "llm")]
impl LlmCacheArgs {
    fn cache(self) -> mosaic::llm_cache::LlmCache {
        mosaic::llm_cache::LlmCache {
            mode: self.llm_cache,
            from: self.llm_cache_from,
        }
    }
}

/// A lease in seconds: positive and finite.
fn parse_lease(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .filter(|s| *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| format!("`{text}` is not a lease: give a positive number of seconds"))
}

/// Runs the experiment and prints its summary.
// Without the `llm` feature every field of `RunOptions` is set here; the update fills the
// feature's fields when it is on.
#[cfg_attr(not(feature = "llm"), allow(clippy::needless_update))]
pub(crate) fn run(args: RunArgs) -> Result<(), CliError> {
    let file = ExperimentFile::load(&args.experiment)?;
    let mut experiment = Experiment::from_spec(file.spec.clone());
    if let Some(pace) = args.pace_ms {
        experiment.spec_mut().pace_ms = pace;
    }
    if let Some(lanes) = args.parallelism {
        experiment.spec_mut().parallelism = lanes.max(1);
    }
    if args.check {
        return check(&file, &experiment);
    }
    let fail_on_model_failure = args.fail_on_model_failure;
    let options = args.families.apply(RunOptions {
        out: args.out,
        run_id: args.run_id,
        shard: args.shard,
        pool: args.pool.map(|dir| mosaic::run::PoolOptions {
            dir,
            worker: args.worker.unwrap_or_else(mosaic::run::default_worker),
            lease: args.lease,
        }),
        progress: std::io::stderr().is_terminal(),
        durability: match args.durability {
            DurabilityArg::Sync => mosaic_recorder::Durability::Sync,
            DurabilityArg::Flush => mosaic_recorder::Durability::Flush,
        },
        steps_log: if args.compress {
            mosaic_recorder::Compression::Zstd
        } else {
            mosaic_recorder::Compression::None
        },
        ..RunOptions::default()
    });
    match experiment.run(&options) {
        // Located in the file, like every other error of the experiment file.
        Err(RunFailure::Spec(error)) => Err(file.error_at(&error).into()),
        result => summarise(result, fail_on_model_failure),
    }
}

/// `mosaic run --check`: validates the experiment and says what a run would play.
fn check(file: &ExperimentFile, experiment: &Experiment) -> Result<(), CliError> {
    experiment
        .validate()
        .map_err(|error| CliError::from(file.error_at(&error)))?;
    let spec = experiment.spec();
    let operators: Vec<&str> = spec.operators.iter().map(|op| op.id.as_str()).collect();
    print(&format!(
        "{}: ok: `{}`, {} episodes of {} operator(s): {}\n",
        file.path.display(),
        spec.name,
        spec.episodes,
        operators.len(),
        operators.join(", ")
    ))
}

/// Finishes the run and prints its summary.
pub(crate) fn resume(args: ResumeArgs) -> Result<(), CliError> {
    let mut experiment = mosaic::run::experiment_of_run(&args.run)?;
    if let Some(lanes) = args.parallelism {
        experiment.spec_mut().parallelism = lanes.max(1);
    }
    let options = args.families.apply(RunOptions {
        progress: std::io::stderr().is_terminal(),
        ..RunOptions::default()
    });
    summarise(
        experiment.resume(&args.run, &options),
        args.fail_on_model_failure,
    )
}

/// Prints a finished run's summary table; with `fail_on_model_failure`, a run in which some
/// language-model agent never decided is then an error.
fn summarise(
    result: Result<RunOutcome, RunFailure>,
    fail_on_model_failure: bool,
) -> Result<(), CliError> {
    let outcome = result?;
    let table = mosaic::summary::table(&outcome).map_err(CliError::Summary)?;
    print(&table)?;
    if fail_on_model_failure && outcome.tally.failed_models().next().is_some() {
        return Err(CliError::ModelFailure);
    }
    Ok(())
}
