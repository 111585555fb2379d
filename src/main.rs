//! The `mosaic` command line: a thin layer over the `mosaic` library. Each command lives
//! in its own module under `commands/`; this file parses and dispatches.

mod commands;

use clap::{Parser, Subcommand};
use commands::CliError;
use std::io::IsTerminal;
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
    Run(commands::run::RunArgs),
    /// Finish a run whose process died: keep its complete episodes, continue the unfinished
    /// ones from their last checkpoints, run the rest.
    Resume(commands::run::ResumeArgs),
    /// Watch an experiment's operators side by side in the browser (Step All, Reset All,
    /// human players) and browse recorded runs.
    Serve(commands::serve::ServeArgs),
    /// List the registered environments and their settings.
    Envs,
    /// List the registered decider kinds (what decides for an agent: random, scripted, rl,
    /// llm, vlm, human, worker, ...) and their settings.
    #[command(alias = "operators")]
    Deciders,
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
    let result = match Cli::parse().command {
        Command::Run(args) => commands::run::run(args),
        Command::Resume(args) => commands::run::resume(args),
        Command::Serve(args) => commands::serve::run(args),
        Command::Envs => commands::list::envs(),
        Command::Deciders => commands::list::deciders(),
        Command::Runs(args) => commands::runs::run(&args),
        Command::Report(args) => commands::report::run(&args),
        Command::Export(args) => commands::export::run(&args),
        Command::Compare(args) => commands::compare::run(&args),
        Command::Merge(args) => commands::merge::run(&args),
        Command::Cluster(args) => commands::cluster::run(&args),
        Command::Replay(args) => commands::replay::run(&args),
        #[cfg(feature = "rl")]
        Command::Train(args) => commands::train::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // Already reported on standard output.
        Err(CliError::RunsDiffer) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}
