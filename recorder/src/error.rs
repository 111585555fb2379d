//! Errors of the recorder: every one names the file (and line) it is about.

use std::io;
use std::path::PathBuf;

/// Something went wrong reading or writing a run directory.
#[derive(Debug, thiserror::Error)]
pub enum RecorderError {
    /// A file could not be read or written.
    #[error("{path}: {source}", path = path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The directory has no `run.json`.
    #[error("{path} is not a run directory (it has no run.json)", path = path.display())]
    NotARun {
        /// The directory.
        path: PathBuf,
    },
    /// The directory holds the store of a run whose creation was cut short before its
    /// `run.json` was written (by a mosaic older than atomic run creation): nothing was
    /// recorded in it.
    #[error(
        "{path} holds a run whose creation was cut short (a store but no run.json; nothing was recorded): remove the directory and run the experiment again",
        path = path.display()
    )]
    UnfinishedCreation {
        /// The directory.
        path: PathBuf,
    },
    /// A new run was to be created in a directory that exists and holds other files.
    #[error("{path} exists and is not empty: choose another run id or output directory", path = path.display())]
    NotEmpty {
        /// The directory.
        path: PathBuf,
    },
    /// A run directory already exists where a new run was to be created.
    #[error("{path} already holds a run (run.json exists)", path = path.display())]
    AlreadyExists {
        /// The directory.
        path: PathBuf,
    },
    /// A line (or a whole JSON file) is not a valid record: corrupt, truncated in the middle
    /// of the file, or missing fields.
    #[error("{path}:{line}: malformed record: {message}", path = path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// A record has a schema this version of mosaic cannot read: another record kind, or a
    /// major version it does not know.
    #[error(
        "{path}:{line}: record schema `{found}` is not readable by this mosaic (it reads {expected} at major version {major})",
        path = path.display()
    )]
    UnsupportedSchema {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// The schema tag found.
        found: String,
        /// The schema name expected, e.g. `mosaic.step`.
        expected: String,
        /// The major version this mosaic reads.
        major: u32,
    },
    /// The run directory has no run store.
    #[error("{path}: the run store is missing (expected a store directory here)", path = path.display())]
    StoreMissing {
        /// The expected store directory.
        path: PathBuf,
    },
    /// The run store's creation was cut short (the process died before the store's first
    /// flush): it holds nothing.
    #[error("{path}: the run store's creation was cut short (it holds nothing)", path = path.display())]
    StoreCutShort {
        /// The store directory.
        path: PathBuf,
    },
    /// The run store was written by a newer mosaic with a format this one cannot read.
    #[error(
        "{path}: run store format {found} was written by a newer mosaic ({written_by}); this one reads format {supported}",
        path = path.display()
    )]
    StoreTooNew {
        /// The store directory.
        path: PathBuf,
        /// The format found.
        found: u32,
        /// The format this mosaic reads.
        supported: u32,
        /// The software that wrote it.
        written_by: String,
    },
    /// Another process holds the run store (a run still being written).
    #[error("{path}: the run store is in use by another process (is the run still going?)", path = path.display())]
    StoreLocked {
        /// The store directory.
        path: PathBuf,
    },
    /// The embedded database failed.
    #[error("{path}: run store: {source}", path = path.display())]
    Store {
        /// The store directory.
        path: PathBuf,
        /// The database error.
        #[source]
        source: sled::Error,
    },
    /// The run store holds something that is not what mosaic writes.
    #[error("{path}: corrupt run store: {message}", path = path.display())]
    CorruptStore {
        /// The store directory.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A record does not belong to the run it was written to (unknown operator, episode index
    /// out of range, wrong run id).
    #[error("{path}: record does not fit the run: {message}", path = path.display())]
    Foreign {
        /// The run directory.
        path: PathBuf,
        /// What does not fit.
        message: String,
    },
    /// A subsystem asked for a tree the run store keeps for itself.
    #[error("{path}: tree `{name}` belongs to the run store itself", path = path.display())]
    ReservedTree {
        /// The store directory.
        path: PathBuf,
        /// The tree asked for.
        name: String,
    },
    /// Writing a record failed to serialise (should not happen for mosaic's own records).
    #[error("cannot serialise a record: {0}")]
    Serialise(#[from] serde_json::Error),
}

impl RecorderError {
    /// An I/O error about `path`.
    pub fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    /// Whether the error says this process may not write where it tried: a read-only
    /// mount, or a directory owned by another user. Readers then fall back to the
    /// JSON-lines logs.
    pub fn is_no_write_access(&self) -> bool {
        let io = match self {
            RecorderError::Io { source, .. } => Some(source),
            RecorderError::Store {
                source: sled::Error::Io(source),
                ..
            } => Some(source),
            _ => None,
        };
        io.is_some_and(|e| {
            matches!(
                e.kind(),
                io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
            )
        })
    }

    /// Whether the error is about the input (a file or directory that is not a readable run)
    /// rather than about the machine (disk full, permissions): the command line exits with
    /// code 2 for these.
    pub fn is_bad_input(&self) -> bool {
        match self {
            RecorderError::Io { source, .. } => source.kind() == io::ErrorKind::NotFound,
            RecorderError::Serialise(_) | RecorderError::ReservedTree { .. } => false,
            _ => true,
        }
    }
}

/// Result of the recorder.
pub type Result<T, E = RecorderError> = std::result::Result<T, E>;
