//! `mosaic report RUN`: statistics of a run's complete episodes; `mosaic report RUN RUN...`:
//! the configurations of several runs side by side.

use super::{CliError, print};
use mosaic_recorder::RunDir;
use mosaic_recorder::report::side_by_side::side_by_side;
use mosaic_recorder::report::style;
use mosaic_recorder::report::{Format, ReportOptions, build_with};
use std::path::{Path, PathBuf};

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

/// Reports on a run, or puts the two-team configurations of several runs side by side.
#[derive(Debug, clap::Args)]
pub(crate) struct ReportArgs {
    /// The run directory. With more than one, the runs side by side: a table of their
    /// two-team configurations (one row per run, or per operator of a run: what each team
    /// plays, win / draw / loss rates and returns with intervals), e.g. MOSAIC's
    /// configuration files run one by one, and of their scores by difficulty α (Base%,
    /// Coord%, Total% per run and α, ALEM's Table 1).
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "md")]
    pub format: ReportFormat,
    /// Also write SVG plots (returns per episode, return distributions) into this directory.
    #[arg(long)]
    pub plots: Option<PathBuf>,
    /// Print only the configuration matrix of two-team games: rows = what team A plays,
    /// columns = what team B plays (with several runs: the same cells as a grid instead of
    /// one row each).
    #[arg(long)]
    pub matrix: bool,
    /// Print only the style of what each agent wrote (ALEM's Tables 11 and 9): its
    /// messages to teammates and its scratchpad entries, by lexical probes (a pass of its
    /// own over the step records).
    #[arg(long, conflicts_with = "matrix")]
    pub lexical: bool,
    /// Also give the optimality gap at this threshold γ (for normalised returns, e.g. 1).
    #[arg(long)]
    pub gamma: Option<f64>,
}

/// Prints the report; writes the plots when asked.
pub(crate) fn run(args: &ReportArgs) -> Result<(), CliError> {
    let format = match args.format {
        ReportFormat::Md => Format::Markdown,
        ReportFormat::Json => Format::Json,
        ReportFormat::Csv => Format::Csv,
    };
    if let [run] = &args.runs[..] {
        return report_one(run, args, format);
    }
    if args.plots.is_some() || args.gamma.is_some() || args.lexical {
        return Err(CliError::Usage(
            "--plots, --gamma and --lexical are for the report of one run".to_owned(),
        ));
    }
    let runs = args
        .runs
        .iter()
        .map(|path| RunDir::open(path))
        .collect::<Result<Vec<_>, _>>()?;
    let tables = side_by_side(&runs)?;
    if args.matrix {
        let matrix = tables.configurations.as_ref().ok_or_else(|| {
            CliError::Usage("no operator of these runs plays a two-team game".to_owned())
        })?;
        return print(&matrix.render(format));
    }
    if tables.is_empty() {
        return Err(CliError::Usage(
            "these runs have neither two-team games nor difficulty levels (`alpha`) to set side by side".to_owned(),
        ));
    }
    print(&tables.render(format))
}

/// The report of one run.
fn report_one(path: &Path, args: &ReportArgs, format: Format) -> Result<(), CliError> {
    let run = RunDir::open(path)?;
    let records = run.records()?;
    if args.lexical {
        return print(&style::build(&records)?.render(format));
    }
    let report = build_with(&run, &records, ReportOptions { gamma: args.gamma })?;
    if args.matrix {
        let matrix = report.matrix.as_ref().ok_or_else(|| {
            CliError::Usage(format!(
                "{}: no operator plays a two-team game, so there is no matrix",
                path.display()
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
