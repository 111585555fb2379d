//! Export of a run's records as Parquet files (Arrow columns, zstd-compressed), for pandas,
//! polars, DuckDB or Spark.
//!
//! Three tables, written into one directory:
//!
//! - `steps.parquet`: one row per step record, the fields of
//!   [`mosaic_core::record::StepRecord`]; `events` is a list of JSON texts, `decision` JSON text;
//! - `episodes.parquet`: one row per episode record; the per-agent results are list
//!   columns in agent order (`agent_id`, `team`, `paradigm`, `kind`, `total_reward`,
//!   `outcome`, `decisions`, `timeouts`, `errors`); `metrics` and `restarts` JSON text;
//! - `llm_usage.parquet`: one row per LLM decision (a step record whose `decision` has
//!   the LLM fields the report reads, see [`crate::report::LlmDecision`]): tokens, parse outcome,
//!   re-prompts, cache hits, latency, HTTP attempts and the message sent.
//!
//! Integers keep their widths (`u32` indices, `u64` seeds and times), optional fields are
//! nullable. Rows are written in batches of [`BATCH_ROWS`], so memory stays flat whatever
//! the run's size.

use crate::RecorderError;
use crate::run_dir::Records;
use crate::unit_lines::{UnitLines, fold_workers};
use ::parquet::arrow::ArrowWriter;
use ::parquet::basic::{Compression, ZstdLevel};
use ::parquet::errors::ParquetError;
use ::parquet::file::properties::WriterProperties;
use arrow_array::builder::{
    BooleanBuilder, Float32Builder, Float64Builder, ListBuilder, StringBuilder, UInt32Builder,
    UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use mosaic_core::DecisionSource;
use mosaic_core::record::EpisodeRecord;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use step_line::{ExportStep, export_step};

mod step_line;

/// Rows per record batch handed to the Parquet writer.
pub const BATCH_ROWS: usize = 64 * 1024;
/// zstd level: level 3 compresses step records to a few percent of their JSON at a
/// speed well above the goal of a million records per second.
const ZSTD_LEVEL: i32 = 3;

/// Why a Parquet export failed.
#[derive(Debug, thiserror::Error)]
pub enum ParquetExportError {
    /// Reading the run failed.
    #[error(transparent)]
    Records(#[from] RecorderError),
    /// A file could not be created or written.
    #[error("{path}: {source}", path = path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The Parquet writer failed.
    #[error("{path}: {source}", path = path.display())]
    Parquet {
        /// The file.
        path: PathBuf,
        /// The writer's error.
        #[source]
        source: ParquetError,
    },
    /// Columns did not make a record batch (a bug: the schema and builders disagree).
    #[error("building a record batch: {0}")]
    Arrow(#[from] ArrowError),
}

/// Rows written per table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ParquetCounts {
    /// Rows of `steps.parquet`.
    pub steps: u64,
    /// Rows of `episodes.parquet`.
    pub episodes: u64,
    /// Rows of `llm_usage.parquet`.
    pub llm_usage: u64,
}

/// File names of the three tables.
pub const STEPS_FILE: &str = "steps.parquet";
/// See [`STEPS_FILE`].
pub const EPISODES_FILE: &str = "episodes.parquet";
/// See [`STEPS_FILE`].
pub const LLM_USAGE_FILE: &str = "llm_usage.parquet";

/// Writes the records of the complete units into `dir` (created if missing) as the three
/// tables; returns their row counts.
///
/// The step records are decoded into columns on worker threads while one thread reads the
/// units, this one gathers their rows into batches in the store's order, and another
/// encodes and compresses the batches built before into the files.
pub fn export_parquet(records: &Records, dir: &Path) -> Result<ParquetCounts, ParquetExportError> {
    std::fs::create_dir_all(dir).map_err(|source| ParquetExportError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let steps_file = TableFile::create::<StepColumns>(&dir.join(STEPS_FILE))?;
    let llm_file = TableFile::create::<LlmColumns>(&dir.join(LLM_USAGE_FILE))?;
    let (steps, llm_usage) = std::thread::scope(|scope| {
        let (send, receive) = std::sync::mpsc::sync_channel::<(StepTable, RecordBatch)>(2);
        let writer = scope.spawn(move || {
            let (mut steps_file, mut llm_file) = (steps_file, llm_file);
            for (table, batch) in receive {
                match table {
                    StepTable::Steps => steps_file.write(&batch)?,
                    StepTable::Llm => llm_file.write(&batch)?,
                }
            }
            Ok::<_, ParquetExportError>((steps_file.close()?, llm_file.close()?))
        });
        let built = build_step_batches(records, &send);
        drop(send);
        let written = writer
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        // The writer's error first: building stops when the writer has.
        let counts = written?;
        built?;
        Ok::<_, ParquetExportError>(counts)
    })?;
    let mut episodes = TableFile::create::<EpisodeColumns>(&dir.join(EPISODES_FILE))?;
    let mut columns = Batches::<EpisodeColumns>::default();
    for episode in records.episodes()? {
        if let Some(batch) = columns.push(&episode)? {
            episodes.write(&batch)?;
        }
    }
    if let Some(batch) = columns.finish()? {
        episodes.write(&batch)?;
    }
    Ok(ParquetCounts {
        steps,
        episodes: episodes.close()?,
        llm_usage,
    })
}

/// The tables made from step records.
#[derive(Clone, Copy)]
enum StepTable {
    Steps,
    Llm,
}

/// Builds the batches of the steps and LLM usage tables and hands them to `send`: the
/// units are decoded into columns on [`fold_workers`] threads, and their rows gathered
/// here, in order, into batches of [`BATCH_ROWS`].
fn build_step_batches(
    records: &Records,
    send: &std::sync::mpsc::SyncSender<(StepTable, RecordBatch)>,
) -> Result<(), ParquetExportError> {
    build_step_batches_on(records, fold_workers(), send)
}

/// [`build_step_batches`] with `workers` decoding threads: the batches are the same
/// whatever their number.
fn build_step_batches_on(
    records: &Records,
    workers: usize,
    send: &std::sync::mpsc::SyncSender<(StepTable, RecordBatch)>,
) -> Result<(), ParquetExportError> {
    let mut steps = Rebatch::new(StepColumns::schema());
    let mut llm = Rebatch::new(LlmColumns::schema());
    // The reading reports recorder errors only: the others wait here.
    let mut failure: Option<ParquetExportError> = None;
    let mut writer_gone = false;
    let mut hand =
        |table: StepTable, batches: Result<Vec<RecordBatch>, ParquetExportError>| match batches {
            Ok(batches) => {
                for batch in batches {
                    if send.send((table, batch)).is_err() {
                        writer_gone = true;
                        return false;
                    }
                }
                true
            }
            Err(e) => {
                failure.get_or_insert(e);
                false
            }
        };
    let read = records.map_units(
        workers,
        |unit| Ok(unit_tables(unit)),
        |tables| {
            let handed = match tables {
                Ok((unit_steps, unit_llm)) => {
                    hand(StepTable::Steps, steps.push(unit_steps))
                        && hand(StepTable::Llm, llm.push(unit_llm))
                }
                Err(e) => hand(StepTable::Steps, Err(e)),
            };
            match handed {
                true => Ok(()),
                // Stops the reading; the error given is the one that stopped it.
                false => Err(RecorderError::io(
                    Path::new(STEPS_FILE),
                    std::io::Error::other("the Parquet export stopped"),
                )),
            }
        },
    );
    if read.is_ok() {
        let _ = hand(StepTable::Steps, steps.finish()) && hand(StepTable::Llm, llm.finish());
    }
    if let Some(e) = failure {
        return Err(e);
    }
    // The writer failed: its error is given by the caller.
    if writer_gone {
        return Ok(());
    }
    read?;
    Ok(())
}

/// The rows of the steps and LLM usage tables of one unit.
fn unit_tables(unit: &UnitLines) -> Result<(RecordBatch, RecordBatch), ParquetExportError> {
    let mut steps = StepColumns::default();
    let mut llm = LlmColumns::default();
    unit.decode_each_quick(export_step, |step: ExportStep| {
        steps.append(&step);
        llm.append(&step);
        Ok(())
    })?;
    Ok((
        RecordBatch::try_new(Arc::new(StepColumns::schema()), steps.finish())?,
        RecordBatch::try_new(Arc::new(LlmColumns::schema()), llm.finish())?,
    ))
}

/// A table's rows as they come, unit by unit, gathered into batches of [`BATCH_ROWS`]
/// (the last one shorter): the batches, and so the files, do not depend on how the rows
/// came.
struct Rebatch {
    schema: SchemaRef,
    pending: Vec<RecordBatch>,
    rows: usize,
}

impl Rebatch {
    fn new(schema: Schema) -> Self {
        Self {
            schema: Arc::new(schema),
            pending: Vec::new(),
            rows: 0,
        }
    }

    /// Adds the rows of `batch`; the batches they fill.
    fn push(&mut self, mut batch: RecordBatch) -> Result<Vec<RecordBatch>, ParquetExportError> {
        let mut full = Vec::new();
        while self.rows + batch.num_rows() >= BATCH_ROWS {
            let take = BATCH_ROWS - self.rows;
            self.pending.push(batch.slice(0, take));
            self.rows += take;
            batch = batch.slice(take, batch.num_rows() - take);
            full.extend(self.finish()?);
        }
        if batch.num_rows() > 0 {
            self.rows += batch.num_rows();
            self.pending.push(batch);
        }
        Ok(full)
    }

    /// The rows added since the last batch, if any, as one.
    fn finish(&mut self) -> Result<Vec<RecordBatch>, ParquetExportError> {
        if self.rows == 0 {
            return Ok(Vec::new());
        }
        let batch = arrow_select::concat::concat_batches(&self.schema, &self.pending)?;
        self.pending.clear();
        self.rows = 0;
        Ok(vec![batch])
    }
}

/// Builders of one table's columns.
trait Columns: Default {
    /// The table's schema.
    fn schema() -> Schema;
    /// The built columns, in schema order; the builders start again empty.
    fn finish(&mut self) -> Vec<ArrayRef>;
}

/// Columns made of rows of type `R`.
trait Append<R: ?Sized> {
    /// Appends `row`; `false` when the row does not belong in the table.
    fn append(&mut self, row: &R) -> bool;
}

/// A table's columns being built, handed out in record batches of [`BATCH_ROWS`].
struct Batches<C: Columns> {
    schema: SchemaRef,
    columns: C,
    pending: usize,
}

impl<C: Columns> Default for Batches<C> {
    fn default() -> Self {
        Self {
            schema: Arc::new(C::schema()),
            columns: C::default(),
            pending: 0,
        }
    }
}

impl<C: Columns> Batches<C> {
    /// Appends `row`; the batch, once it is full.
    fn push<R: ?Sized>(&mut self, row: &R) -> Result<Option<RecordBatch>, ParquetExportError>
    where
        C: Append<R>,
    {
        if self.columns.append(row) {
            self.pending += 1;
            if self.pending == BATCH_ROWS {
                return self.finish();
            }
        }
        Ok(None)
    }

    /// The rows appended since the last batch, if any.
    fn finish(&mut self) -> Result<Option<RecordBatch>, ParquetExportError> {
        if self.pending == 0 {
            return Ok(None);
        }
        self.pending = 0;
        Ok(Some(RecordBatch::try_new(
            Arc::clone(&self.schema),
            self.columns.finish(),
        )?))
    }
}

/// A Parquet file being written batch by batch.
struct TableFile {
    path: PathBuf,
    writer: ArrowWriter<File>,
    written: u64,
}

impl TableFile {
    fn create<C: Columns>(path: &Path) -> Result<Self, ParquetExportError> {
        let file = File::create(path).map_err(|source| ParquetExportError::Io {
            path: path.to_owned(),
            source,
        })?;
        let parquet = |source| ParquetExportError::Parquet {
            path: path.to_owned(),
            source,
        };
        let properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(
                ZstdLevel::try_new(ZSTD_LEVEL).map_err(parquet)?,
            ))
            .build();
        let writer =
            ArrowWriter::try_new(file, Arc::new(C::schema()), Some(properties)).map_err(parquet)?;
        Ok(TableFile {
            path: path.to_owned(),
            writer,
            written: 0,
        })
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<(), ParquetExportError> {
        self.writer
            .write(batch)
            .map_err(|source| ParquetExportError::Parquet {
                path: self.path.clone(),
                source,
            })?;
        self.written += batch.num_rows() as u64;
        Ok(())
    }

    /// Writes the footer; returns the rows written.
    fn close(self) -> Result<u64, ParquetExportError> {
        self.writer
            .close()
            .map_err(|source| ParquetExportError::Parquet {
                path: self.path.clone(),
                source,
            })?;
        Ok(self.written)
    }
}

fn field(name: &str, data_type: DataType, nullable: bool) -> Field {
    Field::new(name, data_type, nullable)
}

/// A list column's type; items nullable, as the list builders make them.
fn list_of(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", item, true)))
}

fn source_name(source: DecisionSource) -> &'static str {
    match source {
        DecisionSource::Policy => "policy",
        DecisionSource::Timeout => "timeout",
        DecisionSource::Error => "error",
        DecisionSource::Environment => "environment",
    }
}

/// Columns of `steps.parquet`.
#[derive(Default)]
struct StepColumns {
    run_id: StringBuilder,
    operator_id: StringBuilder,
    episode_id: StringBuilder,
    episode_index: UInt32Builder,
    seed: UInt64Builder,
    step_index: UInt32Builder,
    agent_id: StringBuilder,
    paradigm: StringBuilder,
    kind: StringBuilder,
    action: UInt32Builder,
    action_label: StringBuilder,
    decision_source: StringBuilder,
    reward: Float32Builder,
    terminated: BooleanBuilder,
    truncated: BooleanBuilder,
    observation: StringBuilder,
    events: ListBuilder<StringBuilder>,
    decision: StringBuilder,
    decision_us: UInt64Builder,
    timestamp: UInt64Builder,
}

impl Columns for StepColumns {
    fn schema() -> Schema {
        Schema::new(vec![
            field("run_id", DataType::Utf8, false),
            field("operator_id", DataType::Utf8, false),
            field("episode_id", DataType::Utf8, false),
            field("episode_index", DataType::UInt32, false),
            field("seed", DataType::UInt64, false),
            field("step_index", DataType::UInt32, false),
            field("agent_id", DataType::Utf8, false),
            field("paradigm", DataType::Utf8, false),
            field("kind", DataType::Utf8, false),
            field("action", DataType::UInt32, true),
            field("action_label", DataType::Utf8, true),
            field("decision_source", DataType::Utf8, true),
            field("reward", DataType::Float32, false),
            field("terminated", DataType::Boolean, false),
            field("truncated", DataType::Boolean, false),
            field("observation", DataType::Utf8, true),
            field("events", list_of(DataType::Utf8), false),
            field("decision", DataType::Utf8, true),
            field("decision_us", DataType::UInt64, false),
            field("timestamp", DataType::UInt64, false),
        ])
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.run_id.finish()),
            Arc::new(self.operator_id.finish()),
            Arc::new(self.episode_id.finish()),
            Arc::new(self.episode_index.finish()),
            Arc::new(self.seed.finish()),
            Arc::new(self.step_index.finish()),
            Arc::new(self.agent_id.finish()),
            Arc::new(self.paradigm.finish()),
            Arc::new(self.kind.finish()),
            Arc::new(self.action.finish()),
            Arc::new(self.action_label.finish()),
            Arc::new(self.decision_source.finish()),
            Arc::new(self.reward.finish()),
            Arc::new(self.terminated.finish()),
            Arc::new(self.truncated.finish()),
            Arc::new(self.observation.finish()),
            Arc::new(self.events.finish()),
            Arc::new(self.decision.finish()),
            Arc::new(self.decision_us.finish()),
            Arc::new(self.timestamp.finish()),
        ]
    }
}

impl Append<ExportStep<'_>> for StepColumns {
    fn append(&mut self, s: &ExportStep) -> bool {
        self.run_id.append_value(&s.run_id);
        self.operator_id.append_value(&s.operator_id);
        self.episode_id.append_value(&s.episode_id);
        self.episode_index.append_value(s.episode_index);
        self.seed.append_value(s.seed);
        self.step_index.append_value(s.step_index);
        self.agent_id.append_value(&s.agent_id);
        self.paradigm.append_value(s.paradigm.name());
        self.kind.append_value(&s.kind);
        self.action.append_option(s.action);
        self.action_label
            .append_option(s.action_label.as_ref().map(|t| &t.0));
        self.decision_source
            .append_option(s.decision_source.map(source_name));
        self.reward.append_value(s.reward);
        self.terminated.append_value(s.terminated);
        self.truncated.append_value(s.truncated);
        self.observation
            .append_option(s.observation.as_ref().map(|t| &t.0));
        for event in &s.events.0 {
            self.events.values().append_option(event.as_deref());
        }
        self.events.append(true);
        self.decision
            .append_option(s.decision.as_ref().map(|d| &*d.text));
        self.decision_us.append_value(s.decision_us);
        self.timestamp.append_value(s.timestamp);
        true
    }
}

/// Columns of `llm_usage.parquet`.
#[derive(Default)]
struct LlmColumns {
    run_id: StringBuilder,
    operator_id: StringBuilder,
    episode_index: UInt32Builder,
    seed: UInt64Builder,
    step_index: UInt32Builder,
    agent_id: StringBuilder,
    kind: StringBuilder,
    prompt_tokens: UInt64Builder,
    completion_tokens: UInt64Builder,
    parse_ok: BooleanBuilder,
    retries: UInt64Builder,
    cache_hits: UInt64Builder,
    latency_ms: UInt64Builder,
    http_attempts: UInt64Builder,
    message: StringBuilder,
}

impl Columns for LlmColumns {
    fn schema() -> Schema {
        Schema::new(vec![
            field("run_id", DataType::Utf8, false),
            field("operator_id", DataType::Utf8, false),
            field("episode_index", DataType::UInt32, false),
            field("seed", DataType::UInt64, false),
            field("step_index", DataType::UInt32, false),
            field("agent_id", DataType::Utf8, false),
            field("kind", DataType::Utf8, false),
            field("prompt_tokens", DataType::UInt64, true),
            field("completion_tokens", DataType::UInt64, true),
            field("parse_ok", DataType::Boolean, true),
            field("retries", DataType::UInt64, true),
            field("cache_hits", DataType::UInt64, true),
            field("latency_ms", DataType::UInt64, true),
            field("http_attempts", DataType::UInt64, true),
            field("message", DataType::Utf8, true),
        ])
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.run_id.finish()),
            Arc::new(self.operator_id.finish()),
            Arc::new(self.episode_index.finish()),
            Arc::new(self.seed.finish()),
            Arc::new(self.step_index.finish()),
            Arc::new(self.agent_id.finish()),
            Arc::new(self.kind.finish()),
            Arc::new(self.prompt_tokens.finish()),
            Arc::new(self.completion_tokens.finish()),
            Arc::new(self.parse_ok.finish()),
            Arc::new(self.retries.finish()),
            Arc::new(self.cache_hits.finish()),
            Arc::new(self.latency_ms.finish()),
            Arc::new(self.http_attempts.finish()),
            Arc::new(self.message.finish()),
        ]
    }
}

impl Append<ExportStep<'_>> for LlmColumns {
    fn append(&mut self, s: &ExportStep) -> bool {
        let Some(decision) = &s.decision else {
            return false;
        };
        let Some(llm) = crate::report::LlmDecision::of(&decision.fields) else {
            return false;
        };
        self.run_id.append_value(&s.run_id);
        self.operator_id.append_value(&s.operator_id);
        self.episode_index.append_value(s.episode_index);
        self.seed.append_value(s.seed);
        self.step_index.append_value(s.step_index);
        self.agent_id.append_value(&s.agent_id);
        self.kind.append_value(&s.kind);
        self.prompt_tokens.append_option(llm.prompt_tokens);
        self.completion_tokens.append_option(llm.completion_tokens);
        self.parse_ok.append_option(llm.parse_ok);
        self.retries.append_option(llm.retries);
        self.cache_hits.append_option(llm.cache_hits);
        self.latency_ms.append_option(llm.latency_ms);
        self.http_attempts.append_option(llm.http_attempts);
        self.message.append_option(llm.message);
        true
    }
}

/// Columns of `episodes.parquet`.
#[derive(Default)]
struct EpisodeColumns {
    run_id: StringBuilder,
    operator_id: StringBuilder,
    episode_id: StringBuilder,
    episode_index: UInt32Builder,
    seed: UInt64Builder,
    env: StringBuilder,
    steps: UInt32Builder,
    terminated: BooleanBuilder,
    truncated: BooleanBuilder,
    agent_id: ListBuilder<StringBuilder>,
    team: ListBuilder<StringBuilder>,
    paradigm: ListBuilder<StringBuilder>,
    kind: ListBuilder<StringBuilder>,
    total_reward: ListBuilder<Float64Builder>,
    outcome: ListBuilder<StringBuilder>,
    decisions: ListBuilder<UInt32Builder>,
    timeouts: ListBuilder<UInt32Builder>,
    errors: ListBuilder<UInt32Builder>,
    metrics: StringBuilder,
    error: StringBuilder,
    restarts: StringBuilder,
    duration_ms: UInt64Builder,
    steps_per_s: Float64Builder,
    timestamp: UInt64Builder,
}

impl Columns for EpisodeColumns {
    fn schema() -> Schema {
        Schema::new(vec![
            field("run_id", DataType::Utf8, false),
            field("operator_id", DataType::Utf8, false),
            field("episode_id", DataType::Utf8, false),
            field("episode_index", DataType::UInt32, false),
            field("seed", DataType::UInt64, false),
            field("env", DataType::Utf8, false),
            field("steps", DataType::UInt32, false),
            field("terminated", DataType::Boolean, false),
            field("truncated", DataType::Boolean, false),
            field("agent_id", list_of(DataType::Utf8), false),
            field("team", list_of(DataType::Utf8), false),
            field("paradigm", list_of(DataType::Utf8), false),
            field("kind", list_of(DataType::Utf8), false),
            field("total_reward", list_of(DataType::Float64), false),
            field("outcome", list_of(DataType::Utf8), false),
            field("decisions", list_of(DataType::UInt32), false),
            field("timeouts", list_of(DataType::UInt32), false),
            field("errors", list_of(DataType::UInt32), false),
            field("metrics", DataType::Utf8, false),
            field("error", DataType::Utf8, true),
            field("restarts", DataType::Utf8, true),
            field("duration_ms", DataType::UInt64, false),
            field("steps_per_s", DataType::Float64, false),
            field("timestamp", DataType::UInt64, false),
        ])
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.run_id.finish()),
            Arc::new(self.operator_id.finish()),
            Arc::new(self.episode_id.finish()),
            Arc::new(self.episode_index.finish()),
            Arc::new(self.seed.finish()),
            Arc::new(self.env.finish()),
            Arc::new(self.steps.finish()),
            Arc::new(self.terminated.finish()),
            Arc::new(self.truncated.finish()),
            Arc::new(self.agent_id.finish()),
            Arc::new(self.team.finish()),
            Arc::new(self.paradigm.finish()),
            Arc::new(self.kind.finish()),
            Arc::new(self.total_reward.finish()),
            Arc::new(self.outcome.finish()),
            Arc::new(self.decisions.finish()),
            Arc::new(self.timeouts.finish()),
            Arc::new(self.errors.finish()),
            Arc::new(self.metrics.finish()),
            Arc::new(self.error.finish()),
            Arc::new(self.restarts.finish()),
            Arc::new(self.duration_ms.finish()),
            Arc::new(self.steps_per_s.finish()),
            Arc::new(self.timestamp.finish()),
        ]
    }
}

impl Append<EpisodeRecord> for EpisodeColumns {
    fn append(&mut self, e: &EpisodeRecord) -> bool {
        self.run_id.append_value(&e.run_id);
        self.operator_id.append_value(&e.operator_id);
        self.episode_id.append_value(&e.episode_id);
        self.episode_index.append_value(e.episode_index);
        self.seed.append_value(e.seed);
        self.env.append_value(&e.env);
        self.steps.append_value(e.steps);
        self.terminated.append_value(e.terminated);
        self.truncated.append_value(e.truncated);
        for agent in &e.agents {
            self.agent_id.values().append_value(&agent.agent_id);
            self.team.values().append_option(agent.team.as_deref());
            self.paradigm.values().append_value(agent.paradigm.name());
            self.kind.values().append_value(&agent.kind);
            self.total_reward.values().append_value(agent.total_reward);
            self.outcome
                .values()
                .append_option(agent.outcome.map(|o| match o {
                    mosaic_core::Outcome::Win => "win",
                    mosaic_core::Outcome::Draw => "draw",
                    mosaic_core::Outcome::Loss => "loss",
                }));
            self.decisions.values().append_value(agent.decisions);
            self.timeouts.values().append_value(agent.timeouts);
            self.errors.values().append_value(agent.errors);
        }
        self.agent_id.append(true);
        self.team.append(true);
        self.paradigm.append(true);
        self.kind.append(true);
        self.total_reward.append(true);
        self.outcome.append(true);
        self.decisions.append(true);
        self.timeouts.append(true);
        self.errors.append(true);
        self.metrics
            .append_value(serde_json::Value::Object(e.metrics.clone()).to_string());
        self.error.append_option(e.error.as_deref());
        self.restarts.append_option(
            (!e.restarts.is_empty())
                .then(|| serde_json::to_string(&e.restarts).ok())
                .flatten(),
        );
        self.duration_ms.append_value(e.duration_ms);
        self.steps_per_s.append_value(e.steps_per_s);
        self.timestamp.append_value(e.timestamp);
        true
    }
}

#[cfg(test)]
mod tests;
