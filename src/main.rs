//! The `mosaic` command line.

mod commands;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Cross-paradigm multi-agent evaluation.
#[derive(Debug, Parser)]
#[command(name = "mosaic", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List runs: id, experiment, status, episodes done/planned, start time.
    Runs(commands::runs::RunsArgs),
    /// Statistics of a run (per operator, team and agent), optionally with SVG plots.
    Report(commands::report::ReportArgs),
    /// Export a run's records as JSON lines or CSV.
    Export(commands::export::ExportArgs),
    /// Compare the trajectories of two runs.
    Compare(commands::compare::CompareArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Runs(args) => commands::runs::run(args),
        Command::Report(args) => commands::report::run(args),
        Command::Export(args) => commands::export::run(args),
        Command::Compare(args) => commands::compare::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(commands::CliError::RunsDiffer) => ExitCode::from(1),
        Err(e) => {
            eprintln!("mosaic: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
