//! Supervision trees: strategies, restart policies, intensity and escalation, nested
//! supervisors, contained panics, heartbeat loss and shutdown, with real threads and panics.

use actix::prelude::*;
use mosaic_supervisor::{
    ChildInfo, ChildLink, ChildSpec, Children, EventKind, Exit, Failure, Heartbeat, Intensity,
    Lookup, Restart, RestartStrategy, Shutdown, Supervisor, SupervisorError, SupervisorEvent,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A child that counts its instances and stops, fails, panics or hangs on request.
struct Probe {
    link: ChildLink,
    stops: Arc<AtomicUsize>,
}

impl Actor for Probe {
    type Context = Context<Self>;

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.stops.fetch_add(1, Ordering::SeqCst);
    }
}

#[derive(Message)]
#[rtype(result = "()")]
enum Order {
    Stop,
    Fail,
    Panic,
    Block(Duration),
}

impl Handler<Order> for Probe {
    type Result = ();

    fn handle(&mut self, order: Order, ctx: &mut Context<Self>) {
        match order {
            Order::Stop => ctx.stop(),
            Order::Fail => {
                self.link.fail("asked to fail");
                ctx.stop();
            }
            Order::Panic => panic!("probe panicked on purpose"),
            Order::Block(duration) => std::thread::sleep(duration),
        }
    }
}

/// Answers with the id of the thread the child runs on.
#[derive(Message)]
#[rtype(result = "std::thread::ThreadId")]
struct WhichThread;

impl Handler<WhichThread> for Probe {
    type Result = MessageResult<WhichThread>;

    fn handle(&mut self, _: WhichThread, _: &mut Context<Self>) -> Self::Result {
        MessageResult(std::thread::current().id())
    }
}

#[derive(Clone, Default)]
struct Recorded {
    events: Arc<Mutex<Vec<SupervisorEvent>>>,
    stops: Arc<AtomicUsize>,
}

impl Recorded {
    fn probe(&self, name: &str) -> ChildSpec {
        let stops = Arc::clone(&self.stops);
        ChildSpec::new(name, move |link| Probe {
            link: link.clone(),
            stops: Arc::clone(&stops),
        })
        .shutdown(Duration::from_millis(500))
    }

    fn supervisor(&self, name: &str) -> Supervisor {
        let events = Arc::clone(&self.events);
        Supervisor::new(name)
            .events(move |event| events.lock().expect("events lock").push(event.clone()))
    }

    fn kinds_of(&self, child: &str) -> Vec<EventKind> {
        let events = self.events.lock().expect("events lock");
        events
            .iter()
            .filter(|e| e.child == child)
            .map(|e| e.kind.clone())
            .collect()
    }

    fn starts_of(&self, child: &str) -> usize {
        self.kinds_of(child)
            .iter()
            .filter(|k| matches!(k, EventKind::Started { .. }))
            .count()
    }
}

async fn probe(supervisor: &Addr<Supervisor>, name: &str) -> Addr<Probe> {
    supervisor
        .send(Lookup::<Probe>::new(name))
        .await
        .expect("supervisor alive")
        .unwrap_or_else(|| panic!("child {name} not running"))
}

async fn children(supervisor: &Addr<Supervisor>) -> Vec<ChildInfo> {
    supervisor.send(Children).await.expect("supervisor alive")
}

/// Waits until `condition` holds (checking every 10 ms), at most 5 s.
async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn starts(supervisor: &Addr<Supervisor>) -> Vec<u64> {
    children(supervisor)
        .await
        .iter()
        .map(|c| c.starts)
        .collect()
}

/// Three probes under `strategy`; the middle one fails; returns the starts per child.
fn restart_middle_under(strategy: RestartStrategy) -> Vec<u64> {
    actix::System::new().block_on(async move {
        let recorded = Recorded::default();
        let supervisor = recorded
            .supervisor("strategies")
            .strategy(strategy)
            .child(recorded.probe("a"))
            .child(recorded.probe("b"))
            .child(recorded.probe("c"))
            .start();
        probe(&supervisor, "b").await.do_send(Order::Fail);
        eventually("the restart", || {
            recorded
                .kinds_of("b")
                .iter()
                .any(|k| matches!(k, EventKind::Restarted { .. }))
        })
        .await;
        let result = starts(&supervisor).await;
        supervisor.send(Shutdown).await.expect("shutdown");
        result
    })
}

#[test]
fn one_for_one_restarts_only_the_failed_child() {
    assert_eq!(
        restart_middle_under(RestartStrategy::OneForOne),
        vec![1, 2, 1]
    );
}

#[test]
fn one_for_all_restarts_every_child() {
    assert_eq!(
        restart_middle_under(RestartStrategy::OneForAll),
        vec![2, 2, 2]
    );
}

#[test]
fn rest_for_one_restarts_the_failed_child_and_those_after_it() {
    assert_eq!(
        restart_middle_under(RestartStrategy::RestForOne),
        vec![1, 2, 2]
    );
}

/// How a child under `restart` ends after `order`: its starts and whether it runs.
fn after_order(restart: Restart, order: Order) -> ChildInfo {
    actix::System::new().block_on(async move {
        let recorded = Recorded::default();
        let supervisor = recorded
            .supervisor("policies")
            .child(recorded.probe("child").restart(restart))
            .start();
        probe(&supervisor, "child").await.do_send(order);
        eventually("the exit", || {
            recorded
                .kinds_of("child")
                .iter()
                .any(|k| matches!(k, EventKind::Exited | EventKind::Failed(_)))
        })
        .await;
        // Give a restart (if any) time to happen before looking.
        actix_rt::time::sleep(Duration::from_millis(100)).await;
        let info = children(&supervisor).await.remove(0);
        supervisor.send(Shutdown).await.expect("shutdown");
        info
    })
}

#[test]
fn permanent_children_restart_after_any_exit() {
    for order in [Order::Stop, Order::Fail] {
        let info = after_order(Restart::Permanent, order);
        assert_eq!((info.starts, info.running), (2, true));
    }
}

#[test]
fn transient_children_restart_only_after_a_failure() {
    let stopped = after_order(Restart::Transient, Order::Stop);
    assert_eq!((stopped.starts, stopped.running), (1, false));
    let failed = after_order(Restart::Transient, Order::Fail);
    assert_eq!((failed.starts, failed.running), (2, true));
}

#[test]
fn temporary_children_never_restart() {
    let failed = after_order(Restart::Temporary, Order::Fail);
    assert_eq!((failed.starts, failed.running), (1, false));
}

#[test]
fn a_handler_panic_is_contained_and_the_child_restarted_on_a_fresh_thread() {
    actix::System::new().block_on(async {
        let recorded = Recorded::default();
        let supervisor = recorded
            .supervisor("panics")
            .child(recorded.probe("child"))
            .start();
        let first = probe(&supervisor, "child").await;
        let first_thread = first.send(WhichThread).await.expect("first instance");
        assert_ne!(first_thread, std::thread::current().id());
        first.do_send(Order::Panic);
        eventually("the restart", || recorded.starts_of("child") == 2).await;
        assert!(
            recorded
                .kinds_of("child")
                .contains(&EventKind::Failed(Failure::Panicked(
                    "probe panicked on purpose".into()
                )))
        );
        let second = probe(&supervisor, "child").await;
        let second_thread = second.send(WhichThread).await.expect("restarted instance");
        assert_ne!(second_thread, first_thread);
        assert!(!first.connected(), "the panicked instance is gone");
        supervisor.send(Shutdown).await.expect("shutdown");
    });
}

#[test]
fn exceeding_the_intensity_escalates_a_clear_error_and_stops_the_children() {
    actix::System::new().block_on(async {
        let recorded = Recorded::default();
        let escalated = Arc::new(Mutex::new(None));
        let sink = Arc::clone(&escalated);
        let supervisor = recorded
            .supervisor("root")
            .intensity(Intensity::new(2, Duration::from_secs(10)))
            .child(recorded.probe("flaky"))
            .child(recorded.probe("steady"))
            .on_escalation(move |error| *sink.lock().expect("lock") = Some(error))
            .start();
        let steady = probe(&supervisor, "steady").await;
        for expected_starts in [2, 3] {
            probe(&supervisor, "flaky").await.do_send(Order::Panic);
            eventually("the restart", || {
                recorded.starts_of("flaky") == expected_starts
            })
            .await;
        }
        probe(&supervisor, "flaky").await.do_send(Order::Panic);
        eventually("the escalation", || {
            escalated.lock().expect("lock").is_some()
        })
        .await;
        let error = escalated.lock().expect("lock").clone();
        let expected = SupervisorError::IntensityExceeded {
            supervisor: "root".into(),
            child: "flaky".into(),
            restarts: 3,
            limit: 2,
            period: Duration::from_secs(10),
            exit: Exit::Failed(Failure::Panicked("probe panicked on purpose".into())),
        };
        assert_eq!(error, Some(expected.clone()));
        let message = expected.to_string();
        assert!(
            message.contains("`root`") && message.contains("`flaky`"),
            "{message}"
        );
        assert!(
            message.contains("3 restarts") && message.contains("limit 2"),
            "{message}"
        );
        assert!(
            recorded
                .kinds_of("root")
                .contains(&EventKind::Escalated(expected))
        );
        eventually("the steady child stopped", || !steady.connected()).await;
        eventually("the supervisor stopped", || !supervisor.connected()).await;
    });
}

#[test]
fn a_nested_supervisor_escalates_to_its_parent() {
    actix::System::new().block_on(async {
        let recorded = Recorded::default();
        let inner_recorded = recorded.clone();
        let supervisor = recorded
            .supervisor("run")
            .intensity(Intensity::new(0, Duration::from_secs(5)))
            .child(ChildSpec::supervisor("session", move || {
                // No subscriber of its own: it inherits the parent's.
                Supervisor::new("session")
                    .intensity(Intensity::new(0, Duration::from_secs(5)))
                    .child(inner_recorded.probe("env"))
            }))
            .start();
        let session = supervisor
            .send(Lookup::<Supervisor>::new("session"))
            .await
            .expect("run alive")
            .expect("session running");
        eventually("the env started", || recorded.starts_of("env") == 1).await;
        probe(&session, "env").await.do_send(Order::Panic);
        eventually("the run gave up", || !supervisor.connected()).await;
        let inner = SupervisorError::IntensityExceeded {
            supervisor: "session".into(),
            child: "env".into(),
            restarts: 1,
            limit: 0,
            period: Duration::from_secs(5),
            exit: Exit::Failed(Failure::Panicked("probe panicked on purpose".into())),
        };
        assert!(
            recorded
                .kinds_of("session")
                .contains(&EventKind::Escalated(inner.clone())),
            "the nested supervisor reports its escalation"
        );
        let outer = SupervisorError::IntensityExceeded {
            supervisor: "run".into(),
            child: "session".into(),
            restarts: 1,
            limit: 0,
            period: Duration::from_secs(5),
            exit: Exit::Failed(Failure::Escalated(Box::new(inner))),
        };
        assert!(
            recorded
                .kinds_of("run")
                .contains(&EventKind::Escalated(outer))
        );
    });
}

#[test]
fn a_blocked_child_loses_its_heartbeat_and_is_restarted() {
    actix::System::new().block_on(async {
        let recorded = Recorded::default();
        let heartbeat = Heartbeat::default()
            .interval(Duration::from_millis(20))
            .timeout(Duration::from_millis(200));
        let supervisor = recorded
            .supervisor("liveness")
            .child(recorded.probe("child").heartbeat(heartbeat))
            .start();
        // Beating on its own event loop: alive well past the timeout.
        actix_rt::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(recorded.starts_of("child"), 1);
        let hung = probe(&supervisor, "child").await;
        let blocked_at = Instant::now();
        hung.do_send(Order::Block(Duration::from_millis(1500)));
        eventually("the restart", || recorded.starts_of("child") == 2).await;
        let detected_after = blocked_at.elapsed();
        assert!(
            detected_after >= Duration::from_millis(200) && detected_after < Duration::from_secs(1),
            "{detected_after:?}"
        );
        assert!(recorded.kinds_of("child").iter().any(|k| matches!(
            k,
            EventKind::Failed(Failure::HeartbeatLost { timeout, .. }) if *timeout == Duration::from_millis(200)
        )));
        // The new instance answers while the old thread is still blocked.
        let fresh = probe(&supervisor, "child").await;
        fresh.send(WhichThread).await.expect("fresh instance answers");
        supervisor.send(Shutdown).await.expect("shutdown");
    });
}

#[test]
fn a_child_beating_by_itself_is_restarted_when_it_falls_silent() {
    actix::System::new().block_on(async {
        let recorded = Recorded::default();
        let beats = Arc::new(Mutex::new(Vec::<ChildLink>::new()));
        let links = Arc::clone(&beats);
        let stops = Arc::clone(&recorded.stops);
        let heartbeat = Heartbeat::manual()
            .interval(Duration::from_millis(20))
            .timeout(Duration::from_millis(150));
        let supervisor = recorded
            .supervisor("manual")
            .child(
                ChildSpec::new("worker", move |link| {
                    links.lock().expect("lock").push(link.clone());
                    Probe {
                        link: link.clone(),
                        stops: Arc::clone(&stops),
                    }
                })
                .heartbeat(heartbeat),
            )
            .start();
        // Beats from outside the child's thread (as an external worker's would) keep it up.
        for _ in 0..20 {
            if let Some(link) = beats.lock().expect("lock").last() {
                link.beat();
            }
            actix_rt::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(recorded.starts_of("worker"), 1);
        eventually("the restart", || recorded.starts_of("worker") == 2).await;
        supervisor.send(Shutdown).await.expect("shutdown");
    });
}

#[test]
fn shutdown_stops_every_child_in_reverse_order() {
    actix::System::new().block_on(async {
        let order = Arc::new(Mutex::new(Vec::new()));
        let spec = |name: &'static str| {
            let order = Arc::clone(&order);
            ChildSpec::new(name, move |_| Named {
                name,
                order: Arc::clone(&order),
            })
        };
        let inner = spec("inner");
        let supervisor = Supervisor::new("root")
            .child(spec("first"))
            .child(ChildSpec::supervisor("nested", move || {
                Supervisor::new("nested").child(inner.clone())
            }))
            .child(spec("last"))
            .start();
        let first = supervisor
            .send(Lookup::<Named>::new("first"))
            .await
            .expect("root alive")
            .expect("first running");
        supervisor.send(Shutdown).await.expect("shutdown");
        assert_eq!(*order.lock().expect("lock"), vec!["last", "inner", "first"]);
        assert!(!first.connected());
        assert!(!supervisor.connected());
    });
}

/// Notes its name when it stops.
struct Named {
    name: &'static str,
    order: Arc<Mutex<Vec<&'static str>>>,
}

impl Actor for Named {
    type Context = Context<Self>;

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.order.lock().expect("lock").push(self.name);
    }
}
