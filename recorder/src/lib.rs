//! Run store, JSON-lines records, reports, comparison and replay checks for mosaic.
//!
//! A run lives in a directory (see `docs/run-directory.md`):
//!
//! - `run.json`: the [`RunManifest`](mosaic_core::record::RunManifest);
//! - `steps.jsonl` (or `steps.jsonl.zst`), `episodes.jsonl`: the records, the interchange
//!   format ([`jsonl`]);
//! - `progress.json`: the episode lines logged, for listing runs quickly ([`progress`]);
//! - `store/`: the embedded run store ([`store`]) with the completion index that says
//!   which units (operator × episode) are done and what is left.
//!
//! Records reach both through a [`RunWriter`], which telemetry sink actors drive.
//! Readers check every record's schema ([`schema`]).
//!
//! ```
//! use mosaic_recorder::{RunDir, Durability, synthetic};
//! let dir = tempfile::tempdir().unwrap();
//! let manifest = synthetic::manifest("r1", &["a"], 2, 100);
//! let (run, store) = RunDir::create(&dir.path().join("r1"), &manifest).unwrap();
//! let mut writer = run.writer(&store, Durability::Sync).unwrap();
//! for episode in synthetic::run_episodes(&manifest, 5, 2) {
//!     episode.steps.iter().try_for_each(|s| writer.write_step(s)).unwrap();
//!     writer.write_episode(&episode.record).unwrap();
//!     writer.commit().unwrap();
//!     writer.mark_complete(&episode.record).unwrap();
//! }
//! writer.close().unwrap();
//! assert!(store.remaining_units().unwrap().is_empty());
//! assert!(run.check_consistency(&store).unwrap().is_empty());
//! ```

#![warn(missing_docs)]

pub mod aggregate;
pub mod compare;
pub mod error;
pub mod export;
mod json_walk;
pub mod jsonl;
pub mod lexical;
pub mod merge;
pub mod paired;
#[cfg(feature = "parquet")]
pub mod parquet;
mod paths;
mod plan;
pub mod plot;
pub mod pool;
pub mod progress;
pub mod replay;
pub mod report;
pub mod run_dir;
pub mod schema;
pub mod stats;
mod step_line;
pub mod store;
pub mod synthetic;
mod unit_lines;
pub mod writer;

pub use error::{RecorderError, Result};
pub use jsonl::{Compression, Durability, JsonlReader, JsonlWriter, PendingSync, TornTail};
pub use run_dir::{Records, RunDir, RunStatus, RunSummary, list_runs};
pub use store::{RunStore, StoreWriter, Unit, UnitDone};
pub use writer::RunWriter;
