//! The supervisor actor: starts children, restarts them by strategy within the intensity,
//! escalates, and answers lookups.

use crate::child::{ChildSlot, ExitReport, Instance};
use crate::{ChildLink, Restart};
use crate::{ChildSpec, EventKind, EventSink, Exit, Failure, Intensity, RestartWindow};
use crate::{SupervisorError, SupervisorEvent};
use actix::prelude::*;
use mosaic_core::experiment::RestartStrategy;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// A child's end, reported from its thread.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ChildExited {
    pub(crate) index: usize,
    pub(crate) generation: u64,
    pub(crate) exit: Exit,
}

impl std::fmt::Debug for ChildExited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildExited").finish_non_exhaustive()
    }
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

impl<A: Actor> std::fmt::Debug for Lookup<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lookup").finish_non_exhaustive()
    }
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

/// A supervisor actor; see the [crate docs](crate).
pub struct Supervisor {
    name: String,
    strategy: RestartStrategy,
    specs: Vec<ChildSpec>,
    slots: Vec<ChildSlot>,
    restarts: RestartWindow,
    events: Option<EventSink>,
    escalation: Escalation,
    stopping: bool,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor").finish_non_exhaustive()
    }
}

impl Supervisor {
    /// A supervisor named `name` (it names itself in events and errors), one-for-one,
    /// default intensity, no children yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            strategy: RestartStrategy::default(),
            specs: Vec::new(),
            slots: Vec::new(),
            restarts: RestartWindow::new(Intensity::default()),
            events: None,
            escalation: Escalation::None,
            stopping: false,
        }
    }

    /// With this strategy.
    pub fn strategy(mut self, strategy: RestartStrategy) -> Self {
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

    pub(crate) fn linked(mut self, link: &ChildLink) -> Self {
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
            RestartStrategy::OneForOne => vec![index],
            RestartStrategy::OneForAll => (0..self.specs.len()).collect(),
            RestartStrategy::RestForOne => (index..self.specs.len()).collect(),
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
