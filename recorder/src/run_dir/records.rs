//! What readers get of a run: its complete units' records, from the store or, without
//! opening it, from the JSON-lines logs through an index of the step log.

use super::logs;
use crate::error::{RecorderError, Result};
use crate::jsonl::TornTail;
use crate::store::{RunStore, Unit};
use crate::unit_lines::{LineBuffers, UnitLines};
use mosaic_core::record::{EpisodeRecord, RunManifest, StepRecord};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The records of a run's complete units.
#[derive(Debug)]
pub enum Records {
    /// From the store: complete units in operator, episode, step, agent order.
    Store(Box<RunStore>),
    /// From the JSON-lines files, without the store: units with an episode record, in the
    /// store's order. For a finished run, a run another process is writing, or one this
    /// process may only read.
    Logs {
        /// `steps.jsonl`.
        steps_path: PathBuf,
        /// The episode records read, in the store's order.
        episodes: Vec<EpisodeRecord>,
        /// Whether another process is writing the run.
        writing: bool,
        /// Where each unit's step lines are, indexed on first use.
        index: StepIndex,
    },
}

/// The index of a run's step lines (`logs::LogIndex`), built on first use.
#[derive(Debug)]
pub struct StepIndex {
    /// Operator id and episode index of each complete unit → its place in the store's order.
    units: HashMap<(String, u32), logs::UnitOrder>,
    built: std::sync::OnceLock<logs::LogIndex>,
}

impl StepIndex {
    pub(super) fn new(manifest: &RunManifest, episodes: &[EpisodeRecord]) -> Self {
        let position: HashMap<&str, usize> = manifest
            .experiment
            .operators
            .iter()
            .enumerate()
            .map(|(i, op)| (op.id.as_str(), i))
            .collect();
        let units = episodes
            .iter()
            .map(|e| {
                // An operator the experiment does not name sorts after the others.
                let operator = position
                    .get(e.operator_id.as_str())
                    .copied()
                    .unwrap_or(position.len());
                (
                    (e.operator_id.clone(), e.episode_index),
                    (operator, e.episode_index),
                )
            })
            .collect();
        Self {
            units,
            built: std::sync::OnceLock::new(),
        }
    }

    fn get(&self, steps_path: &Path) -> Result<&logs::LogIndex> {
        if let Some(index) = self.built.get() {
            return Ok(index);
        }
        let complete: HashMap<(&str, u32), logs::UnitOrder> = self
            .units
            .iter()
            .map(|((operator, episode), order)| ((operator.as_str(), *episode), *order))
            .collect();
        let index = logs::LogIndex::build(steps_path, &complete)?;
        Ok(self.built.get_or_init(|| index))
    }

    fn order(&self, unit: &Unit) -> Option<logs::UnitOrder> {
        self.units
            .get(&(unit.operator_id.clone(), unit.episode_index))
            .copied()
    }
}

/// Distinct (operator, episode) units among `episodes`.
pub(super) fn distinct_units(episodes: &[EpisodeRecord]) -> usize {
    episodes
        .iter()
        .map(|e| (e.operator_id.as_str(), e.episode_index))
        .collect::<BTreeSet<_>>()
        .len()
}

impl Records {
    /// Folds the units of these records into one state per worker thread (`workers` of them, at
    /// least one), made by `init`; this thread reads the units and hands each, whole, to a
    /// free worker. Returns the states (to be merged: which worker got which unit is not
    /// fixed) and the torn tail of the log, if any. Stops at the first error.
    pub(crate) fn fold_units<S: Send>(
        &self,
        workers: usize,
        init: impl Fn() -> S + Sync,
        fold: impl Fn(&mut S, &UnitLines) -> Result<()> + Sync,
    ) -> Result<(Vec<S>, Option<TornTail>)> {
        // A few units queued per worker keep them busy while this thread reads.
        let (send, receive) = std::sync::mpsc::sync_channel::<UnitLines>(2 * workers.max(1));
        let receive = Mutex::new(receive);
        let failure: Mutex<Option<RecorderError>> = Mutex::new(None);
        let buffers = LineBuffers::default();
        let work = || {
            let mut state = init();
            let mut failed = false;
            loop {
                // The lock is held while waiting only: one worker takes the next unit.
                let next = match receive.lock() {
                    Ok(receiver) => receiver.recv(),
                    Err(_) => break,
                };
                let Ok(unit) = next else { break };
                // After a failure the units still queued are drained, not folded: the reader
                // must not wait on a full queue.
                if failed {
                    continue;
                }
                if let Err(e) = fold(&mut state, &unit) {
                    failed = true;
                    if let Ok(mut failure) = failure.lock() {
                        failure.get_or_insert(e);
                    }
                }
                buffers.give(unit);
            }
            state
        };
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers.max(1)).map(|_| scope.spawn(work)).collect();
            let read = self.for_each_unit_lines_into(&buffers, |unit| {
                if let Some(e) = failure.lock().ok().and_then(|mut f| f.take()) {
                    return Err(e);
                }
                // The workers receive until the channel closes: sending cannot fail.
                let _ = send.send(unit);
                Ok(())
            });
            drop(send);
            let states: Vec<S> = handles
                .into_iter()
                .map(|handle| {
                    handle
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect();
            let torn_tail = read?;
            if let Some(e) = failure.lock().ok().and_then(|mut f| f.take()) {
                return Err(e);
            }
            Ok((states, torn_tail))
        })
    }

    /// Maps every unit of these records with `map` on `workers` threads (at least one)
    /// while another thread reads them, and hands the results to `each` on this thread,
    /// in the store's order. Returns the torn tail of the log, if any. Stops at the first
    /// error, in that order.
    #[cfg(feature = "parquet")]
    pub(crate) fn map_units<T: Send>(
        &self,
        workers: usize,
        map: impl Fn(&UnitLines) -> Result<T> + Sync,
        mut each: impl FnMut(T) -> Result<()>,
    ) -> Result<Option<TornTail>> {
        use std::sync::atomic::{AtomicBool, Ordering};
        let workers = workers.max(1);
        let (send_unit, receive_unit) = std::sync::mpsc::sync_channel::<(u64, UnitLines)>(
            // A few units queued per worker keep them busy while the reader reads.
            2 * workers,
        );
        let (send_result, receive_result) =
            std::sync::mpsc::sync_channel::<(u64, Result<T>)>(2 * workers);
        let (receive_unit, stop, buffers, map) = (
            &Mutex::new(receive_unit),
            &AtomicBool::new(false),
            &LineBuffers::default(),
            &map,
        );
        std::thread::scope(|scope| {
            let reader = scope.spawn(move || {
                let mut sequence = 0;
                self.for_each_unit_lines_into(buffers, |unit| {
                    if stop.load(Ordering::Relaxed) {
                        // Ends the reading; the error that stopped it is given instead.
                        return Err(RecorderError::io(
                            Path::new(""),
                            std::io::Error::other("reading stopped"),
                        ));
                    }
                    // The workers receive until the channel closes: sending cannot fail.
                    let _ = send_unit.send((sequence, unit));
                    sequence += 1;
                    Ok(())
                })
            });
            for _ in 0..workers {
                let send_result = send_result.clone();
                scope.spawn(move || {
                    loop {
                        // The lock is held while waiting only: one worker takes the next unit.
                        let next = match receive_unit.lock() {
                            Ok(receiver) => receiver.recv(),
                            Err(_) => break,
                        };
                        let Ok((sequence, unit)) = next else { break };
                        // After a failure the units still queued are drained, not mapped: the
                        // reader must not wait on a full queue.
                        if stop.load(Ordering::Relaxed) {
                            continue;
                        }
                        let result = map(&unit);
                        buffers.give(unit);
                        if send_result.send((sequence, result)).is_err() {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                });
            }
            drop(send_result);
            // Results come in the order the workers finish: those ahead wait their turn.
            let mut waiting = std::collections::BTreeMap::new();
            let mut next = 0;
            let mut failure = None;
            'receive: for (sequence, result) in &receive_result {
                waiting.insert(sequence, result);
                while let Some(result) = waiting.remove(&next) {
                    next += 1;
                    if let Err(e) = result.and_then(&mut each) {
                        failure = Some(e);
                        break 'receive;
                    }
                }
            }
            if failure.is_some() {
                stop.store(true, Ordering::Relaxed);
            }
            // The workers' results are not waited for any more.
            drop(receive_result);
            let read = reader
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            match failure {
                Some(e) => Err(e),
                None => read,
            }
        })
    }

    /// Whether the records come from a run still being written.
    pub fn is_live(&self) -> bool {
        matches!(self, Records::Logs { writing: true, .. })
    }

    /// The complete units, in operator then episode order of the store.
    pub fn units(&self) -> Result<Vec<Unit>> {
        match self {
            Records::Store(store) => store.completed_units(),
            Records::Logs { episodes, .. } => {
                let mut units: Vec<Unit> = episodes
                    .iter()
                    .map(|e| Unit::new(e.operator_id.clone(), e.episode_index))
                    .collect();
                units.dedup();
                Ok(units)
            }
        }
    }

    /// The roll-ups of the complete units.
    pub fn episodes(&self) -> Result<Vec<EpisodeRecord>> {
        match self {
            Records::Store(store) => store.complete_episodes().collect(),
            Records::Logs { episodes, .. } => Ok(episodes.clone()),
        }
    }

    /// The roll-up of complete unit `unit`, if it is complete.
    pub fn episode(&self, unit: &Unit) -> Result<Option<EpisodeRecord>> {
        match self {
            Records::Store(store) => match store.is_complete(unit)? {
                true => store.episode(unit),
                false => Ok(None),
            },
            Records::Logs { episodes, .. } => Ok(episodes
                .iter()
                .find(|e| {
                    e.operator_id == unit.operator_id && e.episode_index == unit.episode_index
                })
                .cloned()),
        }
    }

    /// The step records of complete unit `unit`, in step and agent order.
    pub fn steps_of(&self, unit: &Unit) -> Result<Vec<StepRecord>> {
        match self {
            Records::Store(store) => store.steps_of(unit),
            Records::Logs {
                steps_path, index, ..
            } => {
                let Some(order) = index.order(unit) else {
                    return Ok(Vec::new());
                };
                let mut steps = index.get(steps_path)?.unit(order)?;
                steps.sort_by_key(|r| r.step_index);
                Ok(steps)
            }
        }
    }

    /// Calls `each` with every step record of the complete units, in the store's order.
    /// Returns the torn tail of `steps.jsonl`, if the file being written ends in one.
    pub fn for_each_step(
        &self,
        mut each: impl FnMut(&StepRecord) -> Result<()>,
    ) -> Result<Option<TornTail>> {
        self.for_each_unit_lines(|lines| lines.decode_each(|record: StepRecord| each(&record)))
    }

    /// Calls `each` with the step lines of every complete unit, in the store's order.
    /// Returns the torn tail of `steps.jsonl`, if the file being written ends in one.
    pub(crate) fn for_each_unit_lines(
        &self,
        each: impl FnMut(UnitLines) -> Result<()>,
    ) -> Result<Option<TornTail>> {
        self.for_each_unit_lines_into(&LineBuffers::default(), each)
    }

    /// [`Records::for_each_unit_lines`], reading the store's units into buffers from
    /// `buffers` (those given back by the readers of the units before).
    pub(crate) fn for_each_unit_lines_into(
        &self,
        buffers: &LineBuffers,
        mut each: impl FnMut(UnitLines) -> Result<()>,
    ) -> Result<Option<TornTail>> {
        match self {
            Records::Store(store) => {
                store.for_each_complete_unit_lines(
                    || buffers.take(),
                    |lines| each(UnitLines::from_store(lines, store.path().to_owned())),
                )?;
                Ok(None)
            }
            Records::Logs {
                steps_path, index, ..
            } => {
                let index = index.get(steps_path)?;
                index.for_each_unit(each)?;
                Ok(index.torn_tail().cloned())
            }
        }
    }
}
