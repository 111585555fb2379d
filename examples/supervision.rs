//! A supervised actor that panics now and then and is restarted, with the supervision
//! events printed as they happen.
//!
//! The tree is `run` → `session` → `tally` (plus a `clock` beside `tally` whose event loop
//! heartbeats). The driver sends `tally` seeded dice rolls; a roll of 1 makes it panic. The
//! panic ends only that instance: its supervisor starts a fresh one on a new thread (the
//! count restarts from zero) and the run goes on. Failing more than 3 times within a second
//! would exceed the session's intensity and escalate to `run`.
//!
//! Run with `cargo run --example supervision`.

use actix::prelude::*;
use mosaic::core::rng::seeded;
use mosaic::supervisor::{
    ChildSpec, Heartbeat, Intensity, Lookup, RestartStrategy, Shutdown, Supervisor,
};
use rand::Rng;
use std::time::Duration;

/// Adds up the rolls it is sent; a roll of 1 is a "bug" that panics its handler.
#[derive(Default)]
struct Tally {
    total: u32,
}

impl Actor for Tally {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "u32")]
struct Roll(u32);

impl Handler<Roll> for Tally {
    type Result = u32;

    fn handle(&mut self, Roll(value): Roll, _: &mut Context<Self>) -> u32 {
        assert!(value != 1, "tally cannot count a roll of 1");
        self.total += value;
        self.total
    }
}

/// The running `tally`, looked up at every roll: a restart replaces its address (and a
/// session restart replaces the session's).
async fn current_tally(run: &Addr<Supervisor>) -> Option<Addr<Tally>> {
    let session = run
        .send(Lookup::<Supervisor>::new("session"))
        .await
        .ok()??;
    session.send(Lookup::<Tally>::new("tally")).await.ok()?
}

/// Does nothing but keep its event loop turning (watched by its heartbeat).
struct Clock;

impl Actor for Clock {
    type Context = Context<Self>;
}

fn main() {
    // The supervisor reports panics as events; keep the default hook's backtrace noise out.
    std::panic::set_hook(Box::new(|_| {}));
    let mut dice = seeded(7);
    actix::System::new().block_on(async move {
        let run = Supervisor::new("run")
            .events(|event| println!("event: {event}"))
            .on_escalation(|error| println!("run gave up: {error}"))
            .child(ChildSpec::supervisor("session", || {
                Supervisor::new("session")
                    .strategy(RestartStrategy::OneForOne)
                    .intensity(Intensity::new(3, Duration::from_secs(1)))
                    .child(ChildSpec::new("tally", |_| Tally::default()))
                    .child(ChildSpec::new("clock", |_| Clock).heartbeat(Heartbeat::default()))
            }))
            .start();
        for _ in 0..30 {
            if !run.connected() {
                break;
            }
            let value = dice.random_range(1..=6);
            let tally = current_tally(&run).await;
            let answer = match tally {
                Some(tally) => tally.send(Roll(value)).await,
                None => {
                    println!("roll {value}: tally is restarting");
                    continue;
                }
            };
            match answer {
                Ok(total) => println!("roll {value}: total {total}"),
                Err(_) => println!("roll {value}: tally crashed"),
            }
            actix_rt::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = run.send(Shutdown).await;
    });
}
