//! What can go wrong in policies, checkpoints and training.

use std::path::PathBuf;

/// An error of the RL stack.
#[derive(Debug, thiserror::Error)]
pub enum RlError {
    /// A tensor operation failed (a shape that does not fit, a corrupt weight file).
    #[error("tensor: {0}")]
    Tensor(#[from] candle_core::Error),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// A manifest or state file is not what it should be.
    #[error("{path}: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: serde_json::Error,
    },
    /// A checkpoint does not fit the environment it is used in.
    #[error(
        "checkpoint {path}: field `{field}` differs: the checkpoint has {checkpoint}, the environment has {environment}"
    )]
    Mismatch {
        /// The manifest.
        path: PathBuf,
        /// The manifest field that differs, e.g. `obs_shape`.
        field: &'static str,
        /// Its value in the checkpoint.
        checkpoint: String,
        /// What the environment has.
        environment: String,
    },
    /// A checkpoint's manifest and weights do not belong together.
    #[error("checkpoint {path}: {problem}")]
    Corrupt {
        /// The manifest or weight file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// An ONNX policy that cannot be used: a file tract cannot read, a model whose inputs
    /// or outputs do not fit its manifest, a failed inference.
    #[cfg(feature = "onnx")]
    #[error("ONNX policy {path}: {problem}")]
    Onnx {
        /// The model file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// An observation the policy cannot read (no symbolic tensor, another length).
    #[error("observation of agent {agent}: {problem}")]
    Observation {
        /// The agent index.
        agent: usize,
        /// What is wrong.
        problem: String,
    },
    /// The training file or builder is not a valid training configuration.
    #[error("{0}")]
    Spec(#[from] mosaic_core::SpecError),
    /// The environment failed during training.
    #[error("environment: {0}")]
    Env(#[from] mosaic_core::EnvError),
    /// The run directory could not be written.
    #[error(transparent)]
    Recorder(#[from] mosaic_recorder::RecorderError),
    /// A policy state saved by [`crate::RlPolicy`] could not be restored.
    #[error("policy state: {0}")]
    State(String),
}

impl RlError {
    /// An I/O failure on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        RlError::Io {
            path: path.into(),
            source,
        }
    }

    /// Whether the error is bad input (a configuration, a checkpoint that does not fit):
    /// exit code 2 on the command line, 1 for everything else.
    pub fn is_bad_input(&self) -> bool {
        match self {
            RlError::Mismatch { .. } | RlError::Corrupt { .. } | RlError::Spec(_) => true,
            RlError::Json { .. } | RlError::Observation { .. } => true,
            #[cfg(feature = "onnx")]
            RlError::Onnx { .. } => true,
            RlError::Recorder(e) => e.is_bad_input(),
            _ => false,
        }
    }
}

/// Results of the RL stack.
pub type Result<T> = std::result::Result<T, RlError>;
