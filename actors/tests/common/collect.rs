//! A subscriber that keeps every record, and record comparison without volatile fields.

use actix::prelude::*;
use mosaic_actors::session::Subscribers;
use mosaic_actors::{CheckpointEvent, EpisodeEvent, StepEvent};
use mosaic_core::record::{EpisodeCheckpoint, EpisodeRecord, StepRecord, strip_volatile};
use std::sync::{Arc, Mutex};

/// Everything a [`collector`] received.
#[derive(Default, Clone)]
pub struct Collected {
    pub steps: Arc<Mutex<Vec<StepRecord>>>,
    pub episodes: Arc<Mutex<Vec<EpisodeRecord>>>,
    pub checkpoints: Arc<Mutex<Vec<EpisodeCheckpoint>>>,
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
            .unwrap()
            .extend(msg.records.iter().cloned());
    }
}

impl Handler<EpisodeEvent> for Collector {
    type Result = ();
    fn handle(&mut self, msg: EpisodeEvent, _: &mut Context<Self>) {
        self.0.episodes.lock().unwrap().push((*msg.record).clone());
    }
}

impl Handler<CheckpointEvent> for Collector {
    type Result = ();
    fn handle(&mut self, msg: CheckpointEvent, _: &mut Context<Self>) {
        self.0
            .checkpoints
            .lock()
            .unwrap()
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

/// Records as sorted JSON lines without their volatile fields.
pub fn stripped<T: serde::Serialize>(records: &[T]) -> Vec<String> {
    let mut lines: Vec<String> = records
        .iter()
        .map(|r| {
            let mut v = serde_json::to_value(r).unwrap();
            strip_volatile(&mut v);
            v.to_string()
        })
        .collect();
    lines.sort();
    lines
}
