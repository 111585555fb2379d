//! A supervised child: its specification (factory, restart policy, heartbeat, shutdown),
//! its link back to the supervisor and its running instance.

use crate::{BeatSource, ChildExited, EventSink, Exit, Failure, Heartbeat, Restart, Supervisor};
use actix::dev::channel::channel;
use actix::prelude::*;
use std::any::Any;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Mailbox capacity of a supervised child (actix's default).
pub(crate) const MAILBOX_CAPACITY: usize = 16;
/// How long past its shutdown timeout a child's thread may stay unresponsive before the
/// supervisor abandons it (a thread blocked in a handler cannot be interrupted).
pub(crate) const ABANDON_SLACK: Duration = Duration::from_millis(50);
/// Default shutdown timeout of a worker child (OTP's default).
pub(crate) const DEFAULT_SHUTDOWN: Duration = Duration::from_secs(5);
/// Default shutdown timeout of a nested supervisor: time for its own children to stop.
pub(crate) const DEFAULT_SUPERVISOR_SHUTDOWN: Duration = Duration::from_secs(60);

pub(crate) struct LinkState {
    pub(crate) name: String,
    pub(crate) last_beat: Mutex<Instant>,
    pub(crate) failure: Mutex<Option<Failure>>,
    pub(crate) events: Option<EventSink>,
}

/// A child's line to its supervisor, handed to its factory: beat, or report a failure
/// before stopping.
#[derive(Clone)]
pub struct ChildLink {
    pub(crate) state: Arc<LinkState>,
}

impl std::fmt::Debug for ChildLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildLink").finish_non_exhaustive()
    }
}

impl ChildLink {
    pub(crate) fn new(name: &str, events: Option<EventSink>) -> Self {
        Self {
            state: Arc::new(LinkState {
                name: name.to_owned(),
                last_beat: Mutex::new(Instant::now()),
                failure: Mutex::new(None),
                events,
            }),
        }
    }

    /// The child's name in its spec.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// Records a heartbeat (for [`BeatSource::Child`]).
    pub fn beat(&self) {
        *lock(&self.state.last_beat) = Instant::now();
    }

    /// Marks the coming stop as a failure with `reason`; the child then stops itself
    /// (`ctx.stop()`), and the supervisor restarts it as its policy says.
    pub fn fail(&self, reason: impl Into<String>) {
        self.report(Failure::Failed(reason.into()));
    }

    pub(crate) fn report(&self, failure: Failure) {
        *lock(&self.state.failure) = Some(failure);
    }

    pub(crate) fn silent_for(&self) -> Duration {
        lock(&self.state.last_beat).elapsed()
    }

    pub(crate) fn take_failure(&self) -> Option<Failure> {
        lock(&self.state.failure).take()
    }
}

/// Locks `mutex`; the guarded values stay consistent even if a holder panicked.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) type ChildTask = Pin<Box<dyn Future<Output = ()>>>;
/// Creates the child's mailbox on the supervisor's thread (so its address is known at once)
/// and returns the address plus the task that builds and runs the child on its own thread.
pub(crate) type Launcher =
    Arc<dyn Fn(ChildLink, Heartbeat) -> (Box<dyn Any + Send>, Launch) + Send + Sync>;
/// Builds and runs one child instance on its thread until it stops or is told to stop.
pub(crate) type Launch = Box<dyn FnOnce(oneshot::Receiver<()>, Duration) -> ChildTask + Send>;

/// How to start (and restart) one child.
#[derive(Clone)]
pub struct ChildSpec {
    pub(crate) name: String,
    pub(crate) launcher: Launcher,
    pub(crate) restart: Restart,
    pub(crate) shutdown: Duration,
    pub(crate) heartbeat: Option<Heartbeat>,
}

impl fmt::Debug for ChildSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSpec")
            .field("name", &self.name)
            .field("restart", &self.restart)
            .field("shutdown", &self.shutdown)
            .field("heartbeat", &self.heartbeat)
            .finish_non_exhaustive()
    }
}

impl ChildSpec {
    /// A permanent child named `name`, built by `factory` on its own thread at every
    /// (re)start; shutdown timeout 5 s, no heartbeat watch.
    pub fn new<A, F>(name: impl Into<String>, factory: F) -> Self
    where
        A: Actor<Context = Context<A>>,
        F: Fn(&ChildLink) -> A + Send + Sync + 'static,
    {
        let factory = Arc::new(factory);
        let launcher: Launcher = Arc::new(move |link: ChildLink, heartbeat: Heartbeat| {
            let (sender, receiver) = channel::<A>(MAILBOX_CAPACITY);
            let address: Box<dyn Any + Send> = Box::new(Addr::new(sender));
            let factory = Arc::clone(&factory);
            let launch: Launch = Box::new(move |stop, grace| {
                Box::pin(run_child(factory, link, heartbeat, receiver, stop, grace))
            });
            (address, launch)
        });
        Self {
            name: name.into(),
            launcher,
            restart: Restart::Permanent,
            shutdown: DEFAULT_SHUTDOWN,
            heartbeat: None,
        }
    }

    /// A nested supervisor as a child: it escalates to this supervisor when it gives up
    /// and reports its events to this supervisor's subscriber unless it has its own.
    /// Shutdown timeout 60 s (time for its own children to stop).
    pub fn supervisor<F>(name: impl Into<String>, factory: F) -> Self
    where
        F: Fn() -> Supervisor + Send + Sync + 'static,
    {
        let mut spec = Self::new(name, move |link: &ChildLink| factory().linked(link));
        spec.shutdown = DEFAULT_SUPERVISOR_SHUTDOWN;
        spec
    }

    /// With this restart policy.
    pub fn restart(mut self, restart: Restart) -> Self {
        self.restart = restart;
        self
    }

    /// With this shutdown timeout: how long the child may take to stop (its `stopping` and
    /// `stopped`) before it is dropped.
    pub fn shutdown(mut self, timeout: Duration) -> Self {
        self.shutdown = timeout;
        self
    }

    /// Watched by `heartbeat`.
    pub fn heartbeat(mut self, heartbeat: Heartbeat) -> Self {
        self.heartbeat = Some(heartbeat);
        self
    }

    /// The child's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Runs one child instance: builds it (inside the task, so a panicking factory is contained
/// too), beats for it if its event loop is the beat source, and stops it gracefully within
/// `grace` when told to (or when the supervisor is gone).
async fn run_child<A, F>(
    factory: Arc<F>,
    link: ChildLink,
    heartbeat: Heartbeat,
    receiver: actix::dev::channel::AddressReceiver<A>,
    stop: oneshot::Receiver<()>,
    grace: Duration,
) where
    A: Actor<Context = Context<A>>,
    F: Fn(&ChildLink) -> A,
{
    let mut ctx = Context::<A>::with_receiver(receiver);
    if heartbeat.source == BeatSource::EventLoop {
        let beating = link.clone();
        ctx.run_interval(heartbeat.interval, move |_, _| beating.beat());
    }
    let actor = factory(&link);
    let mut running = Box::pin(ctx.into_future(actor));
    tokio::select! {
        () = &mut running => {}
        _ = stop => {
            running.ctx().stop();
            // Past the grace period the child is dropped (a brutal kill).
            let _ = tokio::time::timeout(grace, &mut running).await;
        }
    }
}

/// Reports a child's end to its supervisor exactly once: from [`Self::finish`] when the
/// child's task ends, or from `Drop` when its thread goes down without finishing.
pub(crate) struct ExitReport {
    pub(crate) supervisor: Option<Recipient<ChildExited>>,
    pub(crate) index: usize,
    pub(crate) generation: u64,
    pub(crate) link: ChildLink,
    pub(crate) _done: oneshot::Sender<()>,
}

impl ExitReport {
    pub(crate) fn finish(mut self, result: Result<(), tokio::task::JoinError>) {
        let exit = match result {
            Ok(()) => self.link.take_failure().map_or(Exit::Normal, Exit::Failed),
            Err(error) if error.is_panic() => Exit::Failed(Failure::Panicked(
                mosaic_core::experiment::panic_message(&*error.into_panic()),
            )),
            Err(_) => Exit::Failed(Failure::Vanished),
        };
        self.send(exit);
    }

    pub(crate) fn send(&mut self, exit: Exit) {
        if let Some(supervisor) = self.supervisor.take() {
            supervisor.do_send(ChildExited {
                index: self.index,
                generation: self.generation,
                exit,
            });
        }
    }
}

impl Drop for ExitReport {
    fn drop(&mut self) {
        self.send(Exit::Failed(Failure::Vanished));
    }
}

/// A running child instance.
pub(crate) struct Instance {
    pub(crate) generation: u64,
    pub(crate) arbiter: Arbiter,
    pub(crate) address: Box<dyn Any + Send>,
    pub(crate) link: ChildLink,
    pub(crate) stop: Option<oneshot::Sender<()>>,
    pub(crate) done: oneshot::Receiver<()>,
}

impl Instance {
    /// Asks the child to stop, waits up to `grace` (plus a little for its thread to report)
    /// and ends its thread; a thread blocked past that is abandoned.
    pub(crate) async fn stop(mut self, grace: Duration) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = tokio::time::timeout(grace.saturating_add(ABANDON_SLACK), &mut self.done).await;
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.arbiter.stop();
    }
}

#[derive(Default)]
pub(crate) struct ChildSlot {
    pub(crate) starts: u64,
    pub(crate) running: Option<Instance>,
}
