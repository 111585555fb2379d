//! The LLM response cache of a run (`mosaic run --llm-cache record|replay|off`; cargo
//! feature `llm`).
//!
//! - `record` (the default): every LLM request and how it ended (the answer, the failure,
//!   or that the decision deadline passed first) is kept in the `llm-cache` tree of the
//!   run's own store, so the run directory carries what it takes to re-run it without the
//!   model. A request repeated within the run is answered from it.
//! - `replay`: no model is called, no local model server is started and no API key is
//!   read. The cache of the run named by `--llm-cache-from` is copied into the new run's
//!   store and answers every request: answers, failures and missed deadlines come back as
//!   recorded, so the new run's records equal the recorded ones (volatile fields aside).
//!   A request the cache does not hold is taken as the default action, recorded as an
//!   error, and fails the run with an error naming the agent and the request.
//! - `off`: nothing is kept or read.
//!
//! `record` with `--llm-cache-from RUN` starts from that run's cache: requests it answered
//! are answered again from it, the others go to the model (and are kept too).
//!
//! ```no_run
//! use mosaic::Experiment;
//! use mosaic::experiment_file::ExperimentFile;
//! use mosaic::llm_cache::{LlmCache, LlmCacheMode};
//! use mosaic::run::RunOptions;
//! let file = ExperimentFile::load("examples/experiments/demo.toml".as_ref()).unwrap();
//! let options = RunOptions {
//!     llm_cache: LlmCache {
//!         mode: LlmCacheMode::Replay,
//!         from: Some("runs/demo-1".into()),
//!     },
//!     ..RunOptions::default()
//! };
//! let replayed = Experiment::from_spec(file.spec).run(&options).unwrap();
//! ```

use mosaic_llm::LlmResources;
use mosaic_llm::backend::BackendError;
use mosaic_llm::decider::ReplayMiss;
use mosaic_llm::layers::{CacheMode, SledCache};
use mosaic_recorder::{RecorderError, RunDir, RunStore};
use std::path::PathBuf;
use std::sync::Arc;

/// The run store tree holding the response cache.
pub const CACHE_TREE: &str = "llm-cache";

/// How a run uses the LLM response cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LlmCacheMode {
    /// Keep every request and its outcome in the run's store.
    #[default]
    Record,
    /// Answer every request from a recorded run's cache; call no model.
    Replay,
    /// No cache.
    Off,
}

/// The cache options of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LlmCache {
    /// Record, replay or off.
    pub mode: LlmCacheMode,
    /// The run directory whose cache is replayed (`replay`) or reused (`record`).
    pub from: Option<PathBuf>,
}

/// The cache options could not be followed.
#[derive(Debug, thiserror::Error)]
pub enum LlmCacheError {
    /// Replay without a recorded run.
    #[error("--llm-cache replay needs the recorded run to replay: --llm-cache-from RUN_DIR")]
    NoSource,
    /// A recorded run given while the cache is off.
    #[error("--llm-cache off reads no cache: leave out --llm-cache-from")]
    SourceUnused,
    /// The recorded run's store could not be read.
    #[error("the LLM response cache of {path}: {source}", path = path.display())]
    Source {
        /// The run directory.
        path: PathBuf,
        /// Why.
        source: RecorderError,
    },
    /// The run's own cache could not be opened.
    #[error("the LLM response cache of this run: {0}")]
    Store(RecorderError),
    /// Copying the recorded cache failed.
    #[error("copying the LLM response cache of {path}: {source}", path = path.display())]
    Copy {
        /// The recorded run.
        path: PathBuf,
        /// Why.
        source: BackendError,
    },
    /// Requests of a replay were not in the recorded cache.
    #[error(
        "replay: {first}; {count} request(s) missed and were recorded as errors with the default action (was the experiment, a prompt template or the model changed since the recording?)"
    )]
    Missed {
        /// How many requests missed.
        count: u64,
        /// The first of them.
        first: ReplayMiss,
    },
}

impl LlmCacheError {
    /// Whether the error is about the input (options, the recorded run): the command line
    /// exits with code 2 for these.
    pub fn is_bad_input(&self) -> bool {
        match self {
            LlmCacheError::NoSource | LlmCacheError::SourceUnused => true,
            LlmCacheError::Source { source, .. } => source.is_bad_input(),
            LlmCacheError::Store(_) | LlmCacheError::Copy { .. } | LlmCacheError::Missed { .. } => {
                false
            }
        }
    }
}

impl LlmCache {
    /// Checks the options and opens the recorded run's cache, if one is named. In replay
    /// mode `llm` answers from it at once, so that checking the experiment starts no model
    /// server. Call before the experiment is validated.
    pub fn prepare(&self, llm: &LlmResources) -> Result<Option<SledCache>, LlmCacheError> {
        let source = match (&self.from, self.mode) {
            (None, LlmCacheMode::Replay) => return Err(LlmCacheError::NoSource),
            (Some(_), LlmCacheMode::Off) => return Err(LlmCacheError::SourceUnused),
            (None, _) => None,
            (Some(path), _) => {
                let source = |source| LlmCacheError::Source {
                    path: path.clone(),
                    source,
                };
                let store = RunDir::open(path)
                    .and_then(|run| run.store())
                    .map_err(source)?;
                Some(SledCache::new(
                    store.extension_tree(CACHE_TREE).map_err(source)?,
                ))
            }
        };
        if let (Some(source), LlmCacheMode::Replay) = (&source, self.mode) {
            llm.use_cache(Some((Arc::new(source.clone()), CacheMode::ReplayOnly)));
        }
        Ok(source)
    }

    /// Points `llm` at the cache in the new run's `store`, first filled from `source` (what
    /// [`LlmCache::prepare`] opened). Call before the run's operators are built.
    pub fn attach(
        &self,
        llm: &LlmResources,
        store: &RunStore,
        source: Option<SledCache>,
    ) -> Result<(), LlmCacheError> {
        let mode = match self.mode {
            LlmCacheMode::Off => {
                llm.use_cache(None);
                return Ok(());
            }
            LlmCacheMode::Record => CacheMode::ReadWrite,
            LlmCacheMode::Replay => CacheMode::ReplayOnly,
        };
        let cache = SledCache::new(
            store
                .extension_tree(CACHE_TREE)
                .map_err(LlmCacheError::Store)?,
        );
        if let (Some(source), Some(path)) = (source, &self.from) {
            let copied = cache
                .extend_from(&source)
                .map_err(|source| LlmCacheError::Copy {
                    path: path.clone(),
                    source,
                })?;
            tracing::info!(
                requests = copied,
                "LLM response cache copied from {}",
                path.display()
            );
        }
        llm.use_cache(Some((Arc::new(cache), mode)));
        Ok(())
    }

    /// The run's replay misses, as an error (call when the run has finished).
    pub fn check(&self, llm: &LlmResources) -> Result<(), LlmCacheError> {
        match llm.replay_misses() {
            (count, Some(first)) => Err(LlmCacheError::Missed { count, first }),
            (_, None) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_that_contradict_each_other_are_refused() {
        let llm = LlmResources::new();
        let replay = LlmCache {
            mode: LlmCacheMode::Replay,
            from: None,
        };
        let error = replay.prepare(&llm).unwrap_err();
        assert!(matches!(error, LlmCacheError::NoSource) && error.is_bad_input());
        let off = LlmCache {
            mode: LlmCacheMode::Off,
            from: Some("runs/x".into()),
        };
        assert!(matches!(
            off.prepare(&llm).unwrap_err(),
            LlmCacheError::SourceUnused
        ));
        let missing = LlmCache {
            mode: LlmCacheMode::Record,
            from: Some("/nonexistent/run".into()),
        };
        let error = missing.prepare(&llm).unwrap_err();
        assert!(error.to_string().contains("/nonexistent/run"), "{error}");
        assert!(error.is_bad_input());
        assert!(LlmCache::default().prepare(&llm).unwrap().is_none());
    }
}
