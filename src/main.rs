//! The `mosaic` command line: a thin layer over the `mosaic` library.

mod commands;

use clap::{Parser, Subcommand};
use mosaic::Experiment;
use mosaic::experiment_file::ExperimentFile;
use mosaic::run::RunOptions;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "mosaic",
    version,
    about = "Cross-paradigm multi-agent evaluation"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an experiment file headless into a run directory.
    Run(RunArgs),
    /// Finish a run whose process died: keep its complete episodes, continue the unfinished
    /// ones from their last checkpoints, run the rest.
    Resume(ResumeArgs),
    /// Watch an experiment's operators side by side in the browser (Step All, Reset All,
    /// human players) and browse recorded runs.
    Serve(ServeArgs),
    /// List the registered environments and their settings.
    Envs,
    /// List the registered decider kinds and their settings.
    Operators,
    /// List runs: id, experiment, status, episodes done/planned, shard, start time.
    Runs(commands::runs::RunsArgs),
    /// Statistics of a run (per operator, team and agent; paired by seed; rliable
    /// aggregates; the configuration matrix), optionally with SVG plots.
    Report(commands::report::ReportArgs),
    /// Export a run's records as JSON lines, CSV or Parquet.
    Export(commands::export::ExportArgs),
    /// Compare two runs (same trajectories? then paired statistics per operator), or two
    /// operators of one run or two, seed by seed.
    Compare(commands::compare::CompareArgs),
    /// Write (and submit) cluster job files running a run's shards and their merge.
    Cluster(commands::cluster::ClusterArgs),
    /// Merge the finished shards of a run (`mosaic run --shard K/N`) into one run directory.
    Merge(commands::merge::MergeArgs),
    /// Replay an episode from its seed and recorded actions, checking it against the records.
    Replay(commands::replay::ReplayArgs),
    /// Train RL policies (PPO) on a native environment into a run directory, or resume a
    /// killed training run.
    #[cfg(feature = "rl")]
    Train(commands::train::TrainArgs),
}

#[derive(clap::Args)]
struct RunArgs {
    /// The experiment file (TOML, or JSON by extension).
    experiment: PathBuf,
    /// Parent directory of the run directory.
    #[arg(long, default_value = "runs")]
    out: PathBuf,
    /// Run id (default: the experiment name and the UTC start time).
    #[arg(long)]
    run_id: Option<String>,
    /// Delay after each step, in milliseconds (overrides the file).
    #[arg(long)]
    pace_ms: Option<u64>,
    /// Episodes running at once (overrides the file).
    #[arg(long)]
    parallelism: Option<usize>,
    /// Run only shard K (from 0) of N: a contiguous range of the units, into
    /// `OUT/{run_id}.shard-K-of-N`; the run id defaults to the experiment's name and
    /// identity, the same in every shard. Merge the shards with `mosaic merge`.
    #[arg(long, value_name = "K/N", conflicts_with = "pool")]
    shard: Option<mosaic_core::record::Shard>,
    /// Take units one at a time from this pool directory, shared with any number of other
    /// processes (machines of different speeds, preemptible ones), into
    /// `OUT/{run_id}.pool-{worker}`. A unit whose claim is not renewed within the lease is
    /// offered again. Merge the workers' parts with `mosaic merge`.
    #[arg(long, value_name = "DIR")]
    pool: Option<PathBuf>,
    /// This worker's name in the pool (default: host name and process id).
    #[arg(long, requires = "pool")]
    worker: Option<String>,
    /// Seconds a pool claim holds without renewal (renewed every third of it).
    #[arg(long, requires = "pool", value_name = "SECONDS", default_value = "60", value_parser = parse_lease)]
    lease: std::time::Duration,
    #[command(flatten)]
    families: FamilyArgs,
}

/// The options of the operator families built in (with feature `llm`: the LLM response
/// cache).
#[derive(clap::Args)]
struct FamilyArgs {
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

#[derive(clap::Args)]
struct ResumeArgs {
    /// The run directory (as printed by `mosaic run` and listed by `mosaic runs`).
    run: PathBuf,
    /// Episodes running at once (overrides the run's experiment; never changes results).
    #[arg(long)]
    parallelism: Option<usize>,
    #[command(flatten)]
    families: FamilyArgs,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// The experiment file whose operator configurations are shown side by side.
    experiment: Option<PathBuf>,
    /// Address to listen on; anything but a loopback address needs a token.
    #[arg(long, default_value = mosaic_web::DEFAULT_BIND)]
    bind: SocketAddr,
    /// The token every request must carry (default: the MOSAIC_TOKEN variable).
    #[arg(long)]
    token: Option<String>,
    /// Directory of recorded runs: the runs browser lists them, and the experiment's
    /// episodes are recorded into a new run here (default: `runs`).
    #[arg(long)]
    runs: Option<PathBuf>,
    /// Do not record the experiment's episodes.
    #[arg(long)]
    no_record: bool,
    /// Run id of the recording (default: the experiment name, `manual` and the UTC start
    /// time).
    #[arg(long, conflicts_with = "no_record")]
    run_id: Option<String>,
}

/// A lease in seconds: positive and finite.
fn parse_lease(text: &str) -> Result<std::time::Duration, String> {
    text.parse::<f64>()
        .ok()
        .filter(|s| *s > 0.0)
        .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| format!("`{text}` is not a lease: give a positive number of seconds"))
}

/// The log filter unless `MOSAIC_LOG` says otherwise: warnings, but none of the store
/// library's own lines: every store failure reaches mosaic as an error that it reports
/// once, naming the file, where sled would log it again for each buffer and tree (after a
/// full disk, a dozen lines).
const QUIET_LOG: &str = "warn,sled=off";

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MOSAIC_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(QUIET_LOG)),
        )
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, never into a log file or pipe.
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run(args),
        Command::Resume(args) => resume(args),
        Command::Serve(args) => serve(args),
        Command::Envs => {
            print!(
                "{}",
                mosaic::listing::envs(&mosaic::experiment::default_envs())
            );
            ExitCode::SUCCESS
        }
        Command::Operators => {
            print!(
                "{}",
                mosaic::listing::operators(&mosaic::experiment::default_deciders(
                    &mosaic::families::Families::default(),
                ))
            );
            ExitCode::SUCCESS
        }
        Command::Runs(args) => finish(commands::runs::run(&args)),
        Command::Report(args) => finish(commands::report::run(&args)),
        Command::Export(args) => finish(commands::export::run(&args)),
        Command::Compare(args) => finish(commands::compare::run(&args)),
        Command::Merge(args) => finish(commands::merge::run(&args)),
        Command::Cluster(args) => finish(commands::cluster::run(&args)),
        Command::Replay(args) => finish(commands::replay::run(&args)),
        #[cfg(feature = "rl")]
        Command::Train(args) => finish(commands::train::run(&args)),
    }
}

fn finish(result: Result<(), commands::CliError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(commands::CliError::RunsDiffer) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

fn run(args: RunArgs) -> ExitCode {
    let file = match ExperimentFile::load(&args.experiment) {
        Ok(file) => file,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let mut experiment = Experiment::from_spec(file.spec.clone());
    if let Some(pace) = args.pace_ms {
        experiment.spec_mut().pace_ms = pace;
    }
    if let Some(lanes) = args.parallelism {
        experiment.spec_mut().parallelism = lanes.max(1);
    }
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
        ..RunOptions::default()
    });
    match experiment.run(&options) {
        Err(mosaic::run::RunFailure::Spec(error)) => {
            eprintln!("error: {}", file.error_at(&error));
            ExitCode::from(2)
        }
        result => summarise(result),
    }
}

fn resume(args: ResumeArgs) -> ExitCode {
    let mut experiment = match mosaic::run::experiment_of_run(&args.run) {
        Ok(experiment) => experiment,
        Err(failure) => return summarise(Err(failure)),
    };
    if let Some(lanes) = args.parallelism {
        experiment.spec_mut().parallelism = lanes.max(1);
    }
    let options = args.families.apply(RunOptions {
        progress: std::io::stderr().is_terminal(),
        ..RunOptions::default()
    });
    summarise(experiment.resume(&args.run, &options))
}

/// Prints a finished run's summary table, or the failure.
fn summarise(result: Result<mosaic::run::RunOutcome, mosaic::run::RunFailure>) -> ExitCode {
    match result {
        Ok(outcome) => match mosaic::summary::table(&outcome) {
            Ok(table) => {
                print!("{table}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("error: the run finished but its summary failed: {error}");
                ExitCode::from(1)
            }
        },
        Err(failure) => {
            eprintln!("error: {failure}");
            ExitCode::from(failure.exit_code())
        }
    }
}

fn serve(args: ServeArgs) -> ExitCode {
    let families = mosaic::families::Families::default();
    let mut config = mosaic_web::ServeConfig::new(
        mosaic::experiment::default_envs(),
        mosaic::experiment::default_deciders(&families),
    );
    let file = match args
        .experiment
        .as_deref()
        .map(ExperimentFile::load)
        .transpose()
    {
        Ok(file) => file,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    config.experiment = file.as_ref().map(|f| f.spec.clone());
    config.bind = args.bind;
    config.token = mosaic_web::resolve_token(args.token);
    config.record = match &file {
        Some(file) if !args.no_record => {
            let runs = args.runs.clone().unwrap_or_else(|| PathBuf::from("runs"));
            if let Err(error) = std::fs::create_dir_all(&runs) {
                eprintln!("error: runs directory {}: {error}", runs.display());
                return ExitCode::from(2);
            }
            Some(mosaic::manual::record_config(
                &file.spec,
                &runs,
                args.run_id,
            ))
        }
        _ => None,
    };
    config.runs_dir = args
        .runs
        .or_else(|| Some(PathBuf::from("runs")).filter(|d| d.is_dir()));
    let served = actix_rt::System::new().block_on(async move {
        let served = match mosaic_web::start(config).await {
            Ok(server) => {
                eprintln!("mosaic: serving on {} (Ctrl-C stops)", server.login_url());
                if let Some((run_id, dir)) = server.recording() {
                    eprintln!("mosaic: recording run {run_id} into {}", dir.display());
                }
                server.run().await
            }
            Err(error) => Err(error),
        };
        // A local model server started for LLM agents stops with us.
        families.shutdown().await;
        served
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(mosaic_web::WebError::Experiment(error)) => {
            match &file {
                Some(file) => eprintln!("error: {}", file.error_at(&error)),
                None => eprintln!("error: {error}"),
            }
            ExitCode::from(2)
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(2)
        }
    }
}
