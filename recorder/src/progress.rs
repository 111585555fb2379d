//! `progress.json`: how many episode records a run's `episodes.jsonl` holds, so that listing
//! runs ([`crate::list_runs`]) needs neither their stores (slow to open) nor their logs.
//!
//! The writer of a run saves it after handing episode lines to the operating system (at
//! most every [`SAVE_EVERY`], and when the run closes), replacing the file atomically. It
//! counts the complete lines of `episodes.jsonl` and the file's length then. A reader
//! trusts the count only while `episodes.jsonl` still has exactly that length: any line
//! written since, a resume's rewrite, a file cut by a crash makes it stale, and the reader
//! falls back to the store or the log. Each episode line of a run stands for a unit that is
//! complete once the store has caught up with the log (its steps reach the operating
//! system before it), so a fresh count is the number of complete units the store would
//! report.

use crate::error::{RecorderError, Result};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The progress file of a run directory.
pub const PROGRESS_FILE: &str = "progress.json";
/// Its schema tag.
const SCHEMA: &str = "mosaic.progress/1";
/// How often a running run saves its progress at most.
pub const SAVE_EVERY: Duration = Duration::from_millis(500);

/// The content of `progress.json`.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Progress {
    schema: String,
    /// Complete lines of `episodes.jsonl`.
    episode_lines: u64,
    /// Its length in bytes when they were counted.
    episodes_bytes: u64,
}

/// Keeps a run's `progress.json` (see the module docs).
#[derive(Debug)]
pub(crate) struct ProgressWriter {
    path: PathBuf,
    episodes: PathBuf,
    lines: u64,
    saved: Option<Instant>,
}

impl ProgressWriter {
    /// The progress of the run whose `episodes.jsonl` is `episodes` (counted here: it may
    /// already hold lines, in a resumed run), saved into `progress.json` beside it.
    pub(crate) fn open(episodes: &Path) -> Result<Self> {
        let io = |e| RecorderError::io(episodes, e);
        let mut file = std::fs::File::open(episodes).map_err(io)?;
        let mut buf = vec![0; 256 * 1024];
        let mut lines = 0;
        loop {
            let n = file.read(&mut buf).map_err(io)?;
            if n == 0 {
                break;
            }
            lines += buf[..n].iter().filter(|b| **b == b'\n').count() as u64;
        }
        Ok(Self {
            path: crate::run_dir::parent_dir(episodes).join(PROGRESS_FILE),
            episodes: episodes.to_owned(),
            lines,
            saved: None,
        })
    }

    /// Counts an episode line written.
    pub(crate) fn episode_written(&mut self) {
        self.lines += 1;
    }

    /// Saves the count, if [`SAVE_EVERY`] has passed since the last save or `now`. Call only
    /// once the episode lines counted have been handed to the operating system.
    pub(crate) fn save(&mut self, now: bool) -> Result<()> {
        if !now && self.saved.is_some_and(|at| at.elapsed() < SAVE_EVERY) {
            return Ok(());
        }
        let episodes_bytes = std::fs::metadata(&self.episodes)
            .map_err(|e| RecorderError::io(&self.episodes, e))?
            .len();
        let progress = Progress {
            schema: SCHEMA.to_owned(),
            episode_lines: self.lines,
            episodes_bytes,
        };
        // Not synced: a stale or lost file only sends readers the slow way.
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec(&progress)?)
            .and_then(|()| std::fs::rename(&tmp, &self.path))
            .map_err(|e| RecorderError::io(&self.path, e))?;
        self.saved = Some(Instant::now());
        Ok(())
    }
}

/// The episode records in the run directory `dir`'s `episodes.jsonl`, if its
/// `progress.json` is there and still fresh (`None` otherwise: read the store or the log).
pub(crate) fn episode_lines(dir: &Path) -> Option<u64> {
    let bytes = std::fs::read(dir.join(PROGRESS_FILE)).ok()?;
    let progress: Progress = serde_json::from_slice(&bytes).ok()?;
    let readable = crate::schema::readable(&progress.schema, SCHEMA).is_ok();
    let length = std::fs::metadata(dir.join(crate::run_dir::EPISODES_FILE))
        .ok()?
        .len();
    (readable && length == progress.episodes_bytes).then_some(progress.episode_lines)
}

/// Whether the run directory `dir` has a fresh `progress.json` (listing it needs no store).
pub fn is_fresh(dir: &Path) -> bool {
    episode_lines(dir).is_some()
}
