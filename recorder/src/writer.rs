//! What a telemetry sink writes through: the [`RecordWriter`] trait, implemented by the
//! JSON-lines files ([`JsonlRunWriter`]) and the store ([`crate::store::StoreWriter`]).

use crate::error::Result;
use crate::jsonl::{Durability, JsonlWriter};
use mosaic_core::record::{EpisodeRecord, StepRecord};

/// A destination of a run's records.
///
/// The protocol per episode: [`RecordWriter::write_step`] for every step, then
/// [`RecordWriter::write_episode`] (after which every record of the episode is durable),
/// then, once *every* destination has the episode durably,
/// [`RecordWriter::mark_complete`].
pub trait RecordWriter: Send + 'static {
    /// Adds the records of one step (one per agent alive at its start, in agent order).
    fn write_step(&mut self, records: &[StepRecord]) -> Result<()>;

    /// Adds the roll-up and makes every record written so far durable.
    fn write_episode(&mut self, record: &EpisodeRecord) -> Result<()>;

    /// Marks the unit of `record` complete, where the destination keeps such marks.
    fn mark_complete(&mut self, record: &EpisodeRecord) -> Result<()>;

    /// Makes everything buffered durable (at the end of a run).
    fn close(&mut self) -> Result<()>;
}

/// `steps.jsonl` and `episodes.jsonl` of a run directory.
#[derive(Debug)]
pub struct JsonlRunWriter {
    steps: JsonlWriter,
    episodes: JsonlWriter,
    durability: Durability,
}

impl JsonlRunWriter {
    /// Writes through the two files, committing each episode with `durability`.
    pub fn new(steps: JsonlWriter, episodes: JsonlWriter, durability: Durability) -> Self {
        Self {
            steps,
            episodes,
            durability,
        }
    }
}

impl RecordWriter for JsonlRunWriter {
    fn write_step(&mut self, records: &[StepRecord]) -> Result<()> {
        records.iter().try_for_each(|r| self.steps.append(r))
    }

    fn write_episode(&mut self, record: &EpisodeRecord) -> Result<()> {
        // Steps first: an episode line in episodes.jsonl promises its steps are there.
        self.steps.commit(self.durability)?;
        self.episodes.append(record)?;
        self.episodes.commit(self.durability)
    }

    fn mark_complete(&mut self, _record: &EpisodeRecord) -> Result<()> {
        Ok(())
    }

    fn close(&mut self) -> Result<()> {
        self.steps.commit(self.durability)?;
        self.episodes.commit(self.durability)
    }
}
