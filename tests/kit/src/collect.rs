//! A session subscriber that keeps every record it is sent.

use actix::prelude::*;
use mosaic_actors::session::Subscribers;
use mosaic_actors::{CheckpointEvent, EpisodeEvent, StepEvent};
use mosaic_core::record::{EpisodeCheckpoint, EpisodeRecord, StepRecord};
use std::sync::{Arc, Mutex};

/// Everything a [`collector`] received.
#[derive(Default, Clone)]
pub struct Collected {
    /// Step records, in the order received.
    pub steps: Arc<Mutex<Vec<StepRecord>>>,
    /// Episode roll-ups, in the order received.
    pub episodes: Arc<Mutex<Vec<EpisodeRecord>>>,
    /// Checkpoints, in the order received.
    pub checkpoints: Arc<Mutex<Vec<EpisodeCheckpoint>>>,
}

impl std::fmt::Debug for Collected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collected").finish_non_exhaustive()
    }
}

struct Collector(Collected);

impl Actor for Collector {
    type Context = Context<Self>;
}

impl Handler<StepEvent> for Collector {
    type Result = ();
    fn handle(&mut self, msg: StepEvent, _: &mut Context<Self>) {
        self.0
            .steps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(msg.records.iter().cloned());
    }
}

impl Handler<EpisodeEvent> for Collector {
    type Result = ();
    fn handle(&mut self, msg: EpisodeEvent, _: &mut Context<Self>) {
        self.0
            .episodes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((*msg.record).clone());
    }
}

impl Handler<CheckpointEvent> for Collector {
    type Result = ();
    fn handle(&mut self, msg: CheckpointEvent, _: &mut Context<Self>) {
        self.0
            .checkpoints
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((*msg.checkpoint).clone());
    }
}

/// A collecting subscriber, started on the current arbiter.
pub fn collector() -> (Collected, Subscribers) {
    let collected = Collected::default();
    let addr = Collector(collected.clone()).start();
    let subscribers = Subscribers {
        steps: vec![addr.clone().recipient()],
        episodes: vec![addr.clone().recipient()],
        checkpoints: vec![addr.recipient()],
    };
    (collected, subscribers)
}
