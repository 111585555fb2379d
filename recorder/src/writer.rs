//! [`RunWriter`]: writes a run's records into its JSON-lines files and its store,
//! serialising each record once.

use crate::error::Result;
use crate::jsonl::{Durability, JsonlWriter, PendingSync};
use crate::progress::ProgressWriter;
use crate::step_line::StepLineEncoder;
use crate::store::StoreWriter;
use mosaic_core::record::{EpisodeCheckpoint, EpisodeRecord, StepRecord};

/// Writes the records of a run.
///
/// The protocol per episode: [`RunWriter::write_step`] for every step, then
/// [`RunWriter::write_episode`], then a commit ([`RunWriter::commit`], or
/// [`RunWriter::prepare_commit`] and [`PendingSync::wait`] on another thread) after which
/// every record written so far is durable, then [`RunWriter::mark_complete`]. One commit
/// may cover many episodes (group commit).
///
/// The JSON-lines files are the durable log: an episode line reaches the operating system
/// only after every step line before it, and the store is brought up to date from them
/// after a crash.
///
/// Beside the episodes file it keeps `progress.json` (see [`crate::progress`]), saved at
/// commits (at most every [`crate::progress::SAVE_EVERY`]) and when the run closes.
#[derive(Debug)]
pub struct RunWriter {
    steps: JsonlWriter,
    episodes: JsonlWriter,
    store: StoreWriter,
    durability: Durability,
    lines: Vec<u8>,
    encoder: StepLineEncoder,
    progress: ProgressWriter,
}

impl RunWriter {
    /// Writes through the two files and the store, committing with `durability`.
    pub fn new(
        steps: JsonlWriter,
        episodes: JsonlWriter,
        store: StoreWriter,
        durability: Durability,
    ) -> Result<Self> {
        let progress = ProgressWriter::open(episodes.path())?;
        Ok(Self {
            steps,
            episodes,
            store,
            durability,
            lines: Vec::with_capacity(4096),
            encoder: StepLineEncoder::default(),
            progress,
        })
    }

    /// Adds the records of one step (one per agent alive at its start, in agent order).
    pub fn write_step(&mut self, records: &[StepRecord]) -> Result<()> {
        let Some(first) = records.first() else {
            return Ok(());
        };
        let unit = self
            .store
            .unit_key(&first.run_id, &first.operator_id, first.episode_index)?;
        self.lines.clear();
        for record in records {
            let start = self.lines.len();
            self.encoder.write(&mut self.lines, record)?;
            self.lines.push(b'\n');
            self.store
                .append_line(unit, record.step_index, &self.lines[start..])?;
        }
        self.steps.append_lines(&self.lines)
    }

    /// Adds the roll-up of an episode (not yet durable: commit next).
    pub fn write_episode(&mut self, record: &EpisodeRecord) -> Result<()> {
        // The steps reach the operating system before the line that says they are all there.
        self.steps.flush()?;
        self.lines.clear();
        serde_json::to_writer(&mut self.lines, record)?;
        self.store.write_episode(record, Some(&self.lines))?;
        self.lines.push(b'\n');
        self.episodes.append_lines(&self.lines)?;
        self.progress.episode_written();
        Ok(())
    }

    /// Saves the checkpoint of an unfinished episode, durably and only after
    /// the step records before it: the steps reach the operating system (and the disk with
    /// [`Durability::Sync`]) first, then the checkpoint is stored and the store synced. A
    /// crash in between leaves the previous checkpoint, which is consistent too.
    pub fn write_checkpoint(&mut self, checkpoint: &EpisodeCheckpoint) -> Result<()> {
        self.steps.flush()?;
        if self.durability == Durability::Sync {
            self.steps.sync_handle()?.wait()?;
        }
        self.store.put_checkpoint(checkpoint)?;
        self.store.store().flush()
    }

    /// Hands everything written to the operating system; the returned sync makes it durable
    /// (nothing to wait for with [`Durability::Flush`]).
    pub fn prepare_commit(&mut self) -> Result<PendingSync> {
        self.steps.flush()?;
        self.episodes.flush()?;
        self.progress.save(false)?;
        match self.durability {
            Durability::Flush => Ok(PendingSync::default()),
            Durability::Sync => Ok(self.steps.sync_handle()?.and(self.episodes.sync_handle()?)),
        }
    }

    /// Makes everything written so far durable.
    pub fn commit(&mut self) -> Result<()> {
        self.prepare_commit()?.wait()
    }

    /// Marks the unit of `record` complete in the store's index. Call only after a commit
    /// that covered the episode.
    pub fn mark_complete(&mut self, record: &EpisodeRecord) -> Result<()> {
        self.store.mark_complete(record)
    }

    /// Commits and syncs the store (at the end of a run).
    pub fn close(&mut self) -> Result<()> {
        self.commit()?;
        self.progress.save(true)?;
        self.store.sync()
    }
}
