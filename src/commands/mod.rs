//! Command-line commands, one module each.

pub(crate) mod cluster;
pub(crate) mod compare;
pub(crate) mod export;
pub(crate) mod list;
pub(crate) mod merge;
pub(crate) mod replay;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod runs;
pub(crate) mod serve;
#[cfg(feature = "rl")]
pub(crate) mod train;

use mosaic::experiment_file::FileError;
use mosaic::run::RunFailure;
use mosaic_recorder::RecorderError;
use mosaic_recorder::replay::ReplayError;
use std::io::Write;
use std::path::PathBuf;

/// Why a command failed; decides the exit code.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// The experiment file cannot be read or does not fit the registries (the message
    /// names the file and, where known, the line).
    #[error(transparent)]
    Experiment(#[from] FileError),
    /// `run`, `resume`: the run could not start, or stopped with an error (what was
    /// recorded before is kept).
    #[error(transparent)]
    Run(#[from] RunFailure),
    /// `run`, `resume`: the run finished, but its summary could not be read back.
    #[error("the run finished but its summary failed: {0}")]
    Summary(RecorderError),
    /// `run`, `resume` with `--fail-on-model-failure`: every decision of some language-model
    /// agent failed (the summary's warnings name it).
    #[error(
        "every decision of a language-model agent failed (see the warnings above); exit code 3 as --fail-on-model-failure asks"
    )]
    ModelFailure,
    /// `serve`: the server could not start or stopped with an error.
    #[error(transparent)]
    Serve(mosaic_web::WebError),
    /// `serve`: the runs directory could not be created.
    #[error("runs directory {}: {source}", path.display())]
    RunsDir {
        /// The directory given.
        path: PathBuf,
        /// Why it could not be created.
        source: std::io::Error,
    },
    /// Reading or writing a run failed.
    #[error(transparent)]
    Recorder(#[from] RecorderError),
    /// `merge`: the shards do not make one finished run, or the merged run could not be
    /// written.
    #[error(transparent)]
    Merge(#[from] mosaic_recorder::merge::MergeError),
    /// `cluster`: the job files could not be written or submitted.
    #[error(transparent)]
    Cluster(#[from] cluster::ClusterError),
    /// The arguments make no sense together.
    #[error("{0}")]
    Usage(String),
    /// Writing the output failed.
    #[error("cannot write output: {0}")]
    Output(std::io::Error),
    /// `replay`: the episode could not be replayed, or the replay differs from the records.
    #[error("replay failed: {0}")]
    Replay(ReplayError),
    /// `compare`: the runs differ (already reported on stdout).
    #[error("the runs differ")]
    RunsDiffer,
    /// `train`: the training failed.
    #[cfg(feature = "rl")]
    #[error(transparent)]
    Train(#[from] mosaic_rl::RlError),
}

impl CliError {
    /// 2 for bad input (a file or directory that is not a readable run, bad arguments,
    /// records the environment cannot take), 1 otherwise (runs that differ, a replay that
    /// differs from the records, a failing disk).
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::Experiment(_) | CliError::Serve(_) | CliError::RunsDir { .. } => 2,
            CliError::Run(failure) => failure.exit_code(),
            CliError::ModelFailure => 3,
            CliError::Recorder(e) if e.is_bad_input() => 2,
            CliError::Usage(_) => 2,
            CliError::Merge(e) if e.is_bad_input() => 2,
            CliError::Cluster(e) if e.is_bad_input() => 2,
            CliError::Replay(ReplayError::NoSteps { .. } | ReplayError::UnknownAgent { .. }) => 2,
            #[cfg(feature = "rl")]
            CliError::Train(e) if e.is_bad_input() => 2,
            _ => 1,
        }
    }
}

/// Writes `text` to standard output; a closed pipe (`| head`) is not an error.
pub(crate) fn print(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::Output(e)),
        _ => Ok(()),
    }
}
