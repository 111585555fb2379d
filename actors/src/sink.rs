//! The telemetry sink: writes the records sessions emit into the run directory.
//!
//! One [`RecordSink`] actor per run, on its own arbiter thread, so that writing overlaps
//! stepping. It feeds both destinations of a run, `steps.jsonl`/`episodes.jsonl` and the
//! store, from one serialisation of each record (a [`RunWriter`]).
//!
//! - [`StepEvent`]: a batch of steps; the records are serialised and buffered (bounded: the
//!   JSON-lines buffer, store chunks of at most 64 steps per running episode). Sessions send
//!   a batch only once the previous one has been handled, so a slow disk slows the run.
//! - [`EpisodeEvent`]: answered only once every record of the episode is durable (group
//!   commit: one sync covers every episode that ended meanwhile, and the sync runs on a
//!   blocking thread while the sink keeps taking steps), and after the unit has been marked
//!   complete in the store's index. An `EpisodeEvent` may overtake the last `StepEvent`s of
//!   its episode in the mailboxes: the sink waits until it has seen the records of the
//!   episode's last step (each step once, in step order, in any number of step events).
//! - [`CheckpointEvent`]: saved once the step records before it are durable
//!   ([`RunWriter::write_checkpoint`]). A resumed episode starts with the checkpoint it
//!   continues from, which tells the sink that its earlier steps are already written.
//! - A write failure stops the sink: nothing is acknowledged any more, every pending and
//!   later request fails with a closed mailbox, and [`Sinks::failure`] tells why.
//!
//! A new run: `let (run, store) = RunDir::create(dir, &manifest)?`. Resuming one:
//! `let run = RunDir::open(dir)?; let store = run.store()?; run.discard_incomplete(&store)?;`
//! then run `store.remaining_units()?`. Either way `Sinks::start(&run, &store, durability)`,
//! and [`Sinks::close`] once every session has finished.
//!
//! ```
//! use mosaic_actors::sink::Sinks;
//! use mosaic_actors::{EpisodeEvent, StepEvent};
//! use mosaic_recorder::{Durability, RunDir, synthetic};
//! use std::sync::Arc;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let manifest = synthetic::manifest("r1", &["a"], 1, 7);
//! let (run, store) = RunDir::create(&dir.path().join("r1"), &manifest).unwrap();
//! actix::System::new().block_on(async move {
//!     let sinks = Sinks::start(&run, &store, Durability::Sync).unwrap();
//!     let episode = synthetic::episode(&synthetic::unit("r1", "a", 0, 7), 3, 2);
//!     for step in episode.steps {
//!         for sink in &sinks.steps {
//!             sink.send(StepEvent { records: Arc::new(step.clone()) }).await.unwrap();
//!         }
//!     }
//!     for sink in &sinks.episodes {
//!         sink.send(EpisodeEvent { record: Arc::new(episode.record.clone()) }).await.unwrap();
//!     }
//!     assert!(store.remaining_units().unwrap().is_empty());
//!     sinks.close().await.unwrap();
//! });
//! ```

use crate::error::SinkError;
use crate::publish::Subscribers;
use crate::{CheckpointEvent, EpisodeEvent, StepEvent};
use actix::prelude::*;
use futures::channel::oneshot;
use mosaic_core::record::{EpisodeRecord, RunManifest, StepRecord};
use mosaic_recorder::{Compression, Durability, RecorderError, RunDir, RunStore, RunWriter};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Events (step batches, roll-ups) the sink's mailbox holds before senders wait.
const MAILBOX: usize = 256;

/// Why a sink stopped, shared between the actor and [`Sinks`].
#[derive(Clone, Debug, Default)]
struct Failure(Arc<Mutex<Option<String>>>);

impl Failure {
    fn set(&self, message: String) {
        if let Ok(mut slot) = self.0.lock() {
            slot.get_or_insert(message);
        }
    }

    fn get(&self) -> Option<String> {
        self.0.lock().ok().and_then(|slot| slot.clone())
    }
}

/// An episode whose steps are still being counted.
struct OpenEpisode {
    operator_id: String,
    episode_index: u32,
    /// Steps whose events arrived: the index of the next step.
    next_step: u32,
    /// The episode event, once it arrived before all its steps.
    ended: Option<(Arc<EpisodeRecord>, oneshot::Sender<()>)>,
}

/// The episodes being counted: as many as sessions run at once, so a list searched by
/// borrowed ids (no key to build per step event).
#[derive(Default)]
struct OpenEpisodes(Vec<OpenEpisode>);

impl OpenEpisodes {
    fn position(&self, operator_id: &str, episode_index: u32) -> Option<usize> {
        self.0
            .iter()
            .position(|e| e.episode_index == episode_index && e.operator_id == operator_id)
    }

    fn entry(&mut self, operator_id: &str, episode_index: u32) -> (usize, &mut OpenEpisode) {
        let at = self
            .position(operator_id, episode_index)
            .unwrap_or_else(|| {
                self.0.push(OpenEpisode {
                    operator_id: operator_id.to_owned(),
                    episode_index,
                    next_step: 0,
                    ended: None,
                });
                self.0.len() - 1
            });
        (at, &mut self.0[at])
    }

    fn remove(&mut self, at: usize) -> OpenEpisode {
        self.0.swap_remove(at)
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

/// The actor writing a run's records. Start it through [`Sinks::start`].
pub struct RecordSink {
    writer: RunWriter,
    open: OpenEpisodes,
    /// Episodes written, waiting for the next commit.
    queued: Vec<(Arc<EpisodeRecord>, oneshot::Sender<()>)>,
    committing: bool,
    failure: Failure,
}

impl std::fmt::Debug for RecordSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordSink").finish_non_exhaustive()
    }
}

impl Actor for RecordSink {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(MAILBOX);
    }
}

/// Starts a commit of the episodes queued so far.
#[derive(Message)]
#[rtype(result = "()")]
struct Commit;

/// Makes everything durable and answers when done (the end of a run).
#[derive(Message)]
#[rtype(result = "Result<(), SinkError>")]
struct Close;

impl RecordSink {
    fn fail(&mut self, ctx: &mut Context<Self>, error: &RecorderError) {
        let message = error.to_string();
        tracing::error!(error = %message, "telemetry sink failed; stopping the run's recording");
        self.failure.set(message);
        self.open.clear();
        self.queued.clear();
        ctx.stop();
    }

    /// The episode's steps are all written: write its roll-up and queue it for a commit.
    fn end_episode(
        &mut self,
        record: Arc<EpisodeRecord>,
        done: oneshot::Sender<()>,
        ctx: &mut Context<Self>,
    ) -> Result<(), RecorderError> {
        self.writer.write_episode(&record)?;
        self.queued.push((record, done));
        if !self.committing {
            // Episodes that end while a commit syncs are queued and share the next one.
            ctx.notify(Commit);
        }
        Ok(())
    }
}

impl Handler<StepEvent> for RecordSink {
    type Result = ();

    fn handle(&mut self, event: StepEvent, ctx: &mut Context<Self>) {
        // A session's batch holds steps of one episode; other senders may mix episodes.
        let episodes = event
            .records
            .chunk_by(|a, b| a.episode_index == b.episode_index && a.operator_id == b.operator_id);
        for records in episodes {
            if let Err(e) = self.write_steps(records, ctx) {
                return self.fail(ctx, &e);
            }
        }
    }
}

impl RecordSink {
    /// Writes consecutive steps of one episode and counts them; ends the episode when its
    /// roll-up is waiting for exactly these.
    fn write_steps(
        &mut self,
        records: &[StepRecord],
        ctx: &mut Context<Self>,
    ) -> Result<(), RecorderError> {
        let Some(first) = records.first() else {
            return Ok(());
        };
        self.writer.write_step(records)?;
        let last = records.last().map_or(first.step_index, |r| r.step_index);
        let (at, open) = self.open.entry(&first.operator_id, first.episode_index);
        open.next_step = last + 1;
        if let Some((record, _)) = &open.ended {
            if open.next_step > record.steps {
                return Err(foreign(format!(
                    "{}: steps beyond the {} its episode record counts",
                    record.episode_id, record.steps
                )));
            }
            if open.next_step == record.steps
                && let OpenEpisode {
                    ended: Some((record, done)),
                    ..
                } = self.open.remove(at)
            {
                self.end_episode(record, done, ctx)?;
            }
        }
        Ok(())
    }
}

fn foreign(message: String) -> RecorderError {
    RecorderError::Foreign {
        path: std::path::PathBuf::from("step events"),
        message,
    }
}

impl Handler<EpisodeEvent> for RecordSink {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, event: EpisodeEvent, ctx: &mut Context<Self>) -> Self::Result {
        let (done, acknowledged) = oneshot::channel();
        let at = self
            .open
            .position(&event.record.operator_id, event.record.episode_index);
        let seen = at.map_or(0, |at| self.open.0[at].next_step);
        if seen > event.record.steps {
            let message = format!(
                "{}: steps recorded up to step {seen} for an episode record of {} steps",
                event.record.episode_id, event.record.steps
            );
            self.fail(ctx, &foreign(message));
        } else if seen == event.record.steps {
            if let Some(at) = at {
                self.open.remove(at);
            }
            if let Err(e) = self.end_episode(event.record, done, ctx) {
                self.fail(ctx, &e);
            }
        } else {
            let (_, open) = self
                .open
                .entry(&event.record.operator_id, event.record.episode_index);
            open.ended = Some((event.record, done));
        }
        // Answer only on success; on failure the sink stops and the request fails.
        Box::pin(actix::fut::wrap_future::<_, Self>(acknowledged).then(
            |result, _, ctx| match result {
                Ok(()) => actix::fut::ready(()).boxed_local(),
                Err(_) => {
                    ctx.stop();
                    actix::fut::wrap_future(futures::future::pending::<()>()).boxed_local()
                }
            },
        ))
    }
}

impl Handler<CheckpointEvent> for RecordSink {
    type Result = ();

    fn handle(&mut self, event: CheckpointEvent, ctx: &mut Context<Self>) {
        let checkpoint = &event.checkpoint;
        if let Err(e) = self.writer.write_checkpoint(checkpoint) {
            return self.fail(ctx, &e);
        }
        let (_, open) = self
            .open
            .entry(&checkpoint.operator_id, checkpoint.episode_index);
        open.next_step = open.next_step.max(checkpoint.step_index);
    }
}

impl Handler<Commit> for RecordSink {
    type Result = ();

    fn handle(&mut self, _: Commit, ctx: &mut Context<Self>) {
        if self.committing || self.queued.is_empty() {
            return;
        }
        let sync = match self.writer.prepare_commit() {
            Ok(sync) => sync,
            Err(e) => return self.fail(ctx, &e),
        };
        let batch = std::mem::take(&mut self.queued);
        if sync.is_empty() {
            // Durable once flushed (`Durability::Flush`): no thread to wait for.
            return self.complete(batch, ctx);
        }
        self.committing = true;
        let waiting = actix_rt::task::spawn_blocking(move || sync.wait());
        ctx.spawn(
            actix::fut::wrap_future::<_, Self>(waiting).map(move |synced, sink, ctx| {
                sink.committing = false;
                let synced = synced.unwrap_or_else(|_| {
                    Err(RecorderError::io(
                        "sync thread",
                        std::io::Error::other("sync thread panicked"),
                    ))
                });
                if let Err(e) = synced {
                    return sink.fail(ctx, &e);
                }
                sink.complete(batch, ctx);
            }),
        );
    }
}

impl RecordSink {
    /// Marks the committed `batch` complete and answers its sessions.
    fn complete(
        &mut self,
        batch: Vec<(Arc<EpisodeRecord>, oneshot::Sender<()>)>,
        ctx: &mut Context<Self>,
    ) {
        for (record, done) in batch {
            if let Err(e) = self.writer.mark_complete(&record) {
                return self.fail(ctx, &e);
            }
            // The session may have given up waiting: nothing to tell it then.
            let _ = done.send(());
        }
        if !self.queued.is_empty() {
            ctx.notify(Commit);
        }
    }
}

impl RecordSink {
    /// Commits, marks what was queued, and syncs the store.
    fn close_all(&mut self) -> Result<(), RecorderError> {
        self.writer.commit()?;
        for (record, done) in std::mem::take(&mut self.queued) {
            self.writer.mark_complete(&record)?;
            let _ = done.send(());
        }
        self.writer.close()
    }
}

impl Handler<Close> for RecordSink {
    type Result = Result<(), SinkError>;

    fn handle(&mut self, _: Close, ctx: &mut Context<Self>) -> Self::Result {
        self.close_all().map_err(|e| {
            self.fail(ctx, &e);
            SinkError::Recorder(e)
        })
    }
}

/// The running telemetry sink of a run: where sessions send their events.
pub struct Sinks {
    /// Recipients of every [`StepEvent`].
    pub steps: Vec<Recipient<StepEvent>>,
    /// Recipients of every [`EpisodeEvent`]; await each answer.
    pub episodes: Vec<Recipient<EpisodeEvent>>,
    /// Recipients of every [`CheckpointEvent`].
    pub checkpoints: Vec<Recipient<CheckpointEvent>>,
    close: Recipient<Close>,
    arbiter: Arbiter,
    failure: Failure,
}

impl std::fmt::Debug for Sinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sinks")
            .field("failure", &self.failure.get())
            .finish_non_exhaustive()
    }
}

impl Sinks {
    /// Creates the run directory of `manifest` at `dir` (its step log stored with
    /// `steps`) and starts its sink: the one recording set-up of script runs and of manual
    /// runs. If the sink cannot start, the fresh directory is removed again. Call inside an
    /// actix system.
    pub fn create_run(
        dir: &Path,
        manifest: &RunManifest,
        durability: Durability,
        steps: Compression,
    ) -> Result<(RunDir, RunStore, Sinks), SinkError> {
        let (run, store) = RunDir::create_with(dir, manifest, steps)?;
        match Sinks::start(&run, &store, durability) {
            Ok(sinks) => Ok((run, store, sinks)),
            Err(error) => {
                drop(store);
                if let Err(removal) = std::fs::remove_dir_all(run.path()) {
                    tracing::warn!(path = %run.path().display(), %removal, "cannot remove the run that did not start");
                }
                Err(error)
            }
        }
    }

    /// Starts the sink of `run` on a new arbiter thread (call inside an actix system).
    /// `store` is the run's open store (from [`RunDir::create`] or [`RunDir::store`]).
    pub fn start(
        run: &RunDir,
        store: &RunStore,
        durability: Durability,
    ) -> Result<Sinks, SinkError> {
        let writer = run.writer(store, durability)?;
        let failure = Failure::default();
        let arbiter = Arbiter::new();
        let sink_failure = failure.clone();
        let addr = RecordSink::start_in_arbiter(&arbiter.handle(), move |_| RecordSink {
            writer,
            open: OpenEpisodes::default(),
            queued: Vec::new(),
            committing: false,
            failure: sink_failure,
        });
        Ok(Sinks {
            steps: vec![addr.clone().recipient()],
            episodes: vec![addr.clone().recipient()],
            checkpoints: vec![addr.clone().recipient()],
            close: addr.recipient(),
            arbiter,
            failure,
        })
    }

    /// The sink as the subscribers of a session: every step, roll-up and checkpoint.
    pub fn subscribers(&self) -> Subscribers {
        Subscribers {
            steps: self.steps.clone(),
            episodes: self.episodes.clone(),
            checkpoints: self.checkpoints.clone(),
        }
    }

    /// Why the sink stopped, if it failed.
    pub fn failure(&self) -> Option<String> {
        self.failure.get()
    }

    /// Makes everything written durable and stops the sink's thread. Call after every
    /// session has finished.
    pub async fn close(self) -> Result<(), SinkError> {
        let closed = match self.close.send(Close).await {
            Ok(result) => result,
            Err(_) => Err(SinkError::Stopped(
                self.failure
                    .get()
                    .unwrap_or_else(|| "the sink is gone".to_owned()),
            )),
        };
        self.arbiter.stop();
        let _ = self.arbiter.join();
        closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use mosaic_recorder::synthetic::{self, SyntheticEpisode};
    use mosaic_recorder::{RunStatus, Unit};

    /// Sends an episode like a session: step events with a bounded window of requests in
    /// flight, then the episode event, awaited.
    async fn play(
        sinks_steps: Vec<Recipient<StepEvent>>,
        sinks_episodes: Vec<Recipient<EpisodeEvent>>,
        episode: SyntheticEpisode,
    ) {
        let requests = episode.steps.into_iter().flat_map(|step| {
            let records = Arc::new(step);
            sinks_steps
                .iter()
                .map(|sink| {
                    sink.send(StepEvent {
                        records: records.clone(),
                    })
                })
                .collect::<Vec<_>>()
        });
        let mut window = futures::stream::iter(requests).buffered(8);
        while let Some(answer) = window.next().await {
            answer.unwrap();
        }
        let record = Arc::new(episode.record);
        for sink in &sinks_episodes {
            sink.send(EpisodeEvent {
                record: record.clone(),
            })
            .await
            .unwrap();
        }
    }

    #[test]
    fn concurrent_sessions_are_recorded_completely_and_consistently() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = synthetic::manifest("run", &["a", "b", "c"], 6, 3);
        let episodes = synthetic::run_episodes(&manifest, 40, 4);
        let (run, store) = RunDir::create(&dir.path().join("run"), &manifest).unwrap();
        let check_store = store.clone();
        let moved_store = check_store.clone();
        actix::System::new().block_on(async move {
            let check_store = moved_store;
            let sinks = Sinks::start(&run, &store, Durability::Sync).unwrap();
            // Three operators × two parallel episodes at a time, interleaved.
            let mut sessions = Vec::new();
            for lane in 0..6 {
                let mine: Vec<_> = episodes.iter().skip(lane).step_by(6).cloned().collect();
                let (steps, ends) = (sinks.steps.clone(), sinks.episodes.clone());
                let store = check_store.clone();
                sessions.push(actix_rt::spawn(async move {
                    for episode in mine {
                        let unit = Unit::new(
                            episode.record.operator_id.clone(),
                            episode.record.episode_index,
                        );
                        play(steps.clone(), ends.clone(), episode).await;
                        // Acknowledged means complete in the index.
                        assert!(store.is_complete(&unit).unwrap(), "{unit}");
                    }
                }));
            }
            for session in sessions {
                session.await.unwrap();
            }
            assert_eq!(sinks.failure(), None);
            sinks.close().await.unwrap();
        });
        drop(check_store);
        let run = RunDir::open(&dir.path().join("run")).unwrap();
        assert_eq!(run.summary().unwrap().status, RunStatus::Complete);
        let store = run.store().unwrap();
        assert_eq!(run.check_consistency(&store).unwrap(), Vec::<String>::new());
        for episode in synthetic::run_episodes(&manifest, 40, 4) {
            let unit = Unit::new(
                episode.record.operator_id.clone(),
                episode.record.episode_index,
            );
            assert_eq!(store.steps_of(&unit).unwrap(), episode.steps.concat());
            assert_eq!(store.episode(&unit).unwrap(), Some(episode.record));
        }
    }

    #[test]
    fn batches_of_steps_are_counted_per_episode_even_across_episodes() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = synthetic::manifest("run", &["a"], 2, 3);
        let episodes = synthetic::run_episodes(&manifest, 6, 2);
        let (run, store) = RunDir::create(&dir.path().join("run"), &manifest).unwrap();
        let check_store = store.clone();
        let sent = episodes.clone();
        actix::System::new().block_on(async move {
            let sinks = Sinks::start(&run, &store, Durability::Flush).unwrap();
            // Episode 0 whole and the start of episode 1 in one event, the rest in another.
            let (first, second) = (&sent[0].steps, &sent[1].steps);
            let mut mixed = first.concat();
            mixed.extend(second[..2].concat());
            for records in [mixed, second[2..].concat()] {
                sinks.steps[0]
                    .send(StepEvent {
                        records: Arc::new(records),
                    })
                    .await
                    .unwrap();
            }
            for episode in &sent {
                sinks.episodes[0]
                    .send(EpisodeEvent {
                        record: Arc::new(episode.record.clone()),
                    })
                    .await
                    .unwrap();
            }
            sinks.close().await.unwrap();
        });
        for episode in episodes {
            let unit = Unit::new("a", episode.record.episode_index);
            assert!(check_store.is_complete(&unit).unwrap(), "{unit}");
            assert_eq!(check_store.steps_of(&unit).unwrap(), episode.steps.concat());
        }
    }

    #[test]
    fn an_episode_event_overtaking_its_steps_waits_for_them() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = synthetic::manifest("run", &["a"], 1, 3);
        let episode = synthetic::run_episodes(&manifest, 5, 2).remove(0);
        let (run, store) = RunDir::create(&dir.path().join("run"), &manifest).unwrap();
        actix::System::new().block_on(async move {
            let sinks = Sinks::start(&run, &store, Durability::Flush).unwrap();
            let end = sinks.episodes[0].send(EpisodeEvent {
                record: Arc::new(episode.record.clone()),
            });
            let end = actix_rt::spawn(end);
            actix_rt::time::sleep(std::time::Duration::from_millis(20)).await;
            assert!(!end.is_finished());
            assert!(!store.is_complete(&Unit::new("a", 0)).unwrap());
            for step in episode.steps {
                sinks.steps[0]
                    .send(StepEvent {
                        records: Arc::new(step),
                    })
                    .await
                    .unwrap();
            }
            end.await.unwrap().unwrap();
            assert!(store.is_complete(&Unit::new("a", 0)).unwrap());
            sinks.close().await.unwrap();
        });
    }

    #[test]
    fn a_failing_disk_stops_the_sink_and_fails_the_waiting_session() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = synthetic::manifest("run", &["a"], 1, 3);
        let episode = synthetic::run_episodes(&manifest, 5, 2).remove(0);
        let (run, store) = RunDir::create(&dir.path().join("run"), &manifest).unwrap();
        // Every write to steps.jsonl fails with "no space left on device".
        std::fs::remove_file(run.steps_path()).unwrap();
        std::os::unix::fs::symlink("/dev/full", run.steps_path()).unwrap();
        actix::System::new().block_on(async move {
            let sinks = Sinks::start(&run, &store, Durability::Sync).unwrap();
            for step in episode.steps {
                sinks.steps[0]
                    .send(StepEvent {
                        records: Arc::new(step),
                    })
                    .await
                    .unwrap();
            }
            let answer = sinks.episodes[0]
                .send(EpisodeEvent {
                    record: Arc::new(episode.record),
                })
                .await;
            assert!(answer.is_err(), "a failed write must not be acknowledged");
            let failure = sinks.failure().unwrap();
            assert!(failure.contains("steps.jsonl"), "{failure}");
            assert!(!store.is_complete(&Unit::new("a", 0)).unwrap());
            assert!(matches!(sinks.close().await, Err(SinkError::Stopped(_))));
        });
    }
}
