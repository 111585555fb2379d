//! Supervision trees with OTP semantics on actix.
//!
//! A [`Supervisor`] starts its children from [`ChildSpec`]s, each on its own
//! [`Arbiter`](actix::Arbiter) (thread), and restarts them when they fail:
//!
//! - **Fresh instances**: every (re)start calls the child's factory again; no state survives a
//!   restart unless the factory restores it (e.g. from a checkpoint).
//! - **Restart policies** ([`Restart`]): `Permanent` children are always restarted,
//!   `Transient` ones only after a failure, `Temporary` ones never.
//! - **Strategies** ([`RestartStrategy`], the one enum experiments name too): `OneForOne` restarts the failed child, `OneForAll` stops
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
//! use mosaic_core::experiment::RestartStrategy;
//! use mosaic_supervisor::{ChildSpec, Restart, Supervisor};
//!
//! struct Counter(u32);
//! impl Actor for Counter {
//!     type Context = Context<Self>;
//! }
//!
//! actix::System::new().block_on(async {
//!     let supervisor = Supervisor::new("run")
//!         .strategy(RestartStrategy::OneForOne)
//!         .child(ChildSpec::new("counter", |_| Counter(0)).restart(Restart::Permanent))
//!         .events(|event| println!("{event}"))
//!         .start();
//!     let counter = supervisor
//!         .send(mosaic_supervisor::Lookup::<Counter>::new("counter"))
//!         .await
//!         .ok()
//!         .flatten();
//!     assert!(counter.is_some());
//!     let _ = supervisor.send(mosaic_supervisor::Shutdown).await;
//! });
//! ```

mod child;
mod event;
mod policy;
mod tree;

pub use child::{ChildLink, ChildSpec};
pub use event::{EventKind, EventSink, Exit, Failure, SupervisorError, SupervisorEvent};
pub use mosaic_core::experiment::RestartStrategy;
pub use policy::{BeatSource, Heartbeat, Intensity, Restart, RestartWindow};
pub use tree::{ChildExited, ChildInfo, Children, Lookup, Shutdown, Supervisor};
