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

mod chunk;
mod writer;

pub use writer::StoreWriter;

use crate::error::{RecorderError, Result};
use crate::unit_lines::UnitLines;
use chunk::{ChunkHeader, chunk_key, compress_chunk};
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
        let share = crate::plan::planned_range(&self.manifest);
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
        self.for_each_complete_unit_lines(Vec::new, |lines| {
            UnitLines::from_store(lines, self.path.clone()).decode_each(&mut each)
        })
    }

    /// Calls `each` with the JSON lines of the step records of every complete unit (each
    /// line ending in a newline), in operator then episode order. A unit's lines are
    /// written over the bytes of a buffer from `buffer`: one used before is reused as it
    /// stands, neither grown again nor zeroed.
    pub(crate) fn for_each_complete_unit_lines(
        &self,
        mut buffer: impl FnMut() -> Vec<u8>,
        mut each: impl FnMut(Vec<u8>) -> Result<()>,
    ) -> Result<()> {
        for key in self.units.iter().keys() {
            let key = key.map_err(self.err())?;
            let mut lines = buffer();
            let (end, _) = self.write_lines_of(&key, &mut lines, 0)?;
            lines.truncate(end);
            each(lines)?;
        }
        Ok(())
    }

    /// Appends the JSON lines of the step records of the unit whose key is `key` (each line
    /// ending in a newline), in step then agent order, to `out`. Returns how many records
    /// they are.
    fn append_lines_of(&self, key: &[u8], out: &mut Vec<u8>) -> Result<u64> {
        let (end, records) = self.write_lines_of(key, out, out.len())?;
        out.truncate(end);
        Ok(records)
    }

    /// Writes the JSON lines of the step records of the unit whose key is `key` (each line
    /// ending in a newline), in step then agent order, into `out` from byte `at` on, over
    /// what is there and beyond. Returns where they end and how many records they are.
    fn write_lines_of(&self, key: &[u8], out: &mut Vec<u8>, at: usize) -> Result<(usize, u64)> {
        let (mut end, mut records) = (at, 0);
        for chunk in self.steps.scan_prefix(key).values() {
            let chunk = chunk.map_err(self.err())?;
            match ChunkHeader::parse(&chunk).map_err(|m| self.corrupt_chunk(m))? {
                Some(header) => {
                    end = header
                        .decompress_at(&chunk, out, end)
                        .map_err(|m| self.corrupt_chunk(m))?;
                    records += u64::from(header.records);
                }
                None => {
                    end = write_at(out, end, &chunk);
                    records += memchr::memchr_iter(b'\n', &chunk).count() as u64;
                    if end > at && out[end - 1] != b'\n' {
                        end = write_at(out, end, b"\n");
                        records += 1;
                    }
                }
            }
        }
        Ok((end, records))
    }

    /// Appends the JSON lines of the step records of `unit` (each ending in a newline), in
    /// step then agent order, to `out`. Returns how many records they are.
    pub(crate) fn append_unit_lines(&self, unit: &Unit, out: &mut Vec<u8>) -> Result<u64> {
        self.append_lines_of(&self.key_of(unit)?, out)
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
    /// experiment) into this one, chunks as they are (plain chunks compressed when this
    /// store's format compresses them). Returns the unit's episode record as stored (the
    /// bytes of its line in `episodes.jsonl`).
    pub(crate) fn import_unit(&self, from: &RunStore, unit: &Unit) -> Result<sled::IVec> {
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
        // Inserts, not a batch: sled writes and syncs its log twice for every batch, and
        // the merged store is made durable once, at the end.
        let mut compressed = Vec::new();
        for chunk in from.steps.scan_prefix(source) {
            let (key, chunk) = chunk.map_err(from.err())?;
            let first_step = key
                .get(6..10)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(u32::from_be_bytes)
                .ok_or_else(|| from.corrupt_chunk(format!("unreadable chunk key {key:?}")))?;
            let key = chunk_key(target, first_step);
            let plain = ChunkHeader::parse(&chunk)
                .map_err(|m| from.corrupt_chunk(m))?
                .is_none();
            if plain && self.format >= COMPRESSED_CHUNKS_SINCE {
                let count = memchr::memchr_iter(b'\n', &chunk).count();
                compress_chunk(&chunk, count as u32, &mut compressed)?;
                self.steps.insert(key, compressed.as_slice())
            } else {
                self.steps.insert(key, chunk)
            }
            .map_err(self.err())?;
        }
        self.episodes
            .insert(target, episode.clone())
            .map_err(self.err())?;
        self.units.insert(target, done).map_err(self.err())?;
        Ok(episode)
    }

    /// A batching writer of records into this store.
    pub fn writer(&self) -> StoreWriter {
        StoreWriter::new(self.clone())
    }
}

/// Writes `bytes` into `out` at byte `at` (over what is there, growing it as needed);
/// returns where they end.
fn write_at(out: &mut Vec<u8>, at: usize, bytes: &[u8]) -> usize {
    let end = at + bytes.len();
    if out.len() < end {
        out.resize(end, 0);
    }
    out[at..end].copy_from_slice(bytes);
    end
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

#[cfg(test)]
mod tests;
