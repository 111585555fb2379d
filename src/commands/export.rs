//! `mosaic export RUN --format jsonl|csv`: a run's records in one stream;
//! `--format parquet`: three Parquet tables (steps, episodes, LLM usage) in a directory.

use super::CliError;
use mosaic_recorder::RunDir;
use mosaic_recorder::export::{ExportFormat, ExportRecords, export};
use std::io::Write;
use std::path::PathBuf;

/// Export formats.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum Format {
    /// JSON lines.
    Jsonl,
    /// CSV with a header.
    Csv,
    /// Parquet: `steps.parquet`, `episodes.parquet` and `llm_usage.parquet` in the
    /// directory given by `--output` (all records; `--records` does not apply).
    #[cfg(feature = "parquet")]
    Parquet,
}

/// Which records.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum Which {
    /// Step records.
    Steps,
    /// Episode roll-ups.
    Episodes,
}

/// Exports the records of a run's complete episodes (in operator, episode, step, agent
/// order).
#[derive(Debug, clap::Args)]
pub(crate) struct ExportArgs {
    /// The run directory.
    pub run: PathBuf,
    /// Output format.
    #[arg(long, value_enum)]
    pub format: Format,
    /// Which records.
    #[arg(long, value_enum, default_value = "steps")]
    pub records: Which,
    /// Write here instead of standard output (for Parquet: the directory, required).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

/// Writes the export.
pub(crate) fn run(args: &ExportArgs) -> Result<(), CliError> {
    let run = RunDir::open(&args.run)?;
    let records = run.records()?;
    let format = match args.format {
        Format::Jsonl => ExportFormat::Jsonl,
        Format::Csv => ExportFormat::Csv,
        #[cfg(feature = "parquet")]
        Format::Parquet => return parquet(args, &records),
    };
    let which = match args.records {
        Which::Steps => ExportRecords::Steps,
        Which::Episodes => ExportRecords::Episodes,
    };
    let mut out: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .map_err(|e| CliError::Recorder(mosaic_recorder::RecorderError::io(path, e)))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    match export(&records, which, format, &mut out) {
        Ok(_) => Ok(()),
        // `| head`: the reader has seen enough.
        Err(mosaic_recorder::RecorderError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// Writes the three Parquet tables into the `--output` directory.
#[cfg(feature = "parquet")]
fn parquet(args: &ExportArgs, records: &mosaic_recorder::Records) -> Result<(), CliError> {
    use mosaic_recorder::parquet::{ParquetExportError, export_parquet};
    let dir = args.output.as_deref().ok_or_else(|| {
        CliError::Usage(
            "--format parquet writes three files: give their directory with --output".into(),
        )
    })?;
    let counts = export_parquet(records, dir).map_err(|e| match e {
        ParquetExportError::Records(e) => CliError::Recorder(e),
        ParquetExportError::Io { path, source } => {
            CliError::Recorder(mosaic_recorder::RecorderError::io(path, source))
        }
        other => CliError::Output(std::io::Error::other(other)),
    })?;
    eprintln!(
        "wrote {}: {} step rows, {} episode rows, {} LLM usage rows",
        dir.display(),
        counts.steps,
        counts.episodes,
        counts.llm_usage
    );
    Ok(())
}
