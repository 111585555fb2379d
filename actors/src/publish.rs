//! What a session tells its subscribers: step records in batches, then episode roll-ups.
//!
//! A session hands the records of each step to its publisher (`Publisher`), which buffers
//! them and sends them to every step subscriber as one [`StepEvent`] per batch: when it holds
//! `batch_steps` steps, when its oldest step has waited `max_delay` (so slow episodes,
//! paced and watched runs still show every step promptly), and before anything that must
//! follow the steps (`Publisher::flush_steps`: the end of an episode, a checkpoint, the
//! answer to a manual step).
//! One message per batch instead of one per step is what keeps the recording cost per
//! decision low: a subscriber's thread is woken once per batch.
//!
//! Backpressure: each batch is sent only once every step subscriber has handled the batch
//! before it, so per subscriber at most one batch is queued and one is being filled; an
//! episode's last batch is awaited with its roll-up ([`Durable`]). Nothing is dropped, and
//! a slow subscriber slows the session down.
//!
//! An episode's roll-up goes out with [`Subscribers::announce_episode`], after the episode's
//! last steps; the [`Durable`] it answers resolves once every episode subscriber has handled
//! it (durable sinks answer once the episode is on disk).

use crate::{CheckpointEvent, EpisodeEvent, SessionError, StepEvent};
use actix::dev::RecipientRequest;
use actix::{MailboxError, Message, Recipient};
use futures::FutureExt as _;
use futures::future::{BoxFuture, join_all};
use futures::lock::Mutex;
use mosaic_core::record::{EpisodeCheckpoint, EpisodeRecord, StepRecord};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

/// Who hears about steps and episodes.
#[derive(Clone, Default)]
pub struct Subscribers {
    /// Receive every [`StepEvent`].
    pub steps: Vec<Recipient<StepEvent>>,
    /// Receive every [`EpisodeEvent`]; the session waits for each to be handled.
    pub episodes: Vec<Recipient<EpisodeEvent>>,
    /// Receive the checkpoints of unfinished episodes ([`CheckpointEvent`]), each after
    /// the step events before it.
    pub checkpoints: Vec<Recipient<CheckpointEvent>>,
}

impl std::fmt::Debug for Subscribers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscribers")
            .field("steps", &self.steps.len())
            .field("episodes", &self.episodes.len())
            .field("checkpoints", &self.checkpoints.len())
            .finish()
    }
}

/// A message in a subscriber's mailbox, and the wait for its answer.
type Answer<M> = Pin<Box<RecipientRequest<M>>>;

/// Puts `message` into `recipient`'s mailbox now and answers the wait for its answer
/// (`None`: already answered, or the recipient is gone).
///
/// `send` defers a message while the sender is parked (its previous message found the
/// mailbox full); the first poll enqueues it through a fresh sender, so after one poll it
/// is in the mailbox, in order. Keep the answer until it resolves: actix skips a message
/// whose answer nobody waits for any more.
fn post<M>(recipient: &Recipient<M>, message: M) -> Option<Answer<M>>
where
    M: Message + Send + 'static,
    M::Result: Send,
{
    let mut answer = Box::pin(recipient.send(message));
    answer.as_mut().now_or_never().is_none().then_some(answer)
}

/// Resolves once every subscriber has handled an episode's last steps and its roll-up: for
/// a durable sink, once the episode's records are on disk. An error: a subscriber stopped
/// first (a sink stops after a write failure), so the episode is not confirmed.
///
/// Await it: dropping it early may cancel the delivery to subscribers that have not handled
/// the events yet.
#[must_use = "an episode is done only once its subscribers have confirmed it"]
pub struct Durable(BoxFuture<'static, Result<(), MailboxError>>);

impl Durable {
    /// Waits for the answers to the last step events and the episode events already sent.
    fn answers(steps: Vec<Answer<StepEvent>>, episodes: Vec<Answer<EpisodeEvent>>) -> Self {
        Self(Box::pin(async move {
            let (steps, episodes) = futures::join!(join_all(steps), join_all(episodes));
            steps.into_iter().chain(episodes).collect()
        }))
    }
}

impl Future for Durable {
    type Output = Result<(), MailboxError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx)
    }
}

impl std::fmt::Debug for Durable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Durable")
    }
}

/// An episode's roll-up as published to the subscribers, not yet confirmed by them.
#[derive(Debug)]
pub struct Recorded {
    record: Arc<EpisodeRecord>,
    durable: Durable,
}

impl Recorded {
    /// A roll-up and the wait for its subscribers' answers.
    pub fn new(record: Arc<EpisodeRecord>, durable: Durable) -> Self {
        Self { record, durable }
    }

    /// The roll-up (final, but possibly not yet on disk).
    pub fn record(&self) -> &Arc<EpisodeRecord> {
        &self.record
    }

    /// Waits until every episode subscriber has handled the roll-up (durable sinks: the
    /// episode is on disk) and answers it. Report an episode done only after this. An
    /// error: a subscriber stopped before confirming it.
    pub async fn durable(self) -> Result<Arc<EpisodeRecord>, SessionError> {
        match self.durable.await {
            Ok(()) => Ok(self.record),
            Err(e) => Err(SessionError::Unconfirmed {
                episode: self.record.episode_id.clone(),
                reason: e.to_string(),
            }),
        }
    }
}

impl Subscribers {
    /// Sends an episode's roll-up to every episode subscriber now; the answer resolves once
    /// all have handled it (durable sinks answer once it is on disk). A session sends the
    /// episode's last steps before it.
    pub fn announce_episode(&self, record: &Arc<EpisodeRecord>) -> Durable {
        Durable::answers(Vec::new(), self.post_episode(record))
    }

    fn post_episode(&self, record: &Arc<EpisodeRecord>) -> Vec<Answer<EpisodeEvent>> {
        let event = EpisodeEvent {
            record: record.clone(),
        };
        self.episodes
            .iter()
            .filter_map(|subscriber| post(subscriber, event.clone()))
            .collect()
    }
}

/// Buffered step records of the batch being filled.
#[derive(Default)]
struct Batch {
    records: Vec<StepRecord>,
    steps: u32,
    /// When its first step was buffered.
    since: Option<Instant>,
}

/// A session's outbox: batches step records, keeps them ahead of roll-ups. See the module
/// docs.
pub(crate) struct Publisher {
    subscribers: Subscribers,
    batch_steps: u32,
    max_delay: Duration,
    batch: RefCell<Batch>,
    /// The answers to the last batch sent, one per step subscriber. Held while a batch is
    /// sent, so batches leave in order whoever flushes (the session or the delay timer).
    in_flight: Mutex<Vec<Answer<StepEvent>>>,
    /// Whether a task is waiting to flush the batch once its oldest step is due.
    timer: Cell<bool>,
}

impl Publisher {
    /// Sends to `subscribers` batches of at most `batch_steps` steps (at least one), each
    /// step waiting at most about `max_delay`.
    pub(crate) fn new(subscribers: Subscribers, batch_steps: u32, max_delay: Duration) -> Self {
        Self {
            subscribers,
            batch_steps: batch_steps.max(1),
            max_delay,
            batch: RefCell::default(),
            in_flight: Mutex::new(Vec::new()),
            timer: Cell::new(false),
        }
    }

    /// Buffers the records of one step; sends the batch when it is full (waiting, if need
    /// be, until the subscribers have handled the previous one).
    pub(crate) async fn push_step(self: &Rc<Self>, records: Vec<StepRecord>) {
        if self.subscribers.steps.is_empty() {
            return;
        }
        let (first, full) = {
            let mut batch = self.batch.borrow_mut();
            let first = batch.steps == 0;
            if first {
                batch.since = Some(Instant::now());
                batch
                    .records
                    .reserve(self.batch_steps as usize * records.len());
            }
            batch.records.extend(records);
            batch.steps += 1;
            (first, batch.steps >= self.batch_steps)
        };
        if full {
            self.flush_steps().await;
        } else if first {
            self.start_timer();
        }
    }

    /// Sends the buffered steps now. Call it before sending subscribers anything that must
    /// not overtake the steps before it (an episode's roll-up, a checkpoint): on return the
    /// steps are in every step subscriber's mailbox, ahead of anything sent afterwards.
    pub(crate) async fn flush_steps(&self) {
        let mut in_flight = self.in_flight.lock().await;
        *in_flight = self.send_batch(&mut in_flight).await;
    }

    /// Sends the buffered steps (after the previous batch has been handled: backpressure;
    /// a subscriber that is gone has nothing left to handle) and answers the waits for
    /// their answers.
    async fn send_batch(&self, in_flight: &mut Vec<Answer<StepEvent>>) -> Vec<Answer<StepEvent>> {
        join_all(in_flight.drain(..)).await;
        let records = {
            let mut batch = self.batch.borrow_mut();
            if batch.steps == 0 {
                return Vec::new();
            }
            batch.steps = 0;
            batch.since = None;
            std::mem::take(&mut batch.records)
        };
        let event = StepEvent {
            records: Arc::new(records),
        };
        self.subscribers
            .steps
            .iter()
            .filter_map(|subscriber| post(subscriber, event.clone()))
            .collect()
    }

    /// Sends the buffered steps, then `record` to every episode subscriber. The answer
    /// waits for both, so nothing of the episode is left in flight here.
    pub(crate) async fn announce_episode(&self, record: &Arc<EpisodeRecord>) -> Durable {
        let mut in_flight = self.in_flight.lock().await;
        let last_steps = self.send_batch(&mut in_flight).await;
        Durable::answers(last_steps, self.subscribers.post_episode(record))
    }

    /// Whether anyone keeps checkpoints (a durable sink in script mode).
    pub(crate) fn wants_checkpoints(&self) -> bool {
        !self.subscribers.checkpoints.is_empty()
    }

    /// Sends the buffered steps, then `checkpoint` to every checkpoint subscriber: it never
    /// overtakes the steps before it.
    pub(crate) async fn publish_checkpoint(&self, checkpoint: Arc<EpisodeCheckpoint>) {
        let mut in_flight = self.in_flight.lock().await;
        *in_flight = self.send_batch(&mut in_flight).await;
        for subscriber in &self.subscribers.checkpoints {
            // After the steps in the mailbox, and the checkpoint needs no answer.
            subscriber.do_send(CheckpointEvent {
                checkpoint: checkpoint.clone(),
            });
        }
    }

    /// When the oldest buffered step is due: `None` with nothing buffered.
    fn due(&self) -> Option<Instant> {
        self.batch
            .borrow()
            .since
            .map(|since| since + self.max_delay)
    }

    /// Makes sure a task flushes the batch once its oldest step has waited `max_delay`.
    /// One task serves batch after batch while steps keep coming, and ends when nothing is
    /// buffered.
    fn start_timer(self: &Rc<Self>) {
        if self.timer.replace(true) {
            return;
        }
        let publisher = Rc::downgrade(self);
        actix_rt::spawn(async move {
            loop {
                let Some(strong) = publisher.upgrade() else {
                    return;
                };
                let Some(due) = strong.due() else {
                    strong.timer.set(false);
                    return;
                };
                if due <= Instant::now() {
                    strong.flush_steps().await;
                } else {
                    // Nothing held while sleeping: a dropped session ends the task.
                    drop(strong);
                    actix_rt::time::sleep_until(due.into()).await;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix::prelude::*;
    use mosaic_recorder::synthetic;
    use std::sync::Mutex as SyncMutex;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// What a subscriber heard, in order.
    #[derive(Clone, Debug, PartialEq)]
    enum Heard {
        /// Step indices of one step event.
        Steps(Vec<u32>),
        Episode(u32),
    }

    /// Logs what it hears; handling a step event takes `work`.
    struct Listener {
        heard: Arc<SyncMutex<Vec<Heard>>>,
        handled_steps: Arc<AtomicU32>,
        work: Duration,
    }

    impl Actor for Listener {
        type Context = Context<Self>;
    }

    impl Handler<StepEvent> for Listener {
        type Result = ();
        fn handle(&mut self, event: StepEvent, _: &mut Context<Self>) {
            std::thread::sleep(self.work);
            let steps: Vec<u32> = event.steps().map(|step| step[0].step_index).collect();
            self.handled_steps
                .fetch_add(steps.len() as u32, Ordering::SeqCst);
            self.heard.lock().unwrap().push(Heard::Steps(steps));
        }
    }

    impl Handler<EpisodeEvent> for Listener {
        type Result = ();
        fn handle(&mut self, event: EpisodeEvent, _: &mut Context<Self>) {
            self.heard
                .lock()
                .unwrap()
                .push(Heard::Episode(event.record.steps));
        }
    }

    struct Setup {
        publisher: Rc<Publisher>,
        heard: Arc<SyncMutex<Vec<Heard>>>,
        handled_steps: Arc<AtomicU32>,
        episode: synthetic::SyntheticEpisode,
        _arbiter: Arbiter,
    }

    impl Setup {
        /// Announces the episode's roll-up and waits until the listener confirmed it.
        async fn end_episode(&self) {
            let record = Arc::new(self.episode.record.clone());
            self.publisher
                .announce_episode(&record)
                .await
                .await
                .unwrap();
        }
    }

    /// A publisher to one listener on its own thread, and an episode of `steps` steps.
    fn setup(batch_steps: u32, max_delay: Duration, work: Duration, steps: u32) -> Setup {
        let heard = Arc::new(SyncMutex::new(Vec::new()));
        let handled_steps = Arc::new(AtomicU32::new(0));
        let arbiter = Arbiter::new();
        let listener = {
            let (heard, handled_steps) = (heard.clone(), handled_steps.clone());
            Listener::start_in_arbiter(&arbiter.handle(), move |_| Listener {
                heard,
                handled_steps,
                work,
            })
        };
        let subscribers = Subscribers {
            steps: vec![listener.clone().recipient()],
            episodes: vec![listener.recipient()],
            checkpoints: Vec::new(),
        };
        Setup {
            publisher: Rc::new(Publisher::new(subscribers, batch_steps, max_delay)),
            heard,
            handled_steps,
            episode: synthetic::episode(&synthetic::unit("r", "a", 0, 1), steps, 2),
            _arbiter: arbiter,
        }
    }

    fn heard(setup: &Setup) -> Vec<Heard> {
        setup.heard.lock().unwrap().clone()
    }

    #[actix::test]
    async fn full_batches_go_out_in_order_and_the_rest_before_the_roll_up() {
        let setup = setup(4, Duration::from_secs(60), Duration::ZERO, 10);
        for step in setup.episode.steps.clone() {
            setup.publisher.push_step(step).await;
        }
        setup.end_episode().await;
        assert_eq!(
            heard(&setup),
            [
                Heard::Steps(vec![0, 1, 2, 3]),
                Heard::Steps(vec![4, 5, 6, 7]),
                Heard::Steps(vec![8, 9]),
                Heard::Episode(10),
            ]
        );
    }

    #[actix::test]
    async fn a_step_waits_at_most_about_the_delay() {
        let setup = setup(64, Duration::from_millis(20), Duration::ZERO, 3);
        let started = Instant::now();
        setup
            .publisher
            .push_step(setup.episode.steps[0].clone())
            .await;
        // No further step comes: the timer sends the batch.
        while heard(&setup).is_empty() {
            assert!(started.elapsed() < Duration::from_secs(5), "never sent");
            actix_rt::time::sleep(Duration::from_millis(2)).await;
        }
        assert!(started.elapsed() >= Duration::from_millis(20));
        assert_eq!(heard(&setup), [Heard::Steps(vec![0])]);
        // The timer starts again for the next batch.
        for step in &setup.episode.steps[1..] {
            setup.publisher.push_step(step.clone()).await;
        }
        while heard(&setup).len() < 2 {
            assert!(started.elapsed() < Duration::from_secs(5), "never sent");
            actix_rt::time::sleep(Duration::from_millis(2)).await;
        }
        assert_eq!(heard(&setup)[1], Heard::Steps(vec![1, 2]));
    }

    #[actix::test]
    async fn a_slow_subscriber_holds_the_session_back() {
        let batch = 4u32;
        let setup = setup(batch, Duration::from_secs(60), Duration::from_millis(5), 40);
        for (pushed, step) in setup.episode.steps.clone().into_iter().enumerate() {
            setup.publisher.push_step(step).await;
            let pending = pushed as u32 + 1 - setup.handled_steps.load(Ordering::SeqCst);
            // At most the batch being filled and the one being handled.
            assert!(pending <= 2 * batch, "{pending} steps not handled yet");
        }
        setup.publisher.flush_steps().await;
        setup.end_episode().await;
        assert_eq!(setup.handled_steps.load(Ordering::SeqCst), 40);
    }

    #[actix::test]
    async fn durable_waits_for_the_episode_subscribers() {
        /// Answers an episode event only after a while.
        struct Slow(Arc<AtomicU32>);
        impl Actor for Slow {
            type Context = Context<Self>;
        }
        impl Handler<EpisodeEvent> for Slow {
            type Result = ResponseFuture<()>;
            fn handle(&mut self, _: EpisodeEvent, _: &mut Context<Self>) -> Self::Result {
                let answered = self.0.clone();
                Box::pin(async move {
                    actix_rt::time::sleep(Duration::from_millis(30)).await;
                    answered.fetch_add(1, Ordering::SeqCst);
                })
            }
        }
        let answered = Arc::new(AtomicU32::new(0));
        let subscribers = Subscribers {
            steps: Vec::new(),
            episodes: vec![Slow(answered.clone()).start().recipient()],
            checkpoints: Vec::new(),
        };
        let record = Arc::new(synthetic::episode(&synthetic::unit("r", "a", 0, 1), 1, 1).record);
        let recorded = Recorded::new(record.clone(), subscribers.announce_episode(&record));
        assert_eq!(answered.load(Ordering::SeqCst), 0);
        assert_eq!(recorded.durable().await.unwrap(), record);
        assert_eq!(answered.load(Ordering::SeqCst), 1);
    }
}
