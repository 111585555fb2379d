//! The run store: an embedded sled database in `<run>/store/`.
//!
//! Trees (tables) and keys; integers are big-endian so that keys sort numerically, and an
//! operator is its position `o` (u16) in the experiment's operator list:
//!
//! | tree          | key                                        | value                                   |
//! |---------------|--------------------------------------------|-----------------------------------------|
//! | `meta`        | `format`, `written_by`                     | u32 store format; software that wrote it |
//! | `runs`        | run id                                     | the [`RunManifest`] (JSON)              |
//! | `operators`   | `o`                                        | the operator's spec (JSON)              |
//! | `episodes`    | `o` · episode index u32                     | the [`EpisodeRecord`] (JSON)            |
//! | `steps`       | `o` · episode u32 · step u32 · agent u16    | the [`StepRecord`] (JSON)               |
//! | `checkpoints` | `o` · episode u32 · agent id bytes          | step u32 · operator state bytes         |
//! | `units`       | `o` · episode u32                          | [`UnitDone`] (JSON): the completion index |
//!
//! The agent part of a step key is the record's position among the records of its step
//! (environment agent order). A unit (operator × episode) is in `units` only once every
//! record of it is durable in the store *and* in the JSON-lines files; records of units not
//! in `units` belong to episodes cut short by a crash and are dropped by
//! [`crate::RunDir::discard_incomplete`].

use crate::error::{RecorderError, Result};
use crate::writer::RecordWriter;
use mosaic_core::record::{EpisodeRecord, RunManifest, StepRecord};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// The store format this version writes and reads.
pub const STORE_FORMAT: u32 = 1;

const WRITTEN_BY: &str = concat!("mosaic-recorder ", env!("CARGO_PKG_VERSION"));

/// One operator × episode: the unit of work that is either complete or left to do.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Unit {
    /// The operator.
    pub operator_id: String,
    /// The episode index within the operator.
    pub episode_index: u32,
}

impl Unit {
    /// Episode `episode_index` of `operator_id`.
    pub fn new(operator_id: impl Into<String>, episode_index: u32) -> Self {
        Self {
            operator_id: operator_id.into(),
            episode_index,
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/ep{:06}", self.operator_id, self.episode_index)
    }
}

/// The completion-index entry of a unit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitDone {
    /// Environment steps of the episode.
    pub steps: u32,
    /// Step records of the episode.
    pub step_records: u64,
    /// Unix time in milliseconds when the unit was marked complete.
    pub completed: u64,
}

/// An operator's saved state for one agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The step after which the state was taken.
    pub step: u32,
    /// The operator's serialised state.
    pub state: Vec<u8>,
}

/// An open run store. Cheap to clone (the database handle is shared).
#[derive(Clone)]
pub struct RunStore {
    path: PathBuf,
    db: sled::Db,
    manifest: RunManifest,
    operators: Vec<String>,
    episodes: sled::Tree,
    steps: sled::Tree,
    checkpoints: sled::Tree,
    units: sled::Tree,
}

impl fmt::Debug for RunStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunStore")
            .field("path", &self.path)
            .field("run_id", &self.manifest.run_id)
            .finish_non_exhaustive()
    }
}

fn sled_config(path: &Path) -> sled::Config {
    sled::Config::new()
        .path(path)
        .cache_capacity(64 * 1024 * 1024)
        .mode(sled::Mode::HighThroughput)
}

/// The 6-byte key prefix of a unit.
fn unit_key(operator: u16, episode_index: u32) -> [u8; 6] {
    let mut key = [0; 6];
    key[..2].copy_from_slice(&operator.to_be_bytes());
    key[2..].copy_from_slice(&episode_index.to_be_bytes());
    key
}

fn step_key(unit: [u8; 6], step_index: u32, agent: u16) -> [u8; 12] {
    let mut key = [0; 12];
    key[..6].copy_from_slice(&unit);
    key[6..10].copy_from_slice(&step_index.to_be_bytes());
    key[10..].copy_from_slice(&agent.to_be_bytes());
    key
}

impl RunStore {
    /// Creates the store of a new run at `path` (a directory that must not hold a store).
    pub fn create(path: &Path, manifest: &RunManifest) -> Result<Self> {
        if path.join("conf").exists() {
            return Err(RecorderError::AlreadyExists {
                path: path.to_owned(),
            });
        }
        let db = sled_config(path)
            .create_new(true)
            .open()
            .map_err(|source| store_error(path, source))?;
        let err = |source| store_error(path, source);
        let meta = db.open_tree("meta").map_err(err)?;
        meta.insert("format", &STORE_FORMAT.to_be_bytes())
            .map_err(err)?;
        meta.insert("written_by", WRITTEN_BY).map_err(err)?;
        let runs = db.open_tree("runs").map_err(err)?;
        runs.insert(manifest.run_id.as_bytes(), serde_json::to_vec(manifest)?)
            .map_err(err)?;
        let operators = db.open_tree("operators").map_err(err)?;
        for (i, op) in manifest.experiment.operators.iter().enumerate() {
            let ordinal = u16::try_from(i).map_err(|_| RecorderError::Foreign {
                path: path.to_owned(),
                message: "more than 65535 operators".into(),
            })?;
            operators
                .insert(ordinal.to_be_bytes(), serde_json::to_vec(op)?)
                .map_err(err)?;
        }
        db.flush().map_err(err)?;
        Self::from_db(path, db)
    }

    /// Opens an existing store, exclusively: one process at a time, one handle per process
    /// (clone it to share).
    pub fn open(path: &Path) -> Result<Self> {
        if !path.join("conf").is_file() || !path.join("db").is_file() {
            return Err(RecorderError::StoreMissing {
                path: path.to_owned(),
            });
        }
        if is_locked(&path.join("db"))? {
            return Err(RecorderError::StoreLocked {
                path: path.to_owned(),
            });
        }
        let db = sled_config(path)
            .open()
            .map_err(|source| store_error(path, source))?;
        Self::from_db(path, db)
    }

    fn from_db(path: &Path, db: sled::Db) -> Result<Self> {
        let err = |source| store_error(path, source);
        let corrupt = |message: String| RecorderError::CorruptStore {
            path: path.to_owned(),
            message,
        };
        let meta = db.open_tree("meta").map_err(err)?;
        let format = meta
            .get("format")
            .map_err(err)?
            .ok_or_else(|| corrupt("no format version (not a mosaic run store?)".into()))?;
        let format = <[u8; 4]>::try_from(format.as_ref())
            .map(u32::from_be_bytes)
            .map_err(|_| corrupt("unreadable format version".into()))?;
        if format > STORE_FORMAT {
            let written_by = meta
                .get("written_by")
                .map_err(err)?
                .map(|v| String::from_utf8_lossy(&v).into_owned())
                .unwrap_or_else(|| "unknown".into());
            return Err(RecorderError::StoreTooNew {
                path: path.to_owned(),
                found: format,
                supported: STORE_FORMAT,
                written_by,
            });
        }
        let runs = db.open_tree("runs").map_err(err)?;
        let (_, manifest) = runs
            .iter()
            .next()
            .ok_or_else(|| corrupt("no run manifest".into()))?
            .map_err(err)?;
        let manifest: RunManifest = serde_json::from_slice(&manifest)
            .map_err(|e| corrupt(format!("unreadable run manifest: {e}")))?;
        let operators = manifest
            .experiment
            .operators
            .iter()
            .map(|op| op.id.clone())
            .collect();
        Ok(Self {
            path: path.to_owned(),
            episodes: db.open_tree("episodes").map_err(err)?,
            steps: db.open_tree("steps").map_err(err)?,
            checkpoints: db.open_tree("checkpoints").map_err(err)?,
            units: db.open_tree("units").map_err(err)?,
            db,
            manifest,
            operators,
        })
    }

    /// The store directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The run's manifest, as stored.
    pub fn manifest(&self) -> &RunManifest {
        &self.manifest
    }

    fn err(&self) -> impl Fn(sled::Error) -> RecorderError + '_ {
        |source| store_error(&self.path, source)
    }

    fn ordinal(&self, operator_id: &str) -> Result<u16> {
        self.operators
            .iter()
            .position(|op| op == operator_id)
            .map(|i| i as u16)
            .ok_or_else(|| RecorderError::Foreign {
                path: self.path.clone(),
                message: format!(
                    "operator `{operator_id}` is not in the experiment (operators: {})",
                    self.operators.join(", ")
                ),
            })
    }

    fn key_of(&self, unit: &Unit) -> Result<[u8; 6]> {
        Ok(unit_key(
            self.ordinal(&unit.operator_id)?,
            unit.episode_index,
        ))
    }

    fn unit_of_key(&self, key: &[u8]) -> Result<Unit> {
        let corrupt = || RecorderError::CorruptStore {
            path: self.path.clone(),
            message: format!("unreadable unit key {key:?}"),
        };
        let operator = key
            .get(..2)
            .and_then(|b| <[u8; 2]>::try_from(b).ok())
            .map(u16::from_be_bytes)
            .ok_or_else(corrupt)?;
        let episode_index = key
            .get(2..6)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(u32::from_be_bytes)
            .ok_or_else(corrupt)?;
        let operator_id = self.operators.get(operator as usize).ok_or_else(corrupt)?;
        Ok(Unit::new(operator_id.clone(), episode_index))
    }

    fn decode<T: serde::de::DeserializeOwned>(&self, what: &str, bytes: &[u8]) -> Result<T> {
        serde_json::from_slice(bytes).map_err(|e| RecorderError::CorruptStore {
            path: self.path.clone(),
            message: format!("unreadable {what}: {e}"),
        })
    }

    /// Every unit the experiment plans: each operator × each episode index, in order.
    pub fn planned_units(&self) -> Vec<Unit> {
        let episodes = self.manifest.experiment.episodes;
        self.operators
            .iter()
            .flat_map(|op| (0..episodes).map(move |i| Unit::new(op.clone(), i)))
            .collect()
    }

    /// The units marked complete, in operator then episode order.
    pub fn completed_units(&self) -> Result<Vec<Unit>> {
        self.units
            .iter()
            .keys()
            .map(|key| self.unit_of_key(&key.map_err(self.err())?))
            .collect()
    }

    /// How many units are complete.
    pub fn completed_count(&self) -> usize {
        self.units.len()
    }

    /// The planned units not complete yet: what is left to do.
    pub fn remaining_units(&self) -> Result<Vec<Unit>> {
        let mut remaining = Vec::new();
        for unit in self.planned_units() {
            if !self.is_complete(&unit)? {
                remaining.push(unit);
            }
        }
        Ok(remaining)
    }

    /// Whether `unit` is complete.
    pub fn is_complete(&self, unit: &Unit) -> Result<bool> {
        self.units
            .contains_key(self.key_of(unit)?)
            .map_err(self.err())
    }

    /// The completion-index entry of `unit`.
    pub fn completion(&self, unit: &Unit) -> Result<Option<UnitDone>> {
        match self.units.get(self.key_of(unit)?).map_err(self.err())? {
            Some(bytes) => Ok(Some(self.decode("completion entry", &bytes)?)),
            None => Ok(None),
        }
    }

    /// The roll-up of `unit`, if its episode record was written.
    pub fn episode(&self, unit: &Unit) -> Result<Option<EpisodeRecord>> {
        match self.episodes.get(self.key_of(unit)?).map_err(self.err())? {
            Some(bytes) => Ok(Some(self.decode("episode record", &bytes)?)),
            None => Ok(None),
        }
    }

    /// The roll-ups of every complete unit, in operator then episode order.
    pub fn complete_episodes(&self) -> impl Iterator<Item = Result<EpisodeRecord>> + '_ {
        self.units.iter().keys().map(move |key| {
            let key = key.map_err(self.err())?;
            let bytes = self
                .episodes
                .get(&key)
                .map_err(self.err())?
                .ok_or_else(|| RecorderError::CorruptStore {
                    path: self.path.clone(),
                    message: format!(
                        "unit {} is marked complete but has no episode record",
                        self.unit_of_key(&key)
                            .map_or_else(|_| format!("{key:?}"), |u| u.to_string())
                    ),
                })?;
            self.decode("episode record", &bytes)
        })
    }

    /// Every step record of `unit`, in step then agent order.
    pub fn steps_of(&self, unit: &Unit) -> Result<impl Iterator<Item = Result<StepRecord>> + '_> {
        let prefix = self.key_of(unit)?;
        Ok(self.decode_steps(self.steps.scan_prefix(prefix)))
    }

    /// The records of one step of `unit` (one per agent alive at its start).
    pub fn step(&self, unit: &Unit, step_index: u32) -> Result<Vec<StepRecord>> {
        let mut prefix = [0; 10];
        prefix[..6].copy_from_slice(&self.key_of(unit)?);
        prefix[6..].copy_from_slice(&step_index.to_be_bytes());
        self.decode_steps(self.steps.scan_prefix(prefix)).collect()
    }

    /// Every step record of every complete unit, in operator, episode, step, agent order.
    pub fn complete_steps(&self) -> impl Iterator<Item = Result<StepRecord>> + '_ {
        self.units.iter().keys().flat_map(move |key| {
            let records: Box<dyn Iterator<Item = Result<StepRecord>>> = match key {
                Ok(key) => Box::new(self.decode_steps(self.steps.scan_prefix(key))),
                Err(e) => Box::new(std::iter::once(Err(store_error(&self.path, e)))),
            };
            records
        })
    }

    fn decode_steps(&self, iter: sled::Iter) -> impl Iterator<Item = Result<StepRecord>> + '_ {
        iter.values().map(move |value| {
            let value = value.map_err(self.err())?;
            self.decode("step record", &value)
        })
    }

    /// How many step records the store holds for `unit`.
    pub fn step_record_count(&self, unit: &Unit) -> Result<u64> {
        let mut count = 0;
        for key in self.steps.scan_prefix(self.key_of(unit)?).keys() {
            key.map_err(self.err())?;
            count += 1;
        }
        Ok(count)
    }

    /// Saves an operator's state for one agent of `unit` after `step`, replacing the one
    /// saved before.
    pub fn put_checkpoint(
        &self,
        unit: &Unit,
        agent_id: &str,
        step: u32,
        state: &[u8],
    ) -> Result<()> {
        let mut key = self.key_of(unit)?.to_vec();
        key.extend_from_slice(agent_id.as_bytes());
        let mut value = Vec::with_capacity(4 + state.len());
        value.extend_from_slice(&step.to_be_bytes());
        value.extend_from_slice(state);
        self.checkpoints.insert(key, value).map_err(self.err())?;
        Ok(())
    }

    /// The latest checkpoint of one agent of `unit`.
    pub fn checkpoint(&self, unit: &Unit, agent_id: &str) -> Result<Option<Checkpoint>> {
        let mut key = self.key_of(unit)?.to_vec();
        key.extend_from_slice(agent_id.as_bytes());
        let Some(value) = self.checkpoints.get(key).map_err(self.err())? else {
            return Ok(None);
        };
        let step = value
            .get(..4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(u32::from_be_bytes)
            .ok_or_else(|| RecorderError::CorruptStore {
                path: self.path.clone(),
                message: format!("checkpoint of {unit} / {agent_id} is too short"),
            })?;
        Ok(Some(Checkpoint {
            step,
            state: value[4..].to_vec(),
        }))
    }

    /// Removes every record of `unit` (steps, roll-up, checkpoints, completion mark).
    /// Returns how many step records were removed.
    pub fn discard(&self, unit: &Unit) -> Result<u64> {
        let prefix = self.key_of(unit)?;
        let mut batch = sled::Batch::default();
        let mut removed = 0;
        for key in self.steps.scan_prefix(prefix).keys() {
            batch.remove(key.map_err(self.err())?);
            removed += 1;
        }
        self.steps.apply_batch(batch).map_err(self.err())?;
        let mut batch = sled::Batch::default();
        for key in self.checkpoints.scan_prefix(prefix).keys() {
            batch.remove(key.map_err(self.err())?);
        }
        self.checkpoints.apply_batch(batch).map_err(self.err())?;
        self.episodes.remove(prefix).map_err(self.err())?;
        self.units.remove(prefix).map_err(self.err())?;
        Ok(removed)
    }

    /// Units that have records (steps or a roll-up) but are not complete.
    pub fn incomplete_units_with_records(&self) -> Result<Vec<Unit>> {
        let mut found: Vec<Unit> = Vec::new();
        let mut last: Option<[u8; 6]> = None;
        for key in self.steps.iter().keys().chain(self.episodes.iter().keys()) {
            let key = key.map_err(self.err())?;
            let Some(prefix) = key.get(..6).and_then(|b| <[u8; 6]>::try_from(b).ok()) else {
                continue;
            };
            if last == Some(prefix) {
                continue;
            }
            last = Some(prefix);
            if !self.units.contains_key(prefix).map_err(self.err())? {
                let unit = self.unit_of_key(&prefix)?;
                if !found.contains(&unit) {
                    found.push(unit);
                }
            }
        }
        found.sort();
        Ok(found)
    }

    /// Makes everything written so far durable.
    pub fn flush(&self) -> Result<()> {
        self.db.flush().map_err(self.err())?;
        Ok(())
    }

    /// A batching writer of records into this store.
    pub fn writer(&self) -> StoreWriter {
        StoreWriter {
            store: self.clone(),
            batch: sled::Batch::default(),
            pending: 0,
            open: Vec::new(),
        }
    }
}

fn store_error(path: &Path, source: sled::Error) -> RecorderError {
    RecorderError::Store {
        path: path.to_owned(),
        source,
    }
}

/// Whether another process holds the lock sled takes on its database file.
fn is_locked(db_file: &Path) -> Result<bool> {
    // Fully qualified: newer std has inherent locking methods of the same names.
    let file = std::fs::File::open(db_file).map_err(|e| RecorderError::io(db_file, e))?;
    match fs2::FileExt::try_lock_shared(&file) {
        Ok(()) => {
            fs2::FileExt::unlock(&file).map_err(|e| RecorderError::io(db_file, e))?;
            Ok(false)
        }
        Err(e) if e.raw_os_error() == fs2::lock_contended_error().raw_os_error() => Ok(true),
        Err(e) => Err(RecorderError::io(db_file, e)),
    }
}

/// Step records buffered before they are handed to the database.
const BATCH_RECORDS: usize = 4096;

/// Writes records into a [`RunStore`] in batches.
///
/// Step records are applied every few thousand records; [`StoreWriter::write_episode`]
/// applies the rest with the roll-up and makes them durable; [`StoreWriter::mark_complete`]
/// then enters the unit in the completion index (durable with the next flush; a mark lost
/// in a crash only means the unit is run again).
pub struct StoreWriter {
    store: RunStore,
    batch: sled::Batch,
    pending: usize,
    /// Step records written per open unit: (unit key, count).
    open: Vec<([u8; 6], u64)>,
}

impl fmt::Debug for StoreWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreWriter")
            .field("store", &self.store)
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

impl StoreWriter {
    /// The store written to.
    pub fn store(&self) -> &RunStore {
        &self.store
    }

    fn check_run(&self, run_id: &str) -> Result<()> {
        if run_id == self.store.manifest.run_id {
            return Ok(());
        }
        Err(RecorderError::Foreign {
            path: self.store.path.clone(),
            message: format!(
                "record of run `{run_id}` written to run `{}`",
                self.store.manifest.run_id
            ),
        })
    }

    fn open_count(&mut self, unit: [u8; 6]) -> &mut u64 {
        let index = match self.open.iter().position(|(key, _)| *key == unit) {
            Some(index) => index,
            None => {
                self.open.push((unit, 0));
                self.open.len() - 1
            }
        };
        &mut self.open[index].1
    }

    /// Adds the records of one step (one per agent, in agent order).
    pub fn write_step(&mut self, records: &[StepRecord]) -> Result<()> {
        let Some(first) = records.first() else {
            return Ok(());
        };
        self.check_run(&first.run_id)?;
        let unit = unit_key(self.store.ordinal(&first.operator_id)?, first.episode_index);
        for (agent, record) in records.iter().enumerate() {
            if record.operator_id != first.operator_id
                || record.episode_index != first.episode_index
            {
                return Err(RecorderError::Foreign {
                    path: self.store.path.clone(),
                    message: format!(
                        "one step mixes records of {} and {}",
                        first.episode_id, record.episode_id
                    ),
                });
            }
            let key = step_key(unit, record.step_index, agent as u16);
            self.batch.insert(&key[..], serde_json::to_vec(record)?);
        }
        *self.open_count(unit) += records.len() as u64;
        self.pending += records.len();
        if self.pending >= BATCH_RECORDS {
            self.apply()?;
        }
        Ok(())
    }

    fn apply(&mut self) -> Result<()> {
        if self.pending > 0 {
            let batch = std::mem::take(&mut self.batch);
            self.pending = 0;
            self.store
                .steps
                .apply_batch(batch)
                .map_err(self.store.err())?;
        }
        Ok(())
    }

    /// Writes the roll-up and makes every record written so far durable. The store always
    /// syncs (its own log is in the process's memory until then), whatever the durability.
    pub fn write_episode(&mut self, record: &EpisodeRecord) -> Result<()> {
        self.check_run(&record.run_id)?;
        let key = unit_key(
            self.store.ordinal(&record.operator_id)?,
            record.episode_index,
        );
        self.apply()?;
        self.store
            .episodes
            .insert(key, serde_json::to_vec(record)?)
            .map_err(self.store.err())?;
        self.store.flush()
    }

    /// Enters the unit of `record` in the completion index. Call only once the episode's
    /// records are durable everywhere they are written.
    pub fn mark_complete(&mut self, record: &EpisodeRecord) -> Result<()> {
        let key = unit_key(
            self.store.ordinal(&record.operator_id)?,
            record.episode_index,
        );
        let step_records = match self.open.iter().position(|(k, _)| *k == key) {
            Some(index) => self.open.swap_remove(index).1,
            None => 0,
        };
        let done = UnitDone {
            steps: record.steps,
            step_records,
            completed: mosaic_core::record::now_ms(),
        };
        self.store
            .units
            .insert(key, serde_json::to_vec(&done)?)
            .map_err(self.store.err())?;
        Ok(())
    }
}

impl RecordWriter for StoreWriter {
    fn write_step(&mut self, records: &[StepRecord]) -> Result<()> {
        StoreWriter::write_step(self, records)
    }

    fn write_episode(&mut self, record: &EpisodeRecord) -> Result<()> {
        StoreWriter::write_episode(self, record)
    }

    fn mark_complete(&mut self, record: &EpisodeRecord) -> Result<()> {
        StoreWriter::mark_complete(self, record)
    }

    fn close(&mut self) -> Result<()> {
        self.apply()?;
        self.store.flush()
    }
}
