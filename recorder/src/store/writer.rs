//! The batching writer of a run store: step records gathered per unit into chunks.

use super::chunk::{chunk_key, compress_chunk};
use super::{COMPRESSED_CHUNKS_SINCE, RunStore, UnitDone, unit_key};
use crate::error::{RecorderError, Result};
use crate::step_line::StepLineEncoder;
use mosaic_core::record::{EpisodeCheckpoint, EpisodeRecord, StepRecord};
use std::fmt;

/// Steps per chunk of step records.
const CHUNK_STEPS: u32 = 64;
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

impl StoreWriter {
    pub(super) fn new(store: RunStore) -> Self {
        Self {
            store,
            open: Vec::new(),
            line: Vec::new(),
            compressed: Vec::new(),
            encoder: StepLineEncoder::default(),
        }
    }

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
