//! Run store, JSON-lines records, reports, comparison and replay checks for mosaic.
//!
//! A run lives in a directory (see `docs/run-directory.md`):
//!
//! - `run.json`: the [`RunManifest`](mosaic_core::record::RunManifest);
//! - `steps.jsonl`, `episodes.jsonl`: the records, the interchange format ([`jsonl`]);
//! - `store/`: the embedded run store ([`store`]) with the completion index that says
//!   which units (operator × episode) are done and what is left.
//!
//! Records reach both through a [`RecordWriter`] per destination; telemetry sink actors
//! drive them. Readers check every record's schema ([`schema`]).
//!
//! ```
//! use mosaic_recorder::{RecordWriter, RunDir, Durability, synthetic};
//! let dir = tempfile::tempdir().unwrap();
//! let manifest = synthetic::manifest("r1", &["a"], 2, 100);
//! let (run, store) = RunDir::create(&dir.path().join("r1"), &manifest).unwrap();
//! let mut writers: Vec<Box<dyn RecordWriter>> =
//!     vec![Box::new(run.jsonl_writer(Durability::Sync).unwrap()), Box::new(store.writer())];
//! for episode in synthetic::run_episodes(&manifest, 5, 2) {
//!     for w in writers.iter_mut() {
//!         episode.steps.iter().try_for_each(|s| w.write_step(s)).unwrap();
//!         w.write_episode(&episode.record).unwrap();
//!     }
//!     writers.iter_mut().try_for_each(|w| w.mark_complete(&episode.record)).unwrap();
//! }
//! assert!(store.remaining_units().unwrap().is_empty());
//! assert!(run.check_consistency(&store).unwrap().is_empty());
//! ```

#![warn(missing_docs)]

pub mod error;
pub mod jsonl;
pub mod run_dir;
pub mod schema;
pub mod store;
pub mod synthetic;
pub mod writer;

pub use error::{RecorderError, Result};
pub use jsonl::{Durability, JsonlReader, JsonlWriter, TornTail};
pub use run_dir::{Records, RunDir, RunStatus, RunSummary, list_runs};
pub use store::{Checkpoint, RunStore, StoreWriter, Unit, UnitDone};
pub use writer::{JsonlRunWriter, RecordWriter};
