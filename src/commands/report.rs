//! `mosaic report RUN`: statistics of a run's complete episodes.

use super::{CliError, print};
use mosaic_recorder::RunDir;
use mosaic_recorder::report::{Format, ReportOptions, build_with};
use std::path::PathBuf;

/// Output format of a report.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum ReportFormat {
    /// Markdown tables.
    Md,
    /// JSON.
    Json,
    /// Tidy CSV (operator, group, name, statistic, value).
    Csv,
}

/// Reports on a run.
#[derive(Debug, clap::Args)]
pub(crate) struct ReportArgs {
    /// The run directory.
    pub run: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "md")]
    pub format: ReportFormat,
    /// Also write SVG plots (returns per episode, return distributions) into this directory.
    #[arg(long)]
    pub plots: Option<PathBuf>,
    /// Print only the configuration matrix of two-team games: rows = what team A plays,
    /// columns = what team B plays.
    #[arg(long)]
    pub matrix: bool,
    /// Also give the optimality gap at this threshold γ (for normalised returns, e.g. 1).
    #[arg(long)]
    pub gamma: Option<f64>,
}

/// Prints the report; writes the plots when asked.
pub(crate) fn run(args: &ReportArgs) -> Result<(), CliError> {
    let run = RunDir::open(&args.run)?;
    let records = run.records()?;
    let report = build_with(&run, &records, ReportOptions { gamma: args.gamma })?;
    let format = match args.format {
        ReportFormat::Md => Format::Markdown,
        ReportFormat::Json => Format::Json,
        ReportFormat::Csv => Format::Csv,
    };
    if args.matrix {
        let matrix = report.matrix.as_ref().ok_or_else(|| {
            CliError::Usage(format!(
                "{}: no operator plays a two-team game, so there is no matrix",
                args.run.display()
            ))
        })?;
        print(&matrix.render(format))?;
    } else {
        print(&report.render(format))?;
    }
    if let Some(dir) = &args.plots {
        for path in mosaic_recorder::plot::write_plots(&report, dir)? {
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(())
}
