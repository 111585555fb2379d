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
//! | `steps`       | `o` · episode u32 · first step u32          | a chunk: the [`StepRecord`]s of up to 64 steps, one JSON line each, in step then agent order, LZ4-compressed (see below) |
//! | `checkpoints` | `o` · episode u32                          | the unit's latest [`EpisodeCheckpoint`] (JSON), while the episode is unfinished |
//! | `units`       | `o` · episode u32                          | [`UnitDone`] (JSON): the completion index |
//! | `llm-cache`   | SHA-256 of a model request (hex)           | the LLM response-cache entry (JSON); opened by the LLM deciders through [`RunStore::extension_tree`] |
//!
//! The lines of a chunk are the very bytes of `steps.jsonl`. Store format 2 compresses them
//! (the lines repeat ids and field names: about 25 times smaller, so the database writes a
//! few percent of the log's bytes): `0x04` · record count u32 · length of the lines u32 ·
//! one LZ4 block. Format 1 stored the lines as they are (a chunk starting with `{`); both
//! are read, and a writer keeps the format of the store it writes to. A unit (operator × episode) is in `units` only once every
//! record of it is durable in the JSON-lines files, which are the run's durable log: the
//! store is not synced per episode, and opening it with [`crate::RunDir::store`] first
//! replays complete units it lacks after a crash. Records of units not in `units` belong to
//! episodes cut short and are dropped by [`crate::RunDir::discard_incomplete`].

use crate::error::{RecorderError, Result};
use crate::step_line::StepLineEncoder;
use mosaic_core::record::{
    CHECKPOINT_SCHEMA, EpisodeCheckpoint, EpisodeRecord, RunManifest, StepRecord,
};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// The store format this version writes (it reads every format up to this one).
///
/// 1: step chunks are plain JSON lines; 2: step chunks are LZ4-compressed.
pub const STORE_FORMAT: u32 = 2;

/// The first store format with compressed step chunks.
const COMPRESSED_CHUNKS_SINCE: u32 = 2;
/// Trees the store itself keeps (see the module table).
const OWN_TREES: [&str; 7] = [
    "meta",
    "runs",
    "operators",
    "episodes",
    "steps",
    "checkpoints",
    "units",
];

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

/// An open run store. Cheap to clone (the database handle is shared).
#[derive(Clone)]
pub struct RunStore {
    path: PathBuf,
    db: sled::Db,
    manifest: RunManifest,
    operators: Vec<String>,
    format: u32,
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
        // The format is the store's first write, durable with the rest at the end of
        // `create`: a store without it was cut short before anything was written.
        let format =
            meta.get("format")
                .map_err(err)?
                .ok_or_else(|| RecorderError::StoreCutShort {
                    path: path.to_owned(),
                })?;
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
            format,
        })
    }

    /// Replaces the stored manifest (through [`crate::RunDir::update_manifest`]). Other
    /// handles of the store keep the manifest they had; writers use only its run id and
    /// operators, which never change.
    pub(crate) fn put_manifest(&mut self, manifest: &RunManifest) -> Result<()> {
        let runs = self.db.open_tree("runs").map_err(self.err())?;
        runs.insert(manifest.run_id.as_bytes(), serde_json::to_vec(manifest)?)
            .map_err(self.err())?;
        self.db.flush().map_err(self.err())?;
        self.manifest = manifest.clone();
        Ok(())
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

    /// Every unit the run plans, in operator then episode order: each operator × each
    /// episode index, or, in a shard's run, those of its share.
    pub fn planned_units(&self) -> Vec<Unit> {
        let episodes = self.manifest.experiment.episodes;
        let operators = self.operators.len() as u64;
        let share = crate::merge::planned_range(&self.manifest);
        self.operators
            .iter()
            .enumerate()
            .flat_map(|(o, op)| {
                let share = share.clone();
                (0..episodes)
                    .filter(move |&i| share.contains(&(u64::from(i) * operators + o as u64)))
                    .map(move |i| Unit::new(op.clone(), i))
            })
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
    pub fn steps_of(&self, unit: &Unit) -> Result<Vec<StepRecord>> {
        let prefix = self.key_of(unit)?;
        let mut records = Vec::new();
        for chunk in self.steps.scan_prefix(prefix).values() {
            self.decode_chunk(&chunk.map_err(self.err())?, |r| {
                records.push(r);
                Ok(())
            })?;
        }
        Ok(records)
    }

    /// The records of one step of `unit` (one per agent alive at its start).
    pub fn step(&self, unit: &Unit, step_index: u32) -> Result<Vec<StepRecord>> {
        let prefix = self.key_of(unit)?;
        let mut records = Vec::new();
        let chunk = self
            .steps
            .range(chunk_key(prefix, 0)..=chunk_key(prefix, step_index))
            .next_back()
            .transpose()
            .map_err(self.err())?;
        if let Some((_, chunk)) = chunk {
            self.decode_chunk(&chunk, |r| {
                if r.step_index == step_index {
                    records.push(r);
                }
                Ok(())
            })?;
        }
        Ok(records)
    }

    /// Calls `each` with every step record of every complete unit, in operator, episode,
    /// step, agent order.
    pub fn for_each_complete_step(
        &self,
        mut each: impl FnMut(StepRecord) -> Result<()>,
    ) -> Result<()> {
        for key in self.units.iter().keys() {
            let key = key.map_err(self.err())?;
            for chunk in self.steps.scan_prefix(&key).values() {
                self.decode_chunk(&chunk.map_err(self.err())?, &mut each)?;
            }
        }
        Ok(())
    }

    fn decode_chunk(
        &self,
        chunk: &[u8],
        mut each: impl FnMut(StepRecord) -> Result<()>,
    ) -> Result<()> {
        let lines = match ChunkHeader::parse(chunk).map_err(|m| self.corrupt_chunk(m))? {
            Some(header) => std::borrow::Cow::Owned(
                header
                    .decompress(chunk)
                    .map_err(|m| self.corrupt_chunk(m))?,
            ),
            None => std::borrow::Cow::Borrowed(chunk),
        };
        for line in lines.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            each(self.decode("step record", line)?)?;
        }
        Ok(())
    }

    fn corrupt_chunk(&self, message: String) -> RecorderError {
        RecorderError::CorruptStore {
            path: self.path.clone(),
            message: format!("unreadable step chunk: {message}"),
        }
    }

    /// How many step records the store holds for `unit`.
    pub fn step_record_count(&self, unit: &Unit) -> Result<u64> {
        let mut count = 0;
        for chunk in self.steps.scan_prefix(self.key_of(unit)?).values() {
            let chunk = chunk.map_err(self.err())?;
            count += match ChunkHeader::parse(&chunk).map_err(|m| self.corrupt_chunk(m))? {
                Some(header) => u64::from(header.records),
                None => chunk.iter().filter(|b| **b == b'\n').count() as u64,
            };
        }
        Ok(count)
    }

    /// The latest checkpoint of the unfinished episode `unit`, if one was written.
    pub fn checkpoint(&self, unit: &Unit) -> Result<Option<EpisodeCheckpoint>> {
        let Some(value) = self
            .checkpoints
            .get(self.key_of(unit)?)
            .map_err(self.err())?
        else {
            return Ok(None);
        };
        let checkpoint: EpisodeCheckpoint = self.decode("checkpoint", &value)?;
        crate::schema::readable(&checkpoint.schema, CHECKPOINT_SCHEMA).map_err(|e| {
            RecorderError::CorruptStore {
                path: self.path.clone(),
                message: format!(
                    "checkpoint of {unit} has schema `{}`, this mosaic reads {} at major version {}",
                    checkpoint.schema, e.expected, e.major
                ),
            }
        })?;
        Ok(Some(checkpoint))
    }

    /// Removes every record of `unit` (steps, roll-up, checkpoints, completion mark).
    /// Returns how many step records were removed.
    pub fn discard(&self, unit: &Unit) -> Result<u64> {
        let prefix = self.key_of(unit)?;
        let removed = self.discard_steps(unit)?;
        self.checkpoints.remove(prefix).map_err(self.err())?;
        self.episodes.remove(prefix).map_err(self.err())?;
        self.units.remove(prefix).map_err(self.err())?;
        Ok(removed)
    }

    /// Removes the step records of `unit`, keeping the rest. Returns how many were removed.
    pub(crate) fn discard_steps(&self, unit: &Unit) -> Result<u64> {
        let removed = self.step_record_count(unit)?;
        let mut batch = sled::Batch::default();
        for key in self.steps.scan_prefix(self.key_of(unit)?).keys() {
            batch.remove(key.map_err(self.err())?);
        }
        self.steps.apply_batch(batch).map_err(self.err())?;
        Ok(removed)
    }

    /// Units that have records (steps, a roll-up or a checkpoint) but are not complete.
    pub fn incomplete_units_with_records(&self) -> Result<Vec<Unit>> {
        let mut found: Vec<Unit> = Vec::new();
        let mut last: Option<[u8; 6]> = None;
        let trees = [&self.steps, &self.episodes, &self.checkpoints];
        for key in trees.into_iter().flat_map(|tree| tree.iter().keys()) {
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

    /// A tree of this store for data that other subsystems keep with the run (e.g. the
    /// LLM response cache, `llm-cache`), so that a run directory carries it and it needs
    /// no second database on the same path. The store's own trees (see the module table)
    /// are refused by name. Writes to it are made durable by [`RunStore::flush`], like the
    /// rest of the store.
    ///
    /// ```
    /// use mosaic_recorder::{RunDir, synthetic};
    /// let dir = tempfile::tempdir().unwrap();
    /// let manifest = synthetic::manifest("r", &["a"], 1, 10);
    /// let (_run, store) = RunDir::create(&dir.path().join("r"), &manifest).unwrap();
    /// let cache = store.extension_tree("llm-cache").unwrap();
    /// cache.insert("key", "answer").unwrap();
    /// assert!(store.extension_tree("steps").is_err());
    /// ```
    pub fn extension_tree(&self, name: &str) -> Result<sled::Tree> {
        if OWN_TREES.contains(&name) || name.starts_with("__sled") {
            return Err(RecorderError::ReservedTree {
                path: self.path.clone(),
                name: name.to_owned(),
            });
        }
        self.db.open_tree(name).map_err(self.err())
    }

    /// Makes everything written so far durable.
    pub fn flush(&self) -> Result<()> {
        self.db.flush().map_err(self.err())?;
        Ok(())
    }

    /// Copies every record of the complete `unit` from the store `from` (of the same
    /// experiment) into this one, chunks as they are, and hands the JSON lines of its step
    /// records, in order, to `lines`. Returns the unit's episode record as stored (the
    /// bytes of its line in `episodes.jsonl`) and its number of step records.
    pub(crate) fn import_unit(
        &self,
        from: &RunStore,
        unit: &Unit,
        mut lines: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<(sled::IVec, u64)> {
        let source = from.key_of(unit)?;
        let target = self.key_of(unit)?;
        let missing = |what: &str| RecorderError::CorruptStore {
            path: from.path.clone(),
            message: format!("unit {unit} is marked complete but has no {what}"),
        };
        let episode = from
            .episodes
            .get(source)
            .map_err(from.err())?
            .ok_or_else(|| missing("episode record"))?;
        let done = from
            .units
            .get(source)
            .map_err(from.err())?
            .ok_or_else(|| missing("completion entry"))?;
        let mut batch = sled::Batch::default();
        let mut compressed = Vec::new();
        let mut records = 0;
        for chunk in from.steps.scan_prefix(source) {
            let (key, chunk) = chunk.map_err(from.err())?;
            let first_step = key
                .get(6..10)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(u32::from_be_bytes)
                .ok_or_else(|| from.corrupt_chunk(format!("unreadable chunk key {key:?}")))?;
            let key = chunk_key(target, first_step);
            match ChunkHeader::parse(&chunk).map_err(|m| from.corrupt_chunk(m))? {
                Some(header) => {
                    lines(
                        &header
                            .decompress(&chunk)
                            .map_err(|m| from.corrupt_chunk(m))?,
                    )?;
                    records += u64::from(header.records);
                    batch.insert(&key, chunk);
                }
                None => {
                    let count = chunk.iter().filter(|b| **b == b'\n').count();
                    lines(&chunk)?;
                    records += count as u64;
                    if self.format >= COMPRESSED_CHUNKS_SINCE {
                        compress_chunk(&chunk, count as u32, &mut compressed)?;
                        batch.insert(&key, compressed.as_slice());
                    } else {
                        batch.insert(&key, chunk);
                    }
                }
            }
        }
        self.steps.apply_batch(batch).map_err(self.err())?;
        self.episodes
            .insert(target, episode.clone())
            .map_err(self.err())?;
        self.units.insert(target, done).map_err(self.err())?;
        Ok((episode, records))
    }

    /// A batching writer of records into this store.
    pub fn writer(&self) -> StoreWriter {
        StoreWriter {
            store: self.clone(),
            open: Vec::new(),
            line: Vec::new(),
            compressed: Vec::new(),
            encoder: StepLineEncoder::default(),
        }
    }
}

pub(crate) fn store_error(path: &Path, source: sled::Error) -> RecorderError {
    RecorderError::Store {
        path: path.to_owned(),
        source,
    }
}

/// Whether another process holds the lock sled takes on its database file.
pub(crate) fn is_locked(db_file: &Path) -> Result<bool> {
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

/// Steps per chunk of step records.
const CHUNK_STEPS: u32 = 64;
/// First byte of a compressed chunk (a chunk of plain JSON lines starts with `{`).
const LZ4_CHUNK: u8 = 0x04;
/// Tag, record count and length of the lines before the LZ4 block.
const CHUNK_HEADER: usize = 9;
/// LZ4 expands at most this much per input byte: bounds the length a header may claim.
const LZ4_MAX_EXPANSION: usize = 255;

/// The header of a compressed chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ChunkHeader {
    records: u32,
    len: u32,
}

impl ChunkHeader {
    /// The header of `chunk`, `None` for a chunk of plain JSON lines.
    fn parse(chunk: &[u8]) -> std::result::Result<Option<Self>, String> {
        match chunk.first() {
            Some(&LZ4_CHUNK) => {}
            None | Some(b'{') => return Ok(None),
            Some(other) => return Err(format!("unknown chunk tag {other:#04x}")),
        }
        let field = |at: usize| {
            chunk
                .get(at..at + 4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(u32::from_be_bytes)
                .ok_or_else(|| format!("header cut short ({} bytes)", chunk.len()))
        };
        Ok(Some(Self {
            records: field(1)?,
            len: field(5)?,
        }))
    }

    /// The JSON lines of the compressed `chunk` this header was read from.
    fn decompress(self, chunk: &[u8]) -> std::result::Result<Vec<u8>, String> {
        let block = &chunk[CHUNK_HEADER..];
        let len = self.len as usize;
        // A corrupt length must not make us allocate more than the block can hold.
        if len > block.len().saturating_mul(LZ4_MAX_EXPANSION) {
            return Err(format!(
                "{len} bytes claimed for a block of {} bytes",
                block.len()
            ));
        }
        let mut lines = vec![0; len];
        match lz4_flex::block::decompress_into(block, &mut lines) {
            Ok(n) if n == len => Ok(lines),
            Ok(n) => Err(format!("{n} bytes decompressed, {len} expected")),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Compresses the JSON lines of a chunk of `records` step records into `out`.
fn compress_chunk(lines: &[u8], records: u32, out: &mut Vec<u8>) -> Result<()> {
    let len = u32::try_from(lines.len()).map_err(|_| {
        RecorderError::Serialise(serde::ser::Error::custom(
            "a chunk of step records longer than 4 GiB",
        ))
    })?;
    out.clear();
    out.resize(
        CHUNK_HEADER + lz4_flex::block::get_maximum_output_size(lines.len()),
        0,
    );
    out[0] = LZ4_CHUNK;
    out[1..5].copy_from_slice(&records.to_be_bytes());
    out[5..9].copy_from_slice(&len.to_be_bytes());
    let written = lz4_flex::block::compress_into(lines, &mut out[CHUNK_HEADER..]).map_err(|e| {
        RecorderError::Serialise(serde::ser::Error::custom(format!("compressing: {e}")))
    })?;
    out.truncate(CHUNK_HEADER + written);
    Ok(())
}
/// Bytes after which a chunk is sealed at the next step, whatever its steps.
const CHUNK_BYTES: usize = 256 * 1024;

/// The step records of one unit not yet handed to the database.
#[derive(Debug)]
struct OpenChunk {
    unit: [u8; 6],
    first_step: u32,
    last_step: u32,
    steps: u32,
    lines: Vec<u8>,
    /// Step records in `lines`.
    chunk_records: u32,
    /// Step records of the unit so far (all chunks).
    records: u64,
}

/// Writes records into a [`RunStore`].
///
/// Step records (serialised lines) are gathered per unit into chunks of up to 64 steps,
/// each stored under (unit, first step); [`StoreWriter::write_episode`] stores the rest
/// with the roll-up; [`StoreWriter::mark_complete`] enters the unit in the completion index.
/// The writer does not sync: the run's JSON-lines files are the durable log, and
/// [`crate::RunDir::store`] replays complete units the store lacks after a crash.
pub struct StoreWriter {
    store: RunStore,
    open: Vec<OpenChunk>,
    line: Vec<u8>,
    /// The last chunk compressed (the buffer is reused).
    compressed: Vec<u8>,
    encoder: StepLineEncoder,
}

impl fmt::Debug for StoreWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreWriter")
            .field("store", &self.store)
            .field("open_units", &self.open.len())
            .finish_non_exhaustive()
    }
}

fn chunk_key(unit: [u8; 6], first_step: u32) -> [u8; 10] {
    let mut key = [0; 10];
    key[..6].copy_from_slice(&unit);
    key[6..].copy_from_slice(&first_step.to_be_bytes());
    key
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

    /// The key of the unit of a record, checking that it belongs to this run.
    pub(crate) fn unit_key(
        &self,
        run_id: &str,
        operator_id: &str,
        episode_index: u32,
    ) -> Result<[u8; 6]> {
        self.check_run(run_id)?;
        Ok(unit_key(self.store.ordinal(operator_id)?, episode_index))
    }

    /// Adds one serialised step record (a JSON line ending in a newline) of `unit` at
    /// `step_index`. Records must come in step order per unit.
    pub(crate) fn append_line(
        &mut self,
        unit: [u8; 6],
        step_index: u32,
        line: &[u8],
    ) -> Result<()> {
        let index = match self.open.iter().position(|c| c.unit == unit) {
            Some(index) => index,
            None => {
                // A resumed episode continues after the records it kept.
                let records = self.stored_records(unit)?;
                self.open.push(OpenChunk {
                    unit,
                    first_step: step_index,
                    last_step: step_index,
                    steps: 0,
                    lines: Vec::new(),
                    chunk_records: 0,
                    records,
                });
                self.open.len() - 1
            }
        };
        let new_step = self.open[index].steps == 0 || self.open[index].last_step != step_index;
        if new_step
            && (self.open[index].steps >= CHUNK_STEPS
                || self.open[index].lines.len() >= CHUNK_BYTES)
        {
            self.seal(index)?;
        }
        let chunk = &mut self.open[index];
        if chunk.lines.is_empty() {
            chunk.first_step = step_index;
            chunk.steps = 0;
        }
        if new_step || chunk.steps == 0 {
            chunk.steps += 1;
            chunk.last_step = step_index;
        }
        chunk.lines.extend_from_slice(line);
        chunk.chunk_records += 1;
        chunk.records += 1;
        Ok(())
    }

    /// Step records of `unit` already in the database (none but for a resumed episode).
    fn stored_records(&self, unit: [u8; 6]) -> Result<u64> {
        if self.store.steps.scan_prefix(unit).next().is_none() {
            return Ok(0);
        }
        let unit = self.store.unit_of_key(&unit)?;
        self.store.step_record_count(&unit)
    }

    /// Hands the open chunk at `index` to the database.
    fn seal(&mut self, index: usize) -> Result<()> {
        let chunk = &mut self.open[index];
        if chunk.lines.is_empty() {
            return Ok(());
        }
        let key = chunk_key(chunk.unit, chunk.first_step);
        let inserted = if self.store.format >= COMPRESSED_CHUNKS_SINCE {
            compress_chunk(&chunk.lines, chunk.chunk_records, &mut self.compressed)?;
            self.store.steps.insert(key, self.compressed.as_slice())
        } else {
            self.store.steps.insert(key, chunk.lines.as_slice())
        };
        // The buffer is kept for the unit's next chunk.
        chunk.lines.clear();
        chunk.chunk_records = 0;
        chunk.steps = 0;
        inserted.map_err(self.store.err())?;
        Ok(())
    }

    /// Adds the records of one step (one per agent, in agent order).
    pub fn write_step(&mut self, records: &[StepRecord]) -> Result<()> {
        let Some(first) = records.first() else {
            return Ok(());
        };
        let unit = self.unit_key(&first.run_id, &first.operator_id, first.episode_index)?;
        let mut line = std::mem::take(&mut self.line);
        for record in records {
            line.clear();
            self.encoder.write(&mut line, record)?;
            line.push(b'\n');
            self.append_line(unit, record.step_index, &line)?;
        }
        self.line = line;
        Ok(())
    }

    /// Stores the rest of the episode's step records and its roll-up (already serialised,
    /// or serialised here when `serialised` is `None`).
    pub fn write_episode(
        &mut self,
        record: &EpisodeRecord,
        serialised: Option<&[u8]>,
    ) -> Result<()> {
        let unit = self.unit_key(&record.run_id, &record.operator_id, record.episode_index)?;
        if let Some(index) = self.open.iter().position(|c| c.unit == unit) {
            self.seal(index)?;
        }
        let value = match serialised {
            Some(bytes) => bytes.to_vec(),
            None => serde_json::to_vec(record)?,
        };
        self.store
            .episodes
            .insert(unit, value)
            .map_err(self.store.err())?;
        Ok(())
    }

    /// Enters the unit of `record` in the completion index. Call only once the episode's
    /// records are durable in the run's log.
    pub fn mark_complete(&mut self, record: &EpisodeRecord) -> Result<()> {
        let unit = self.unit_key(&record.run_id, &record.operator_id, record.episode_index)?;
        let step_records = match self.open.iter().position(|c| c.unit == unit) {
            Some(index) => self.open.swap_remove(index).records,
            None => 0,
        };
        let done = UnitDone {
            steps: record.steps,
            step_records,
            completed: mosaic_core::record::now_ms(),
        };
        self.store
            .units
            .insert(unit, serde_json::to_vec(&done)?)
            .map_err(self.store.err())?;
        // Only unfinished episodes continue from a checkpoint.
        self.store
            .checkpoints
            .remove(unit)
            .map_err(self.store.err())?;
        Ok(())
    }

    /// Replaces the checkpoint of its episode with `checkpoint`. Not durable by itself: see
    /// [`crate::RunWriter::write_checkpoint`].
    pub fn put_checkpoint(&mut self, checkpoint: &EpisodeCheckpoint) -> Result<()> {
        let unit = self.unit_key(
            &checkpoint.run_id,
            &checkpoint.operator_id,
            checkpoint.episode_index,
        )?;
        self.store
            .checkpoints
            .insert(unit, serde_json::to_vec(checkpoint)?)
            .map_err(self.store.err())?;
        Ok(())
    }

    /// Stores the open chunks (of episodes that did not end) and makes everything written
    /// so far durable in the store itself.
    pub fn sync(&mut self) -> Result<()> {
        for index in 0..self.open.len() {
            self.seal(index)?;
        }
        self.store.flush()
    }
}

#[cfg(test)]
mod tests;
