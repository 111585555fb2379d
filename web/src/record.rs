//! Recording manual episodes into a run directory, as `mosaic run` writes one: `run.json`,
//! `steps.jsonl`, `episodes.jsonl` and the store, fed by the telemetry sink
//! ([`mosaic_actors::sink::Sinks`]) that every session of the board reports to.
//!
//! A manual run's plan is what was played: its manifest starts with no episodes and grows
//! as episodes are played (episode `i` enters the plan with its seed when its first record
//! arrives), so a finished manual run is complete, a killed one interrupted at the episode
//! in progress, and `mosaic report` / `mosaic replay` read it like any other run. A run in
//! which nothing was played leaves no directory behind.

use crate::WebError;
use mosaic_actors::session::Subscribers;
use mosaic_actors::sink::Sinks;
use mosaic_core::record::RunManifest;
use mosaic_core::{ExperimentSpec, SeedPlan};
use mosaic_recorder::{Compression, Durability, RecorderError, RunDir, RunStore};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// Where `mosaic serve` records the manual episodes.
#[derive(Clone, Debug)]
pub struct RecordConfig {
    /// The new run's directory; its last component is the run's name in the runs browser.
    pub dir: PathBuf,
    /// The run id written into every record.
    pub run_id: String,
    /// Software versions for the manifest (`mosaic`, record schemas).
    pub versions: serde_json::Map<String, serde_json::Value>,
}

/// The recording of a board: open until [`Recording::close`].
pub(crate) struct Recording {
    run_id: String,
    dir: PathBuf,
    open: Mutex<Option<Open>>,
    /// Why recording stopped, if it failed.
    failure: Mutex<Option<String>>,
}

struct Open {
    run: RunDir,
    store: RunStore,
    sinks: Sinks,
}

/// Locks `mutex`; what these locks guard stays valid after a panic elsewhere.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Recording {
    /// Creates the run directory for `experiment` (nothing played yet) and starts its sink.
    /// Call inside an actix system.
    pub(crate) fn create(
        config: &RecordConfig,
        experiment: &ExperimentSpec,
    ) -> Result<Recording, WebError> {
        let plain = !config.run_id.is_empty()
            && !config.run_id.starts_with('.')
            && !config.run_id.contains(['/', '\\']);
        if !plain {
            return Err(WebError::Record(format!(
                "`{}` cannot name a run (no `/`, `\\` or leading `.`)",
                config.run_id
            )));
        }
        let mut experiment = experiment.clone();
        experiment.episodes = 0;
        experiment.seeds = SeedPlan::List { seeds: Vec::new() };
        let manifest = RunManifest::new(config.run_id.clone(), experiment, config.versions.clone());
        let (run, store, sinks) =
            Sinks::create_run(&config.dir, &manifest, Durability::Sync, Compression::None)
                .map_err(|e| WebError::Record(e.to_string()))?;
        Ok(Recording {
            run_id: config.run_id.clone(),
            dir: config.dir.clone(),
            open: Mutex::new(Some(Open { run, store, sinks })),
            failure: Mutex::new(None),
        })
    }

    /// The run id of the records.
    pub(crate) fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The run directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The run's name in the runs browser.
    pub(crate) fn name(&self) -> String {
        self.dir
            .file_name()
            .map_or_else(|| self.run_id.clone(), |n| n.to_string_lossy().into_owned())
    }

    /// The sink, as subscribers of a session.
    pub(crate) fn subscribers(&self) -> Subscribers {
        lock(&self.open)
            .as_ref()
            .map(|open| Subscribers {
                // Runs played by hand are not resumed.
                checkpoints: Vec::new(),
                ..open.sinks.subscribers()
            })
            .unwrap_or_default()
    }

    /// Episodes in the run's plan so far (those played).
    pub(crate) fn episodes(&self) -> u32 {
        lock(&self.open)
            .as_ref()
            .map_or(0, |open| open.run.manifest().experiment.episodes)
    }

    /// Why recording stopped, if it failed.
    pub(crate) fn failure(&self) -> Option<String> {
        if let Some(failure) = lock(&self.failure).clone() {
            return Some(failure);
        }
        lock(&self.open)
            .as_ref()
            .and_then(|open| open.sinks.failure())
            .map(|f| format!("recording failed: {f}"))
    }

    /// A record of episode `index`, played with `seed`, was emitted: the plan grows to
    /// cover it. Records arrive in episode order (a board begins episode `i + 1` only once
    /// every session has emitted the records of episode `i`).
    pub(crate) fn saw(&self, index: u32, seed: u64) {
        let mut open = lock(&self.open);
        let Some(Open { run, store, .. }) = open.as_mut() else {
            return;
        };
        if let Err(error) = plan_episode(run, store, index, seed) {
            tracing::error!(%error, "cannot write the manual run's manifest");
            lock(&self.failure).get_or_insert(format!("recording failed: {error}"));
        }
    }

    /// Makes every record durable and closes the run; removes the run directory if nothing
    /// was played. Call once the sessions have ended their episodes.
    pub(crate) async fn close(&self) -> Result<(), WebError> {
        let Some(Open {
            mut run,
            mut store,
            sinks,
        }) = lock(&self.open).take()
        else {
            return Ok(());
        };
        let closed = sinks.close().await;
        // The board notes episodes as their records pass by; the records have the last word.
        let settled = settle_plan(&mut run, &mut store);
        drop(store);
        if let (Ok(()), Ok(false)) = (&closed, &settled) {
            remove_run(run.path());
        }
        closed.map_err(|e| WebError::Record(e.to_string()))?;
        settled.map_err(|e| WebError::Record(e.to_string()))?;
        match lock(&self.failure).clone() {
            Some(failure) => Err(WebError::Record(failure)),
            None => Ok(()),
        }
    }
}

/// Grows the plan of `run` to cover episode `index`, played with `seed`.
fn plan_episode(
    run: &mut RunDir,
    store: &mut RunStore,
    index: u32,
    seed: u64,
) -> Result<(), RecorderError> {
    let mut manifest = run.manifest().clone();
    if index < manifest.experiment.episodes {
        return Ok(());
    }
    // An index no session recorded (only after a session failed) keeps the next seed.
    manifest.seeds.resize(index as usize + 1, seed);
    manifest.experiment.episodes = index + 1;
    manifest.experiment.seeds = SeedPlan::List {
        seeds: manifest.seeds.clone(),
    };
    run.update_manifest(store, manifest)
}

/// Makes the plan of a closed run cover every episode recorded; answers whether the run
/// holds any record.
fn settle_plan(run: &mut RunDir, store: &mut RunStore) -> Result<bool, RecorderError> {
    let recorded: Vec<(u32, u64)> = store
        .complete_episodes()
        .map(|e| e.map(|e| (e.episode_index, e.seed)))
        .collect::<Result<_, _>>()?;
    for (index, seed) in &recorded {
        plan_episode(run, store, *index, *seed)?;
    }
    Ok(!recorded.is_empty() || !store.incomplete_units_with_records()?.is_empty())
}

/// Removes a run directory this server created and left empty.
fn remove_run(path: &Path) {
    if let Err(error) = std::fs::remove_dir_all(path) {
        tracing::warn!(path = %path.display(), %error, "cannot remove the empty manual run");
    }
}
