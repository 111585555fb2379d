//! `progress.json`: how many episode records a run's `episodes.jsonl` holds, so that listing
//! runs ([`crate::list_runs`]) needs neither their stores (slow to open) nor their logs.
//!
//! The writer of a run saves it after handing episode lines to the operating system (at
//! most every [`SAVE_EVERY`], the first time [`SAVE_EVERY`] after it started, and when the
//! run closes), replacing the file atomically. It
//! counts the complete lines of `episodes.jsonl` and the file's length, modification time
//! and a hash of its ends then. A reader trusts the count only while `episodes.jsonl` still
//! matches all three: any line written since, a resume's rewrite, a file cut by a crash or
//! edited, or copied without its times, makes it stale, and the reader falls back to the
//! store or the log. Each episode line of a run stands for a unit that is
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
    /// Its modification time then, in nanoseconds since the Unix epoch.
    episodes_modified_ns: u64,
    /// SHA-256 (hex) of its first and last [`ENDS`] bytes then: file times are coarse (a few
    /// milliseconds), so an edit right after a save may keep length and time.
    episodes_ends: String,
}

/// Bytes at each end of `episodes.jsonl` that [`Progress::episodes_ends`] covers.
const ENDS: u64 = 4096;

/// The length, modification time (ns since the Unix epoch) and hash of the ends of the file
/// at `path`.
fn stamp(path: &Path) -> std::io::Result<(u64, u64, String)> {
    use sha2::{Digest, Sha256};
    use std::io::{Seek, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    let modified = meta
        .modified()?
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    let len = meta.len();
    let mut ends = Vec::with_capacity(2 * ENDS as usize);
    (&mut file).take(ENDS).read_to_end(&mut ends)?;
    file.seek(SeekFrom::Start(len.saturating_sub(ENDS)))?;
    file.take(ENDS).read_to_end(&mut ends)?;
    let hash = Sha256::digest(&ends)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((len, modified, hash))
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
            path: crate::paths::parent_dir(episodes).join(PROGRESS_FILE),
            episodes: episodes.to_owned(),
            lines,
            // The first save waits too: short runs save only when they close, and no
            // commit of a run's first episodes waits for file operations.
            saved: Some(Instant::now()),
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
        let (episodes_bytes, episodes_modified_ns, episodes_ends) =
            stamp(&self.episodes).map_err(|e| RecorderError::io(&self.episodes, e))?;
        let progress = Progress {
            schema: SCHEMA.to_owned(),
            episode_lines: self.lines,
            episodes_bytes,
            episodes_modified_ns,
            episodes_ends,
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

/// The episode records in the run's `episodes.jsonl` at `episodes`, if the
/// `progress.json` beside it is there and still fresh (`None` otherwise: read the store or
/// the log).
pub(crate) fn episode_lines(episodes: &Path) -> Option<u64> {
    let path = crate::paths::parent_dir(episodes).join(PROGRESS_FILE);
    let bytes = std::fs::read(path).ok()?;
    let progress: Progress = serde_json::from_slice(&bytes).ok()?;
    let readable = crate::schema::readable(&progress.schema, SCHEMA).is_ok();
    let (bytes, modified, ends) = stamp(episodes).ok()?;
    let fresh = bytes == progress.episodes_bytes
        && modified == progress.episodes_modified_ns
        && ends == progress.episodes_ends;
    (readable && fresh).then_some(progress.episode_lines)
}

/// Whether the run whose `episodes.jsonl` is at `episodes` has a fresh `progress.json`
/// beside it (listing it needs no store).
pub fn is_fresh(episodes: &Path) -> bool {
    episode_lines(episodes).is_some()
}
