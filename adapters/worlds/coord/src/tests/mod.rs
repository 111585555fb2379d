//! Mechanics tests on hand-built arenas and determinism tests on generated worlds.

use super::state::{CoordKind, Life, Mob, MobTag, Tag, World};
use super::*;
use mosaic_core::rng::seeded;
use mosaic_core::{Environment, ObsRequest, Transition};
use rand::Rng as _;
use serde_json::{Value, json};

fn settings(pairs: &[(&str, Value)]) -> Settings {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

/// A sand arena (no mob spawns on sand) with the agents at `positions`.
fn arena(pairs: &[(&str, Value)], positions: &[(i32, i32)]) -> CoordWorld {
    let mut env = CoordWorld::from_settings(&settings(pairs)).unwrap();
    env.reset(1).unwrap();
    let w = world(&mut env);
    w.blocks.fill(Block::Sand);
    w.tags.fill(Tag::NONE);
    w.mobs.clear();
    w.mob_at.fill(0);
    w.arrows.clear();
    w.plants.clear();
    for (a, (x, y)) in w.agents.iter_mut().zip(positions) {
        a.x = *x;
        a.y = *y;
    }
    env
}

fn world(env: &mut CoordWorld) -> &mut World {
    env.world.as_mut().unwrap()
}

fn set(env: &mut CoordWorld, x: i32, y: i32, block: Block, tag: Tag) {
    let w = world(env);
    let t = w.tile(x, y).unwrap();
    w.blocks[t] = block;
    w.tags[t] = tag;
}

fn face(env: &mut CoordWorld, agent: usize, dir: Dir) {
    world(env).agents[agent].facing = dir;
}

/// Full vitals, so that long tests never starve.
fn refresh(env: &mut CoordWorld) {
    for a in &mut world(env).agents {
        a.health = 9;
        a.food = 9;
        a.drink = 9;
        a.energy = 9;
    }
}

/// The text observation of `agent`.
fn text_of(env: &CoordWorld, agent: usize) -> String {
    let text_only = ObsRequest {
        text: true,
        ..ObsRequest::MASK_ONLY
    };
    env.observe(agent, text_only).text.unwrap_or_default()
}

fn step(env: &mut CoordWorld, acts: &[Act]) -> Transition {
    let set = *env.action_set();
    let actions: Vec<_> = acts
        .iter()
        .map(|a| Some(mosaic_core::Action(set.index_of(*a) as u32)))
        .collect();
    let mut out = Transition::default();
    env.step(&actions, &mut out).unwrap();
    out
}

fn sync(soft: bool, required: u8) -> Tag {
    Tag {
        kind: CoordKind::Sync,
        soft,
        required,
        window: 0,
    }
}

fn handover(window: u8) -> Tag {
    Tag {
        kind: CoordKind::Handover,
        soft: false,
        required: 0,
        window,
    }
}

fn two_agents() -> Vec<(&'static str, Value)> {
    vec![("agents", json!(2)), ("alpha", json!(0.6))]
}

/// An episode's metrics.
type Map = serde_json::Map<String, Value>;

mod calibration;
mod coordination;
mod episodes;
mod scoring;
mod team;
