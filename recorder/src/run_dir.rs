//! A run directory: `run.json`, `steps.jsonl`, `episodes.jsonl` and the store in `store/`.

use crate::error::{RecorderError, Result};
use crate::jsonl::{Compression, Durability, JsonlReader, JsonlWriter};
use crate::paths::{parent_dir, sync_parent};
use crate::schema::{Record, readable};
use crate::store::{RunStore, Unit};
use crate::writer::RunWriter;
use mosaic_core::record::{EpisodeCheckpoint, EpisodeRecord, RunManifest, StepRecord};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The manifest file of a run directory.
pub const MANIFEST_FILE: &str = "run.json";
/// The step records, one JSON object per line (`steps.jsonl.zst` when compressed, see
/// [`RunDir::create_with`]).
pub const STEPS_FILE: &str = "steps.jsonl";
/// The episode roll-ups, one JSON object per line.
pub const EPISODES_FILE: &str = "episodes.jsonl";
/// The run store's directory.
pub const STORE_DIR: &str = "store";
/// The process groups the run's `mosaic` started and that may still be running (removed
/// when the run ends; left behind by a killed `mosaic`, whose next resume reaps them).
pub const PROCESSES_FILE: &str = "processes.json";

/// Where a run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// A process is writing it (its store is locked).
    Running,
    /// Every planned unit is complete.
    Complete,
    /// Stopped before the end (killed, crashed, or stopped on an error): resumable.
    Interrupted,
}

impl RunStatus {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
        }
    }
}

/// One line of `mosaic runs`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSummary {
    /// The run directory.
    pub path: PathBuf,
    /// The run id.
    pub run_id: String,
    /// The experiment's name.
    pub experiment: String,
    /// Where it stands.
    pub status: RunStatus,
    /// Complete units (for a running run: episode records written so far).
    pub done: usize,
    /// Planned units (operators × episodes).
    pub planned: usize,
    /// Unix time in milliseconds when it started.
    pub started: u64,
    /// The part of a larger run it holds (a shard, a pool worker's units), if it is one.
    pub part: Option<mosaic_core::record::RunPart>,
}

/// A run directory with its manifest read.
#[derive(Clone, Debug)]
pub struct RunDir {
    path: PathBuf,
    manifest: RunManifest,
}

impl RunDir {
    /// Creates the directory of a new run (parents too): `run.json`, empty record files and
    /// the store. Fails if `path` already holds a run, or a run whose creation was cut
    /// short (see [`RecorderError::UnfinishedCreation`]).
    ///
    /// The directory appears whole or not at all: `run.json` and the record files are
    /// written in a hidden staging directory beside `path`, which is then renamed to
    /// `path`. The store is created last, in place (sled keeps its files open by path, so
    /// it cannot be renamed while open); a run cut short before its store exists has
    /// recorded nothing, and [`RunDir::store`] creates the missing store then.
    pub fn create(path: &Path, manifest: &RunManifest) -> Result<(RunDir, RunStore)> {
        Self::create_with(path, manifest, Compression::None)
    }

    /// [`RunDir::create`] with the step log stored with `steps`: compressed, it is
    /// `steps.jsonl.zst` (and stays so when the run is resumed).
    pub fn create_with(
        path: &Path,
        manifest: &RunManifest,
        steps: Compression,
    ) -> Result<(RunDir, RunStore)> {
        let io = |p: &Path, e| RecorderError::io(p, e);
        if path.join(MANIFEST_FILE).exists() {
            return Err(RecorderError::AlreadyExists {
                path: path.to_owned(),
            });
        }
        if path.join(STORE_DIR).exists() {
            return Err(RecorderError::UnfinishedCreation {
                path: path.to_owned(),
            });
        }
        let parent = parent_dir(path);
        fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
        let staging = staging_dir(path);
        if staging.exists() {
            fs::remove_dir_all(&staging).map_err(|e| io(&staging, e))?;
        }
        let staged = Self::stage(&staging, manifest, steps).and_then(|()| {
            fs::rename(&staging, path).map_err(|e| match e.kind() {
                std::io::ErrorKind::DirectoryNotEmpty | std::io::ErrorKind::AlreadyExists => {
                    RecorderError::NotEmpty {
                        path: path.to_owned(),
                    }
                }
                _ => io(path, e),
            })
        });
        if let Err(e) = staged {
            // Best effort: the staging directory is hidden and replaced by the next try.
            let _ = fs::remove_dir_all(&staging);
            return Err(e);
        }
        sync_parent(path)?;
        let store = RunStore::create(&path.join(STORE_DIR), manifest)?;
        Ok((
            RunDir {
                path: path.to_owned(),
                manifest: manifest.clone(),
            },
            store,
        ))
    }

    /// Writes the record files and `run.json` of a new run into `staging`.
    fn stage(staging: &Path, manifest: &RunManifest, steps: Compression) -> Result<()> {
        fs::create_dir(staging).map_err(|e| RecorderError::io(staging, e))?;
        for file in [&steps.file_name(STEPS_FILE), EPISODES_FILE] {
            let p = staging.join(file);
            File::create(&p)
                .and_then(|f| f.sync_all())
                .map_err(|e| RecorderError::io(&p, e))?;
        }
        write_atomically(
            &staging.join(MANIFEST_FILE),
            &serde_json::to_vec_pretty(manifest)?,
        )
    }

    /// Opens an existing run directory (reads and checks `run.json`; the store is opened by
    /// [`RunDir::store`]).
    pub fn open(path: &Path) -> Result<RunDir> {
        let manifest_path = path.join(MANIFEST_FILE);
        let bytes = match fs::read(&manifest_path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if path.join(STORE_DIR).is_dir() {
                    return Err(RecorderError::UnfinishedCreation {
                        path: path.to_owned(),
                    });
                }
                if path.is_dir() {
                    return Err(RecorderError::NotARun {
                        path: path.to_owned(),
                    });
                }
                return Err(RecorderError::io(path, e));
            }
            Err(e) => return Err(RecorderError::io(&manifest_path, e)),
        };
        let manifest = parse_document::<RunManifest>(&manifest_path, &bytes)?;
        Ok(RunDir {
            path: path.to_owned(),
            manifest,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The manifest.
    pub fn manifest(&self) -> &RunManifest {
        &self.manifest
    }

    /// The step log: `steps.jsonl`, or `steps.jsonl.zst` for a run recorded compressed.
    pub fn steps_path(&self) -> PathBuf {
        let compressed = self.path.join(Compression::Zstd.file_name(STEPS_FILE));
        if compressed.exists() {
            compressed
        } else {
            self.path.join(STEPS_FILE)
        }
    }

    /// `episodes.jsonl`.
    pub fn episodes_path(&self) -> PathBuf {
        self.path.join(EPISODES_FILE)
    }

    /// The store directory.
    pub fn store_path(&self) -> PathBuf {
        self.path.join(STORE_DIR)
    }

    /// Units planned: operators × episodes, or a shard's share of them.
    pub fn planned(&self) -> usize {
        let share = crate::plan::planned_range(&self.manifest);
        (share.end - share.start) as usize
    }

    /// Replaces the manifest, in `run.json` and in `store` (the run's open store): for runs
    /// whose plan grows as they go, like a manual run whose episodes are known only as they
    /// are played. The run id and the operators cannot change, since records are keyed by
    /// them.
    pub fn update_manifest(&mut self, store: &mut RunStore, manifest: RunManifest) -> Result<()> {
        let operators = |m: &RunManifest| -> Vec<String> {
            m.experiment
                .operators
                .iter()
                .map(|o| o.id.clone())
                .collect()
        };
        if manifest.run_id != self.manifest.run_id
            || operators(&manifest) != operators(&self.manifest)
        {
            return Err(RecorderError::Foreign {
                path: self.path.join(MANIFEST_FILE),
                message: format!(
                    "a new manifest for run `{}` may not change its run id or its operators",
                    self.manifest.run_id
                ),
            });
        }
        // The store first, as at creation: run.json is the last word.
        store.put_manifest(&manifest)?;
        write_atomically(
            &self.path.join(MANIFEST_FILE),
            &serde_json::to_vec_pretty(&manifest)?,
        )?;
        self.manifest = manifest;
        Ok(())
    }

    /// Opens the store (exclusively), first bringing it up to date with the JSON-lines log
    /// if a crash left it behind (see [`RunDir::catch_up`]).
    ///
    /// A run whose creation stopped between `run.json` and its store, or in the middle of
    /// the store's creation, has recorded nothing; its store is created (anew) here. A
    /// missing store beside records is an error.
    pub fn store(&self) -> Result<RunStore> {
        let store = match RunStore::open(&self.store_path()) {
            // Stopped before the store existed, or killed while it was being created:
            // nothing was recorded, so the store starts anew.
            Err(RecorderError::StoreMissing { .. } | RecorderError::StoreCutShort { .. })
                if self.logs_are_empty()? =>
            {
                let path = self.store_path();
                if path.exists() {
                    fs::remove_dir_all(&path).map_err(|e| RecorderError::io(&path, e))?;
                }
                RunStore::create(&path, &self.manifest)?
            }
            opened => opened?,
        };
        if store.manifest().run_id != self.manifest.run_id {
            return Err(RecorderError::CorruptStore {
                path: self.store_path(),
                message: format!(
                    "store of run `{}` in the directory of run `{}`",
                    store.manifest().run_id,
                    self.manifest.run_id
                ),
            });
        }
        self.catch_up(&store)?;
        Ok(store)
    }

    /// Imports into `store` the units that are complete in the JSON-lines log but not in
    /// the store's index (the store is synced lazily; a crash can leave it behind the log).
    /// A unit is complete in the log when it has an episode line and step lines for every
    /// one of the episode's steps. Returns the units imported.
    pub fn catch_up(&self, store: &RunStore) -> Result<Vec<Unit>> {
        let mut missing: BTreeMap<Unit, EpisodeRecord> = BTreeMap::new();
        let mut lines = self.episode_lines()?;
        for record in lines.by_ref() {
            let record = record?;
            let unit = Unit::new(record.operator_id.clone(), record.episode_index);
            if !store.is_complete(&unit)? {
                missing.insert(unit, record);
            }
        }
        if missing.is_empty() {
            return Ok(Vec::new());
        }
        for unit in missing.keys() {
            store.discard(unit)?;
        }
        let mut wanted = Keep::default();
        for unit in missing.keys() {
            wanted.insert(&unit.operator_id, unit.episode_index);
        }
        // Distinct steps seen per unit, to check that every step is there.
        let mut steps_seen: HashMap<(String, u32), (u32, Option<u32>)> = HashMap::new();
        let mut writer = store.writer();
        for_each_line(&self.steps_path(), |number, line| {
            let probe = StepProbe::parse(&self.steps_path(), number, line)?;
            if !wanted.contains(&probe.operator_id, probe.episode_index) {
                return Ok(());
            }
            let key = writer.unit_key(&probe.run_id, &probe.operator_id, probe.episode_index)?;
            writer.append_line(key, probe.step_index, line)?;
            let seen = steps_seen
                .entry((probe.operator_id, probe.episode_index))
                .or_default();
            if seen.1 != Some(probe.step_index) {
                seen.0 += 1;
                seen.1 = Some(probe.step_index);
            }
            Ok(())
        })?;
        let mut imported = Vec::new();
        for (unit, record) in missing {
            let seen = steps_seen
                .get(&(unit.operator_id.clone(), unit.episode_index))
                .map_or(0, |s| s.0);
            writer.write_episode(&record, None)?;
            if seen == record.steps {
                writer.mark_complete(&record)?;
                imported.push(unit);
            }
        }
        store.flush()?;
        Ok(imported)
    }

    /// The writer of this run's records (appending to the JSON-lines files after cutting
    /// off a torn tail left by a crash).
    pub fn writer(&self, store: &RunStore, durability: Durability) -> Result<RunWriter> {
        RunWriter::new(
            JsonlWriter::open(&self.steps_path())?,
            JsonlWriter::open(&self.episodes_path())?,
            store.writer(),
            durability,
        )
    }

    fn logs_are_empty(&self) -> Result<bool> {
        for path in [self.steps_path(), self.episodes_path()] {
            match fs::metadata(&path) {
                Ok(meta) if meta.len() > 0 => {}
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(RecorderError::io(&path, e)),
            }
            // Bytes are not yet a record: a kill in the middle of the first write leaves a
            // torn line (or frame) alone, which the reader cuts off. Any whole line counts,
            // readable or not.
            let mut first = Vec::new();
            std::io::BufRead::read_until(&mut crate::jsonl::open_lines(&path)?, b'\n', &mut first)
                .map_err(|e| RecorderError::io(&path, e))?;
            if first.ends_with(b"\n") {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Streams `steps.jsonl`.
    pub fn step_lines(&self) -> Result<JsonlReader<StepRecord>> {
        JsonlReader::open(&self.steps_path())
    }

    /// Streams `episodes.jsonl`.
    pub fn episode_lines(&self) -> Result<JsonlReader<EpisodeRecord>> {
        JsonlReader::open(&self.episodes_path())
    }

    /// Status and progress. Works while another process writes the run: its store is then
    /// locked, and the episode records in `episodes.jsonl` are counted instead.
    ///
    /// A run whose `progress.json` is fresh (see [`crate::progress`]) is summarised from it
    /// without opening its store.
    pub fn summary(&self) -> Result<RunSummary> {
        match self.quick_summary()? {
            Some(summary) => Ok(summary),
            None => self.summary_with(&self.records()?),
        }
    }

    /// The summary from `progress.json`, if it is fresh: what [`RunDir::summary_with`]
    /// answers, without the store.
    fn quick_summary(&self) -> Result<Option<RunSummary>> {
        let Some(done) = crate::progress::episode_lines(&self.episodes_path()) else {
            return Ok(None);
        };
        let done = usize::try_from(done).unwrap_or(usize::MAX);
        let planned = self.planned();
        let db = self.store_path().join("db");
        if !db.is_file() {
            // A store missing or cut short: the slow way says so.
            return Ok(None);
        }
        let status = if crate::store::is_locked(&db)? {
            RunStatus::Running
        } else {
            let complete = match self.manifest.shard.as_ref().map(|tag| &tag.part) {
                Some(mosaic_core::record::RunPart::Pool { pool, .. }) => {
                    crate::pool::Pool::done_count(pool).is_ok_and(|n| n >= planned)
                }
                _ => done >= planned,
            };
            if complete {
                RunStatus::Complete
            } else {
                RunStatus::Interrupted
            }
        };
        Ok(Some(RunSummary {
            path: self.path.clone(),
            run_id: self.manifest.run_id.clone(),
            experiment: self.manifest.experiment.name.clone(),
            status,
            done,
            planned,
            started: self.manifest.started,
            part: self.manifest.shard.as_ref().map(|tag| tag.part.clone()),
        }))
    }

    /// Status and progress from records already opened with [`RunDir::records`].
    pub fn summary_with(&self, records: &Records) -> Result<RunSummary> {
        let (done, writing) = match records {
            Records::Store(store) => (store.completed_count(), false),
            Records::Logs {
                episodes, writing, ..
            } => (distinct_units(episodes), *writing),
        };
        let status = if writing {
            RunStatus::Running
        } else if self.is_finished(done) {
            RunStatus::Complete
        } else {
            RunStatus::Interrupted
        };
        Ok(RunSummary {
            path: self.path.clone(),
            run_id: self.manifest.run_id.clone(),
            experiment: self.manifest.experiment.name.clone(),
            status,
            done,
            planned: self.planned(),
            started: self.manifest.started,
            part: self.manifest.shard.as_ref().map(|tag| tag.part.clone()),
        })
    }

    /// Whether a run with `done` complete units has nothing left to do: every planned unit
    /// is complete (a pool worker's part: every unit of the pool is).
    fn is_finished(&self, done: usize) -> bool {
        let planned = self.planned();
        match self.manifest.shard.as_ref().map(|tag| &tag.part) {
            Some(mosaic_core::record::RunPart::Pool { pool, .. }) => {
                crate::pool::Pool::done_count(pool).is_ok_and(|n| n >= planned)
            }
            _ => done >= planned,
        }
    }

    /// The records of the complete units, for reading. A finished run, a run another
    /// process is writing (its store is locked) and a run this process may not write (a
    /// read-only mount, another user's run) are read from the JSON-lines files (units with
    /// an episode record), without opening the store: sled opens its files for writing, and
    /// reading must leave a run as it was. An interrupted run is read from its store, which
    /// first catches up with the files (see [`RunDir::store`]).
    pub fn records(&self) -> Result<Records> {
        let store_file = self.store_path().join("db");
        // Without its database file, the store says what the run is (one whose creation
        // was cut short gets its store now; records without a store are an error).
        if store_file.is_file() {
            let writing = crate::store::is_locked(&store_file)?;
            let episodes = self.logged_episodes()?;
            if writing || self.is_finished(distinct_units(&episodes)) {
                return Ok(self.logs(episodes, writing));
            }
        }
        match self.store() {
            Ok(store) => Ok(Records::Store(Box::new(store))),
            Err(RecorderError::StoreLocked { .. }) => Ok(self.logs(self.logged_episodes()?, true)),
            Err(e) if e.is_no_write_access() => Ok(self.logs(self.logged_episodes()?, false)),
            Err(e) => Err(e),
        }
    }

    fn logs(&self, episodes: Vec<EpisodeRecord>, writing: bool) -> Records {
        Records::Logs {
            steps_path: self.steps_path(),
            index: StepIndex::new(&self.manifest, &episodes),
            episodes,
            writing,
        }
    }

    /// The episode records of `episodes.jsonl`, in the store's order (operator position in
    /// the experiment, episode index).
    fn logged_episodes(&self) -> Result<Vec<EpisodeRecord>> {
        let position: HashMap<&str, usize> = self
            .manifest
            .experiment
            .operators
            .iter()
            .enumerate()
            .map(|(i, op)| (op.id.as_str(), i))
            .collect();
        let mut episodes = Vec::new();
        let mut lines = self.episode_lines()?;
        for record in lines.by_ref() {
            episodes.push(record?);
        }
        episodes.sort_by_key(|e| {
            (
                position.get(e.operator_id.as_str()).copied(),
                e.episode_index,
            )
        });
        Ok(episodes)
    }

    /// Prepares an interrupted run for resuming. An unfinished episode with a checkpoint
    /// keeps its step records before the checkpoint's step (it continues from there); every
    /// other record of units not marked complete is dropped (from the store and from both
    /// JSON-lines files, including a torn tail), so that re-running them duplicates
    /// nothing. Complete units are kept byte for byte.
    ///
    /// A checkpoint is used only when the log holds every step before it (with
    /// [`Durability::Flush`], a power loss can lose steps a checkpoint already counted);
    /// otherwise the episode runs again from its seed.
    pub fn discard_incomplete(&self, store: &RunStore) -> Result<Discarded> {
        let mut discarded = Discarded::default();
        let mut resumable = Vec::new();
        for unit in store.incomplete_units_with_records()? {
            match store.checkpoint(&unit)? {
                Some(checkpoint) if checkpoint.step_index > 0 => resumable.push(checkpoint),
                _ => {
                    discarded.store_step_records += store.discard(&unit)?;
                    discarded.units.push(unit);
                }
            }
        }
        // Every checkpointed unit keeps its steps before the checkpoint, if the log has them
        // all: one pass keeps and re-imports them and counts the steps it saw; a unit found
        // short starts again from its seed, which takes a second pass (rare: only after a
        // power loss with `durability = "flush"`).
        let mut keep = Keep::complete(store)?;
        for checkpoint in &resumable {
            let unit = Unit::new(checkpoint.operator_id.clone(), checkpoint.episode_index);
            discarded.store_step_records += store.discard_steps(&unit)?;
            keep.prefix(&unit, checkpoint.step_index);
        }
        let mut seen: HashMap<Unit, BTreeSet<u32>> = HashMap::new();
        let mut writer = store.writer();
        discarded.step_lines = rewrite_keeping(&self.steps_path(), &keep, true, |probe, line| {
            // The store gets the kept steps back, as the sink will count them.
            if keep.is_prefix(&probe.operator_id, probe.episode_index) {
                let key =
                    writer.unit_key(&probe.run_id, &probe.operator_id, probe.episode_index)?;
                writer.append_line(key, probe.step_index, line)?;
                seen.entry(Unit::new(probe.operator_id.clone(), probe.episode_index))
                    .or_default()
                    .insert(probe.step_index);
            }
            Ok(())
        })?;
        writer.sync()?;
        let (whole, short): (Vec<_>, Vec<_>) = resumable.into_iter().partition(|checkpoint| {
            let unit = Unit::new(checkpoint.operator_id.clone(), checkpoint.episode_index);
            seen.get(&unit).map_or(0, BTreeSet::len) == checkpoint.step_index as usize
        });
        if !short.is_empty() {
            for checkpoint in short {
                let unit = Unit::new(checkpoint.operator_id, checkpoint.episode_index);
                keep.forget(&unit);
                // Its records in the store are the steps just re-imported.
                store.discard(&unit)?;
                discarded.units.push(unit);
            }
            discarded.step_lines +=
                rewrite_keeping(&self.steps_path(), &keep, true, |_, _| Ok(()))?;
        }
        discarded.episode_lines =
            rewrite_keeping(&self.episodes_path(), &keep, false, |_, _| Ok(()))?;
        discarded.resumable = whole;
        Ok(discarded)
    }

    /// Checks that the store and the JSON-lines files agree on every complete unit: the
    /// same roll-up and the same number of step records, as many as the completion index
    /// says. Returns the problems found (none when consistent).
    pub fn check_consistency(&self, store: &RunStore) -> Result<Vec<String>> {
        let mut problems = Vec::new();
        let mut line_counts: HashMap<(String, u32), u64> = HashMap::new();
        let mut steps = self.step_lines()?;
        for record in steps.by_ref() {
            let record = record?;
            *line_counts
                .entry((record.operator_id, record.episode_index))
                .or_default() += 1;
        }
        let mut jsonl_episodes: BTreeMap<Unit, EpisodeRecord> = BTreeMap::new();
        let mut episodes = self.episode_lines()?;
        for record in episodes.by_ref() {
            let record = record?;
            let unit = Unit::new(record.operator_id.clone(), record.episode_index);
            if jsonl_episodes.insert(unit.clone(), record).is_some() {
                problems.push(format!("{unit}: two episode records in {EPISODES_FILE}"));
            }
        }
        for unit in store.completed_units()? {
            let Some(done) = store.completion(&unit)? else {
                continue;
            };
            let in_store = store.step_record_count(&unit)?;
            let in_jsonl = line_counts
                .get(&(unit.operator_id.clone(), unit.episode_index))
                .copied()
                .unwrap_or(0);
            if in_store != done.step_records || in_jsonl != done.step_records {
                problems.push(format!(
                    "{unit}: {} step records indexed, {in_store} in the store, {in_jsonl} in {STEPS_FILE}",
                    done.step_records
                ));
            }
            match (store.episode(&unit)?, jsonl_episodes.get(&unit)) {
                (Some(a), Some(b)) if a == *b => {}
                (Some(_), Some(_)) => {
                    problems.push(format!("{unit}: episode records differ"));
                }
                (None, _) => problems.push(format!("{unit}: no episode record in the store")),
                (_, None) => problems.push(format!("{unit}: no episode record in {EPISODES_FILE}")),
            }
        }
        Ok(problems)
    }
}

/// What [`RunDir::discard_incomplete`] removed, and what continues from a checkpoint.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Discarded {
    /// Units whose records were removed (they run again from their seeds).
    pub units: Vec<Unit>,
    /// Step records removed from the store.
    pub store_step_records: u64,
    /// Lines removed from `steps.jsonl` (a torn tail counts as one).
    pub step_lines: u64,
    /// Lines removed from `episodes.jsonl`.
    pub episode_lines: u64,
    /// Unfinished episodes that keep their records before their checkpoint and continue
    /// from it.
    pub resumable: Vec<EpisodeCheckpoint>,
}

/// Writes `bytes` to `path` so that a crash leaves either the old or the new file.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let mut file = File::create(&tmp).map_err(|e| RecorderError::io(&tmp, e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| RecorderError::io(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| RecorderError::io(path, e))?;
    sync_parent(path)
}

/// The hidden sibling where a new run at `path` is staged before it is renamed into place.
fn staging_dir(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "run".into(), |name| name.to_string_lossy().into_owned());
    parent_dir(path).join(format!(".{name}.creating-{}", std::process::id()))
}

/// Parses a whole-file JSON document (like `run.json`) with its schema checked.
fn parse_document<T: Record>(path: &Path, bytes: &[u8]) -> Result<T> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| RecorderError::Malformed {
            path: path.to_owned(),
            line: e.line() as u64,
            message: e.to_string(),
        })?;
    let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    readable(schema, T::SCHEMA).map_err(|u| RecorderError::UnsupportedSchema {
        path: path.to_owned(),
        line: 1,
        found: schema.to_owned(),
        expected: u.expected,
        major: u.major,
    })?;
    serde_json::from_value(value).map_err(|e| RecorderError::Malformed {
        path: path.to_owned(),
        line: 1,
        message: e.to_string(),
    })
}

/// Lists the runs in `dir`: `dir` itself if it is a run, else its sub-directories that
/// are runs, sorted by start time. Sub-directories that are not runs are skipped; runs
/// that cannot be read are returned as errors beside the others.
pub fn list_runs(dir: &Path) -> Result<Vec<Result<RunSummary>>> {
    if dir.join(MANIFEST_FILE).exists() {
        return Ok(vec![RunDir::open(dir).and_then(|run| run.summary())]);
    }
    let entries = fs::read_dir(dir).map_err(|e| RecorderError::io(dir, e))?;
    let mut runs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| RecorderError::io(dir, e))?;
        let path = entry.path();
        // Hidden entries are runs still being created (staging directories).
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if !hidden && path.join(MANIFEST_FILE).exists() {
            runs.push(RunDir::open(&path).and_then(|run| run.summary()));
        }
    }
    runs.sort_by_key(|r| match r {
        Ok(s) => (0, s.started, s.path.clone()),
        Err(_) => (1, 0, PathBuf::new()),
    });
    Ok(runs)
}

mod keep;
mod logs;
mod records;

use keep::{Keep, StepProbe, for_each_line, rewrite_keeping};

use records::distinct_units;
pub use records::{Records, StepIndex};

#[cfg(test)]
mod tests;
