//! Supervision trees with OTP semantics on actix.
//!
//! A [`Supervisor`] starts its children from [`ChildSpec`]s, each on its own [`Arbiter`]
//! (thread), and restarts them when they fail:
//!
//! - **Fresh instances**: every (re)start calls the child's factory again; no state survives a
//!   restart unless the factory restores it (e.g. from a checkpoint).
//! - **Restart policies** ([`Restart`]): `Permanent` children are always restarted,
//!   `Transient` ones only after a failure, `Temporary` ones never.
//! - **Strategies** ([`Strategy`]): `OneForOne` restarts the failed child, `OneForAll` stops
//!   and restarts every child, `RestForOne` the failed child and those started after it.
//! - **Intensity** ([`Intensity`], default 1 restart per 5 s): one restart more within the
//!   period and the supervisor gives up, stops its children and escalates a
//!   [`SupervisorError::IntensityExceeded`] to its parent (a nested supervisor fails as a child
//!   of its parent) or, at the root, to its [`Supervisor::on_escalation`] callback.
//! - **Contained panics**: a panic in a child's handler (or its factory) ends only that child's
//!   task; it is reported as [`Failure::Panicked`] with the panic message.
//! - **Liveness** ([`Heartbeat`]): a child that stays silent past its timeout is declared
//!   failed ([`Failure::HeartbeatLost`]), stopped and restarted. Beats come from the child's
//!   event loop (a handler blocking its thread stops them) or from the child itself through
//!   [`ChildLink::beat`] (e.g. when an external worker's heartbeat arrives).
//! - **Events** ([`SupervisorEvent`]): started, failed, restarted, exited, escalated, sent to
//!   an optional subscriber so runs can record them.
//!
//! ```
//! use actix::prelude::*;
//! use mosaic_actors::supervisor::{ChildSpec, Restart, Strategy, Supervisor};
//!
//! struct Counter(u32);
//! impl Actor for Counter {
//!     type Context = Context<Self>;
//! }
//!
//! actix::System::new().block_on(async {
//!     let supervisor = Supervisor::new("run")
//!         .strategy(Strategy::OneForOne)
//!         .child(ChildSpec::new("counter", |_| Counter(0)).restart(Restart::Permanent))
//!         .events(|event| println!("{event}"))
//!         .start();
//!     let counter = supervisor
//!         .send(mosaic_actors::supervisor::Lookup::<Counter>::new("counter"))
//!         .await
//!         .ok()
//!         .flatten();
//!     assert!(counter.is_some());
//!     let _ = supervisor.send(mosaic_actors::supervisor::Shutdown).await;
//! });
//! ```

use actix::dev::channel::channel;
use actix::prelude::*;
use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Mailbox capacity of a supervised child (actix's default).
const MAILBOX_CAPACITY: usize = 16;
/// How long past its shutdown timeout a child's thread may stay unresponsive before the
/// supervisor abandons it (a thread blocked in a handler cannot be interrupted).
const ABANDON_SLACK: Duration = Duration::from_millis(50);
/// Default shutdown timeout of a worker child (OTP's default).
const DEFAULT_SHUTDOWN: Duration = Duration::from_secs(5);
/// Default shutdown timeout of a nested supervisor: time for its own children to stop.
const DEFAULT_SUPERVISOR_SHUTDOWN: Duration = Duration::from_secs(60);

/// When a child is restarted after it exits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Restart {
    /// Always restarted.
    #[default]
    Permanent,
    /// Restarted only after a failure (a normal exit ends it).
    Transient,
    /// Never restarted (also not by a sibling's `OneForAll`/`RestForOne` restart).
    Temporary,
}

impl Restart {
    fn after(self, exit: &Exit) -> bool {
        match self {
            Restart::Permanent => true,
            Restart::Transient => matches!(exit, Exit::Failed(_)),
            Restart::Temporary => false,
        }
    }
}

/// Which children are restarted when one fails.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strategy {
    /// Only the failed child.
    #[default]
    OneForOne,
    /// Every child: all are stopped (in reverse order), then started again in order.
    OneForAll,
    /// The failed child and every child after it in the spec order.
    RestForOne,
}

/// At most `max_restarts` restarts within `period`; one more and the supervisor gives up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Intensity {
    /// Restarts allowed within the period.
    pub max_restarts: u32,
    /// The sliding window.
    pub period: Duration,
}

impl Intensity {
    /// `max_restarts` per `period`.
    pub fn new(max_restarts: u32, period: Duration) -> Self {
        Self {
            max_restarts,
            period,
        }
    }
}

/// Restarts counted within a sliding window: the intensity check of supervisors and
/// sessions.
///
/// ```
/// use mosaic_actors::supervisor::{Intensity, RestartWindow};
/// use std::time::{Duration, Instant};
/// let mut window = RestartWindow::new(Intensity::new(2, Duration::from_secs(60)));
/// let now = Instant::now();
/// assert!(window.allow(now));
/// assert!(window.allow(now));
/// assert!(!window.allow(now), "a third restart within the minute escalates");
/// ```
#[derive(Clone, Debug)]
pub struct RestartWindow {
    intensity: Intensity,
    restarts: VecDeque<Instant>,
}

impl RestartWindow {
    /// An empty window for `intensity`.
    pub fn new(intensity: Intensity) -> Self {
        Self {
            intensity,
            restarts: VecDeque::new(),
        }
    }

    /// The limit counted against.
    pub fn intensity(&self) -> Intensity {
        self.intensity
    }

    /// Counts a restart at `now`; `false` if it exceeds the intensity.
    pub fn allow(&mut self, now: Instant) -> bool {
        self.restarts.push_back(now);
        while let Some(&oldest) = self.restarts.front() {
            if now.duration_since(oldest) > self.intensity.period {
                self.restarts.pop_front();
            } else {
                break;
            }
        }
        self.restarts.len() <= self.intensity.max_restarts as usize
    }

    /// Restarts within the window, counting a refused one.
    pub fn count(&self) -> usize {
        self.restarts.len()
    }
}

impl Default for Intensity {
    /// 1 restart per 5 s, as in OTP.
    fn default() -> Self {
        Self::new(1, Duration::from_secs(5))
    }
}

/// Where a child's heartbeats come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BeatSource {
    /// The child's event loop beats every interval by itself: a handler that blocks the
    /// child's thread (or never yields) silences it.
    #[default]
    EventLoop,
    /// The child calls [`ChildLink::beat`] itself (e.g. on each heartbeat of the external
    /// process it stands for).
    Child,
}

/// Liveness watch of a child: silent for `timeout` and it is declared failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heartbeat {
    /// Expected beat interval; also how often the supervisor looks.
    pub interval: Duration,
    /// Silence after which the child has failed.
    pub timeout: Duration,
    /// Who beats.
    pub source: BeatSource,
}

impl Default for Heartbeat {
    /// Event-loop beats every 1 s, failed after 5 s of silence.
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(1),
            timeout: Duration::from_secs(5),
            source: BeatSource::EventLoop,
        }
    }
}

impl Heartbeat {
    /// Beats from the child ([`BeatSource::Child`]) with the default interval and timeout.
    pub fn manual() -> Self {
        Self {
            source: BeatSource::Child,
            ..Self::default()
        }
    }

    /// With this beat interval.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// With this silence timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// Why a child failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// A handler (or the factory) panicked; the panic message.
    #[error("panicked: {0}")]
    Panicked(String),
    /// The child reported a failure through [`ChildLink::fail`] and stopped.
    #[error("failed: {0}")]
    Failed(String),
    /// No heartbeat for longer than the timeout.
    #[error("no heartbeat for {silent:?} (timeout {timeout:?})")]
    HeartbeatLost {
        /// Silence measured when the failure was declared.
        silent: Duration,
        /// The configured timeout.
        timeout: Duration,
    },
    /// A nested supervisor gave up.
    #[error("escalated: {0}")]
    Escalated(Box<SupervisorError>),
    /// The child's thread ended without the child stopping (its arbiter was stopped).
    #[error("its thread ended unexpectedly")]
    Vanished,
}

/// How a child ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It stopped by itself without a failure.
    Normal,
    /// It failed.
    Failed(Failure),
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exit::Normal => write!(f, "exited normally"),
            Exit::Failed(failure) => write!(f, "{failure}"),
        }
    }
}

/// A supervisor gave up.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SupervisorError {
    /// Restarts came faster than the intensity allows.
    #[error(
        "supervisor `{supervisor}` gave up: child `{child}` needed {restarts} restarts within \
         {period:?} (limit {limit}); it {exit}"
    )]
    IntensityExceeded {
        /// The supervisor that gave up.
        supervisor: String,
        /// The child whose failure exceeded the limit.
        child: String,
        /// Restarts within the period, counting the refused one.
        restarts: usize,
        /// Restarts allowed within the period.
        limit: u32,
        /// The period.
        period: Duration,
        /// How the child ended this time.
        exit: Exit,
    },
}

/// What happened to a child.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// It started (first start or restart); `generation` counts its starts from 1.
    Started {
        /// Number of this start.
        generation: u64,
    },
    /// It failed.
    Failed(Failure),
    /// It stopped normally by itself.
    Exited,
    /// It was started again `after` its failure was detected.
    Restarted {
        /// Time from failure detection to the new instance's start.
        after: Duration,
    },
    /// The supervisor gave up (the event names the supervisor as `child`'s parent).
    Escalated(SupervisorError),
}

/// One event of a supervision tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SupervisorEvent {
    /// The supervisor reporting.
    pub supervisor: String,
    /// The child concerned (for `Escalated`: the supervisor itself).
    pub child: String,
    /// What happened.
    pub kind: EventKind,
}

impl fmt::Display for SupervisorEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let who = format!("[{}] {}", self.supervisor, self.child);
        match &self.kind {
            EventKind::Started { generation } => write!(f, "{who} started (#{generation})"),
            EventKind::Failed(failure) => write!(f, "{who} {failure}"),
            EventKind::Exited => write!(f, "{who} exited normally"),
            EventKind::Restarted { after } => write!(f, "{who} restarted after {after:?}"),
            EventKind::Escalated(error) => write!(f, "{who} escalated: {error}"),
        }
    }
}

/// The subscriber of supervision events.
pub type EventSink = Arc<dyn Fn(&SupervisorEvent) + Send + Sync>;

struct LinkState {
    name: String,
    last_beat: Mutex<Instant>,
    failure: Mutex<Option<Failure>>,
    events: Option<EventSink>,
}

/// A child's line to its supervisor, handed to its factory: beat, or report a failure
/// before stopping.
#[derive(Clone)]
pub struct ChildLink {
    state: Arc<LinkState>,
}

impl ChildLink {
    fn new(name: &str, events: Option<EventSink>) -> Self {
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

    fn report(&self, failure: Failure) {
        *lock(&self.state.failure) = Some(failure);
    }

    fn silent_for(&self) -> Duration {
        lock(&self.state.last_beat).elapsed()
    }

    fn take_failure(&self) -> Option<Failure> {
        lock(&self.state.failure).take()
    }
}

/// Locks `mutex`; the guarded values stay consistent even if a holder panicked.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

type ChildTask = Pin<Box<dyn Future<Output = ()>>>;
/// Creates the child's mailbox on the supervisor's thread (so its address is known at once)
/// and returns the address plus the task that builds and runs the child on its own thread.
type Launcher = Arc<dyn Fn(ChildLink, Heartbeat) -> (Box<dyn Any + Send>, Launch) + Send + Sync>;
/// Builds and runs one child instance on its thread until it stops or is told to stop.
type Launch = Box<dyn FnOnce(oneshot::Receiver<()>, Duration) -> ChildTask + Send>;

/// How to start (and restart) one child.
#[derive(Clone)]
pub struct ChildSpec {
    name: String,
    launcher: Launcher,
    restart: Restart,
    shutdown: Duration,
    heartbeat: Option<Heartbeat>,
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
struct ExitReport {
    supervisor: Option<Recipient<ChildExited>>,
    index: usize,
    generation: u64,
    link: ChildLink,
    _done: oneshot::Sender<()>,
}

impl ExitReport {
    fn finish(mut self, result: Result<(), tokio::task::JoinError>) {
        let exit = match result {
            Ok(()) => self.link.take_failure().map_or(Exit::Normal, Exit::Failed),
            Err(error) if error.is_panic() => Exit::Failed(Failure::Panicked(
                mosaic_core::experiment::panic_message(&*error.into_panic()),
            )),
            Err(_) => Exit::Failed(Failure::Vanished),
        };
        self.send(exit);
    }

    fn send(&mut self, exit: Exit) {
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
struct Instance {
    generation: u64,
    arbiter: Arbiter,
    address: Box<dyn Any + Send>,
    link: ChildLink,
    stop: Option<oneshot::Sender<()>>,
    done: oneshot::Receiver<()>,
}

impl Instance {
    /// Asks the child to stop, waits up to `grace` (plus a little for its thread to report)
    /// and ends its thread; a thread blocked past that is abandoned.
    async fn stop(mut self, grace: Duration) {
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
struct ChildSlot {
    starts: u64,
    running: Option<Instance>,
}

/// A child's end, reported from its thread.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ChildExited {
    index: usize,
    generation: u64,
    exit: Exit,
}

/// Stops every child (in reverse order, each within its shutdown timeout), then the
/// supervisor; answers when all are down.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Shutdown;

/// The current address of the child named `name`, if it runs and is an `A`.
#[derive(Message)]
#[rtype(result = "Option<Addr<A>>")]
pub struct Lookup<A: Actor> {
    name: String,
    actor: PhantomData<fn() -> A>,
}

impl<A: Actor> Lookup<A> {
    /// Looks up the child named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            actor: PhantomData,
        }
    }
}

/// The state of one child.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildInfo {
    /// Its name.
    pub name: String,
    /// Whether an instance runs.
    pub running: bool,
    /// How many instances were started (1 + restarts).
    pub starts: u64,
}

/// Lists the children in spec order.
#[derive(Debug, Message)]
#[rtype(result = "Vec<ChildInfo>")]
pub struct Children;

enum Escalation {
    None,
    Callback(Arc<dyn Fn(SupervisorError) + Send + Sync>),
    Parent(ChildLink),
}

/// A supervisor actor; see the [module docs](self).
pub struct Supervisor {
    name: String,
    strategy: Strategy,
    specs: Vec<ChildSpec>,
    slots: Vec<ChildSlot>,
    restarts: RestartWindow,
    events: Option<EventSink>,
    escalation: Escalation,
    stopping: bool,
}

impl Supervisor {
    /// A supervisor named `name` (it names itself in events and errors), one-for-one,
    /// default intensity, no children yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            strategy: Strategy::default(),
            specs: Vec::new(),
            slots: Vec::new(),
            restarts: RestartWindow::new(Intensity::default()),
            events: None,
            escalation: Escalation::None,
            stopping: false,
        }
    }

    /// With this strategy.
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// With this restart intensity.
    pub fn intensity(mut self, intensity: Intensity) -> Self {
        self.restarts = RestartWindow::new(intensity);
        self
    }

    /// Adds a child; children start in the order added and stop in reverse.
    pub fn child(mut self, spec: ChildSpec) -> Self {
        self.specs.push(spec);
        self.slots.push(ChildSlot::default());
        self
    }

    /// Sends every event of this supervisor (and of nested ones without their own
    /// subscriber) to `subscriber`.
    pub fn events(mut self, subscriber: impl Fn(&SupervisorEvent) + Send + Sync + 'static) -> Self {
        self.events = Some(Arc::new(subscriber));
        self
    }

    /// Called with the error when this (root) supervisor gives up.
    pub fn on_escalation(
        mut self,
        callback: impl Fn(SupervisorError) + Send + Sync + 'static,
    ) -> Self {
        self.escalation = Escalation::Callback(Arc::new(callback));
        self
    }

    fn linked(mut self, link: &ChildLink) -> Self {
        if self.events.is_none() {
            self.events = link.state.events.clone();
        }
        self.escalation = Escalation::Parent(link.clone());
        self
    }

    fn emit(&self, child: &str, kind: EventKind) {
        if let Some(events) = &self.events {
            events(&SupervisorEvent {
                supervisor: self.name.clone(),
                child: child.to_owned(),
                kind,
            });
        }
    }

    fn launch(&mut self, index: usize, ctx: &mut Context<Self>) {
        let spec = &self.specs[index];
        let slot = &mut self.slots[index];
        slot.starts += 1;
        let generation = slot.starts;
        let link = ChildLink::new(&spec.name, self.events.clone());
        let heartbeat = spec.heartbeat.unwrap_or_default();
        let (address, launch) = (spec.launcher)(link.clone(), heartbeat);
        let (stop, stop_signal) = oneshot::channel();
        let (done, done_signal) = oneshot::channel();
        let report = ExitReport {
            supervisor: Some(ctx.address().recipient()),
            index,
            generation,
            link: link.clone(),
            _done: done,
        };
        let grace = spec.shutdown;
        let arbiter = Arbiter::new();
        arbiter.spawn(async move {
            let task = actix_rt::spawn(launch(stop_signal, grace));
            report.finish(task.await);
        });
        slot.running = Some(Instance {
            generation,
            arbiter,
            address,
            link,
            stop: Some(stop),
            done: done_signal,
        });
        self.emit(&spec.name, EventKind::Started { generation });
    }

    /// Takes the running instances of `indices` (to stop them), last first.
    fn take_running(
        &mut self,
        indices: impl DoubleEndedIterator<Item = usize>,
    ) -> Vec<(Instance, Duration)> {
        indices
            .rev()
            .filter_map(|i| {
                self.slots[i]
                    .running
                    .take()
                    .map(|r| (r, self.specs[i].shutdown))
            })
            .collect()
    }

    fn on_failure(&mut self, index: usize, exit: Exit, ctx: &mut Context<Self>) {
        let detected = Instant::now();
        let name = self.specs[index].name.clone();
        self.emit(
            &name,
            match &exit {
                Exit::Normal => EventKind::Exited,
                Exit::Failed(failure) => EventKind::Failed(failure.clone()),
            },
        );
        // The failed instance (still running after a missed heartbeat) goes first.
        let failed = self.take_running(index..=index);
        if self.stopping || !self.specs[index].restart.after(&exit) {
            ctx.wait(stop_all(failed).into_actor(self));
            return;
        }
        if !self.restarts.allow(detected) {
            let error = SupervisorError::IntensityExceeded {
                supervisor: self.name.clone(),
                child: name,
                restarts: self.restarts.count(),
                limit: self.restarts.intensity().max_restarts,
                period: self.restarts.intensity().period,
                exit,
            };
            ctx.wait(stop_all(failed).into_actor(self));
            self.give_up(error, ctx);
            return;
        }
        let affected: Vec<usize> = match self.strategy {
            Strategy::OneForOne => vec![index],
            Strategy::OneForAll => (0..self.specs.len()).collect(),
            Strategy::RestForOne => (index..self.specs.len()).collect(),
        };
        let mut stopping = failed;
        stopping.extend(self.take_running(affected.iter().copied()));
        ctx.wait(
            stop_all(stopping)
                .into_actor(self)
                .map(move |(), this, ctx| {
                    for i in affected {
                        if i == index || this.specs[i].restart != Restart::Temporary {
                            this.launch(i, ctx);
                            let after = detected.elapsed();
                            this.emit(&this.specs[i].name, EventKind::Restarted { after });
                        }
                    }
                }),
        );
    }

    fn give_up(&mut self, error: SupervisorError, ctx: &mut Context<Self>) {
        self.emit(&self.name, EventKind::Escalated(error.clone()));
        self.stopping = true;
        let all = self.take_running(0..self.specs.len());
        ctx.wait(stop_all(all).into_actor(self).map(move |(), this, ctx| {
            match &this.escalation {
                Escalation::None => {}
                Escalation::Callback(callback) => callback(error),
                Escalation::Parent(link) => link.report(Failure::Escalated(Box::new(error))),
            }
            ctx.stop();
        }));
    }

    fn check_heartbeats(&mut self, ctx: &mut Context<Self>) {
        for index in 0..self.specs.len() {
            let Some(heartbeat) = self.specs[index].heartbeat else {
                continue;
            };
            let Some(running) = &self.slots[index].running else {
                continue;
            };
            let silent = running.link.silent_for();
            if silent > heartbeat.timeout {
                let failure = Failure::HeartbeatLost {
                    silent,
                    timeout: heartbeat.timeout,
                };
                self.on_failure(index, Exit::Failed(failure), ctx);
                // One failure per look: the restart above may have replaced other children.
                return;
            }
        }
    }
}

/// Stops `children` one after the other, in the given order.
async fn stop_all(children: Vec<(Instance, Duration)>) {
    for (running, grace) in children {
        running.stop(grace).await;
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        for index in 0..self.specs.len() {
            self.launch(index, ctx);
        }
        let check_every = self
            .specs
            .iter()
            .filter_map(|spec| spec.heartbeat.map(|h| h.interval))
            .min();
        if let Some(every) = check_every {
            ctx.run_interval(every, Self::check_heartbeats);
        }
    }

    fn stopping(&mut self, ctx: &mut Context<Self>) -> actix::Running {
        // Stopped from outside (or by its own supervisor): stop the children first.
        if self.slots.iter().any(|slot| slot.running.is_some()) {
            self.stopping = true;
            let all = self.take_running(0..self.specs.len());
            ctx.wait(stop_all(all).into_actor(self).map(|(), _, ctx| ctx.stop()));
            return actix::Running::Continue;
        }
        actix::Running::Stop
    }
}

impl Handler<ChildExited> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: ChildExited, ctx: &mut Context<Self>) {
        let current = self.slots[msg.index].running.as_ref().map(|r| r.generation);
        // Reports of instances the supervisor stopped itself are expected, not failures.
        if current == Some(msg.generation) {
            self.on_failure(msg.index, msg.exit, ctx);
        }
    }
}

impl Handler<Shutdown> for Supervisor {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _: Shutdown, _: &mut Context<Self>) -> Self::Result {
        self.stopping = true;
        let all = self.take_running(0..self.specs.len());
        Box::pin(stop_all(all).into_actor(self).map(|(), _, ctx| ctx.stop()))
    }
}

impl<A: Actor> Handler<Lookup<A>> for Supervisor {
    type Result = Option<Addr<A>>;

    fn handle(&mut self, msg: Lookup<A>, _: &mut Context<Self>) -> Self::Result {
        let index = self.specs.iter().position(|spec| spec.name == msg.name)?;
        let running = self.slots[index].running.as_ref()?;
        running.address.downcast_ref::<Addr<A>>().cloned()
    }
}

impl Handler<Children> for Supervisor {
    type Result = MessageResult<Children>;

    fn handle(&mut self, _: Children, _: &mut Context<Self>) -> Self::Result {
        MessageResult(
            self.specs
                .iter()
                .zip(&self.slots)
                .map(|(spec, slot)| ChildInfo {
                    name: spec.name.clone(),
                    running: slot.running.is_some(),
                    starts: slot.starts,
                })
                .collect(),
        )
    }
}
