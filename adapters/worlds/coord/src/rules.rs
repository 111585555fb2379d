//! One environment step: Craftax-Classic's rules for each agent, resolved in a fixed
//! order so that simultaneous actions are deterministic.
//!
//! Order within a step: messages, requests and sleep; gives; crafting; construction; Do
//! (grouped by target, so that synchronous actions meet); placing; movement (agents in
//! index order); handover expiry; mobs and arrows; spawning; plants; vitals; rewards.

use super::actions::{Act, Placeable, REQUEST_STEPS};
use super::coordination;
use super::crafting;
use super::effects::{Harm, Members, event, hurt, members, mine, role_check};
use super::mobs;
use super::scoring::credit;
use super::settings::Config;
use super::state::{
    AgentState, BLEED_OUT_STEPS, CoordKind, DeathCause, Life, Plant, REVIVE_HEALTH, Request,
    Signal, Tag, VITAL_MAX, World, light_level,
};
use super::types::{Achievement, Block, Item, Resource, Role};
use mosaic_core::{Event, Transition};
use rand::Rng as _;

/// Steps a planted sapling needs to ripen.
const PLANT_RIPE_AGE: u32 = 600;
/// Chance that Do on grass yields a sapling.
const SAPLING_CHANCE: f64 = 0.1;

/// Advances the world by one step. `acts[i]` is agent `i`'s action; agents that are
/// asleep, down or dead do nothing whatever they chose.
pub(crate) fn advance(world: &mut World, config: &Config, chosen: &[Act], out: &mut Transition) {
    let n = world.agents.len();
    out.clear(n);
    // At most four agents: fixed arrays keep the step free of allocations.
    let mut before = [(0u64, 0i32, false); 4];
    for (slot, a) in before.iter_mut().zip(&world.agents) {
        *slot = (a.achievements, a.health, a.is_present());
    }
    let mut acts = [Act::Noop; 4];
    for (i, a) in world.agents.iter_mut().enumerate() {
        a.note = None;
        if a.is_alive() && !a.sleeping {
            acts[i] = chosen.get(i).copied().unwrap_or(Act::Noop);
        }
    }
    let acts = &acts[..n];
    let events = &mut out.events;

    messages(world, acts);
    gives(world, acts, events);
    crafting::craft(world, config, acts, events);
    coordination::build(world, config, acts, events);
    interact(world, config, acts, events);
    place(world, config, acts);
    movement(world, acts, events);
    coordination::expire(world, events);
    mobs::update(world, events);
    mobs::spawn(world, config);
    grow_plants(world);
    for i in 0..n {
        vitals(world, i, events);
    }

    for (i, (achievements, health, present)) in before.into_iter().take(n).enumerate() {
        if !present {
            continue;
        }
        let a = &mut world.agents[i];
        let new = a.achievements & !achievements;
        let (mut base, mut coord) = (0.0, 0.0);
        if new != 0 {
            for achievement in Achievement::ALL.iter().filter(|x| new & x.bit() != 0) {
                let (b, c) = credit(config.scoring, *achievement);
                base += b;
                coord += c;
                event(
                    events,
                    "achievement",
                    Some(i),
                    serde_json::json!({ "name": achievement.name() }),
                );
            }
        }
        base += 0.1 * f64::from(a.health - health);
        a.base_reward += base;
        a.coord_reward += coord;
        out.rewards[i] = (base + coord) as f32;
    }

    world.step += 1;
    world.light = light_level(world.step, config.day_length);
    let nobody_up = !world.agents.iter().any(AgentState::is_alive);
    for (i, a) in world.agents.iter().enumerate() {
        out.terminated[i] = nobody_up || !a.is_present();
        out.truncated[i] = !out.terminated[i] && world.step >= config.max_steps;
    }
}

fn messages(world: &mut World, acts: &[Act]) {
    let step = world.step;
    for (a, act) in world.agents.iter_mut().zip(acts) {
        match *act {
            Act::Signal(value) => a.signal = Some(Signal { value, step }),
            Act::Request(resource) => {
                a.request = Some(Request {
                    resource,
                    until: step + REQUEST_STEPS - 1,
                });
            }
            Act::Sleep if a.energy < VITAL_MAX => a.sleeping = true,
            _ => {}
        }
        if a.request.is_some_and(|r| r.until < step) {
            a.request = None;
        }
    }
}

/// Whether `giver` can give to `receiver` now: the receiver has an active request and
/// the giver holds one unit of it.
pub(crate) fn can_give(world: &World, giver: usize, receiver: usize) -> bool {
    let (Some(g), Some(r)) = (world.agents.get(giver), world.agents.get(receiver)) else {
        return false;
    };
    let Some(request) = r.request.filter(|q| q.until >= world.step) else {
        return false;
    };
    giver != receiver
        && r.is_present()
        && match request.resource {
            Resource::Food => g.food > 0,
            Resource::Drink => g.drink > 0,
            other => other.item().is_some_and(|item| g.count(item) > 0),
        }
}

fn gives(world: &mut World, acts: &[Act], events: &mut Vec<Event>) {
    for (giver, act) in acts.iter().enumerate() {
        let Act::Give(receiver) = *act else { continue };
        let receiver = usize::from(receiver);
        if !can_give(world, giver, receiver) {
            continue;
        }
        let Some(request) = world.agents[receiver].request else {
            continue;
        };
        match request.resource {
            Resource::Food => {
                world.agents[giver].food -= 1;
                let r = &mut world.agents[receiver];
                r.eat(1);
            }
            Resource::Drink => {
                world.agents[giver].drink -= 1;
                let r = &mut world.agents[receiver];
                r.drink_up(1);
            }
            other => {
                if let Some(item) = other.item() {
                    world.agents[giver].take(item, 1);
                    world.agents[receiver].add(item, 1);
                }
            }
        }
        world.counters.trades += 1;
        event(
            events,
            "trade",
            Some(giver),
            serde_json::json!({ "to": receiver, "resource": request.resource.name() }),
        );
    }
}

/// Do: agents acting on the same tile form one group, resolved together.
fn interact(world: &mut World, config: &Config, acts: &[Act], events: &mut Vec<Event>) {
    let mut groups: [((i32, i32), Members); 4] = [((0, 0), 0); 4];
    let mut count = 0;
    for (i, act) in acts.iter().enumerate() {
        if *act != Act::Do {
            continue;
        }
        let target = world.agents[i].target();
        if world.tile(target.0, target.1).is_none() {
            continue;
        }
        match groups[..count].iter_mut().find(|(t, _)| *t == target) {
            Some((_, m)) => *m |= 1 << i,
            None => {
                groups[count] = (target, 1 << i);
                count += 1;
            }
        }
    }
    for &((x, y), group) in &groups[..count] {
        if let Some(other) = world.agent_at(x, y) {
            teammate(world, other, group, events);
        } else if let Some(mob) = world.mob_at(x, y) {
            coordination::hit_mob(world, config, mob, group, events);
        } else if let Some(tile) = world.tile(x, y) {
            if world.blocks[tile].resource().is_some() && world.tags[tile].kind != CoordKind::None {
                coordination::mine_tagged(world, config, tile, group, events);
            } else {
                for agent in members(group) {
                    do_block(world, config, agent, tile);
                }
            }
        }
    }
}

/// Do on a teammate: revive it when down, hit it (friendly fire) when up.
fn teammate(world: &mut World, other: usize, group: Members, events: &mut Vec<Event>) {
    match world.agents[other].life {
        Life::Downed { .. } => {
            if let Some(reviver) = members(group).next() {
                let a = &mut world.agents[other];
                a.life = Life::Alive;
                a.health = REVIVE_HEALTH;
                a.recover = 0.0;
                a.downed_by = None;
                world.counters.revives += 1;
                event(
                    events,
                    "revive",
                    Some(reviver),
                    serde_json::json!({ "revived": other }),
                );
            }
        }
        Life::Alive => {
            for attacker in members(group) {
                let damage = world.agents[attacker].damage();
                world.counters.friendly_fire += 1;
                event(
                    events,
                    "friendly_fire",
                    Some(attacker),
                    serde_json::json!({ "target": other, "damage": damage }),
                );
                hurt(world, other, damage, Harm::FriendlyFire, events);
            }
        }
        Life::Dead => {}
    }
}

/// Do by one agent on an untagged block, as in Craftax-Classic.
fn do_block(world: &mut World, config: &Config, agent: usize, tile: usize) {
    let block = world.blocks[tile];
    match block {
        Block::Tree | Block::Stone | Block::Coal | Block::Iron | Block::Diamond => {
            let able = world.agents[agent].can_mine(block);
            if able {
                mine(world, tile, 1 << agent);
            }
        }
        Block::Grass => {
            let found = role_check(world, config, agent, Role::Forager)
                && world.rng.random::<f64>() < SAPLING_CHANCE;
            if found {
                let a = &mut world.agents[agent];
                a.add(Item::Sapling, 1);
                a.unlock(Achievement::CollectSapling);
            }
        }
        Block::Water => {
            let drinks = role_check(world, config, agent, Role::Forager);
            if drinks {
                let a = &mut world.agents[agent];
                a.drink_up(1);
                a.thirst = 0.0;
                a.unlock(Achievement::CollectDrink);
            }
        }
        Block::RipePlant => {
            world.blocks[tile] = Block::Plant;
            if let Some(p) = world.plants.iter_mut().find(|p| p.tile == tile) {
                p.age = 0;
            }
            let a = &mut world.agents[agent];
            a.eat(4);
            a.hunger = 0.0;
            a.unlock(Achievement::EatPlant);
        }
        _ => {}
    }
}

/// Whether `agent` could place `what` on its faced tile now (materials and target).
pub(crate) fn can_place(world: &World, agent: usize, what: Placeable) -> bool {
    let a = &world.agents[agent];
    let (x, y) = a.target();
    if world.tile(x, y).is_none() || world.mob_at(x, y).is_some() || world.agent_at(x, y).is_some()
    {
        return false;
    }
    let target = world.block(x, y);
    match what {
        Placeable::Table => a.count(Item::Wood) >= 2 && !target.is_solid(),
        Placeable::Furnace => a.count(Item::Stone) >= 1 && !target.is_solid(),
        Placeable::Stone => {
            a.count(Item::Stone) >= 1 && (target == Block::Water || !target.is_solid())
        }
        Placeable::Plant => a.count(Item::Sapling) >= 1 && target == Block::Grass,
    }
}

fn place(world: &mut World, config: &Config, acts: &[Act]) {
    for (i, act) in acts.iter().enumerate() {
        let Act::Place(what) = *act else { continue };
        if !can_place(world, i, what) {
            continue;
        }
        if what == Placeable::Stone && !role_check(world, config, i, Role::Miner) {
            continue;
        }
        let (x, y) = world.agents[i].target();
        let Some(tile) = world.tile(x, y) else {
            continue;
        };
        let a = &mut world.agents[i];
        let (block, achievement) = match what {
            Placeable::Table => {
                a.take(Item::Wood, 2);
                (Block::Table, Achievement::PlaceTable)
            }
            Placeable::Furnace => {
                a.take(Item::Stone, 1);
                (Block::Furnace, Achievement::PlaceFurnace)
            }
            Placeable::Stone => {
                a.take(Item::Stone, 1);
                (Block::Stone, Achievement::PlaceStone)
            }
            Placeable::Plant => {
                a.take(Item::Sapling, 1);
                world.plants.push(Plant { tile, age: 0 });
                (Block::Plant, Achievement::PlacePlant)
            }
        };
        world.agents[i].unlock(achievement);
        world.blocks[tile] = block;
        world.tags[tile] = Tag::NONE;
    }
}

fn movement(world: &mut World, acts: &[Act], events: &mut Vec<Event>) {
    for (i, act) in acts.iter().enumerate() {
        let Act::Move(dir) = *act else { continue };
        world.agents[i].facing = dir;
        let (dx, dy) = dir.delta();
        let (x, y) = (world.agents[i].x + dx, world.agents[i].y + dy);
        if !world.is_free(x, y) {
            continue;
        }
        let a = &mut world.agents[i];
        a.x = x;
        a.y = y;
        if world.block(x, y) == Block::Lava {
            kill(world, i, "lava", Some(DeathCause::Lava), events);
        }
    }
}

/// Ends `agent` for good: `what` names it in the death event, `cause` (when known: a
/// restored snapshot may leave it out) is counted.
fn kill(
    world: &mut World,
    agent: usize,
    what: &str,
    cause: Option<DeathCause>,
    events: &mut Vec<Event>,
) {
    let a = &mut world.agents[agent];
    a.life = Life::Dead;
    a.health = 0;
    a.sleeping = false;
    a.downed_by = None;
    world.counters.deaths += 1;
    if let Some(cause) = cause {
        let slot = &mut world.counters.deaths_by[cause as usize];
        *slot = slot.saturating_add(1);
    }
    event(
        events,
        "death",
        Some(agent),
        serde_json::json!({ "cause": what }),
    );
}

fn grow_plants(world: &mut World) {
    let blocks = &mut world.blocks;
    world.plants.retain_mut(|p| {
        p.age += 1;
        match blocks[p.tile] {
            Block::Plant => {
                if p.age >= PLANT_RIPE_AGE {
                    blocks[p.tile] = Block::RipePlant;
                }
                true
            }
            Block::RipePlant => true,
            _ => false,
        }
    });
}

/// Craftax-Classic's intrinsics: hunger, thirst, fatigue and recovery; a shelter makes
/// sleep restore energy 50% faster. Downed agents bleed out.
fn vitals(world: &mut World, agent: usize, events: &mut Vec<Event>) {
    let step = world.step;
    let shelter = world.shelters > 0;
    let a = &mut world.agents[agent];
    match a.life {
        Life::Dead => return,
        Life::Downed { since } => {
            if step >= since + BLEED_OUT_STEPS {
                let cause = a.downed_by;
                kill(world, agent, "bled out", cause, events);
            }
            return;
        }
        Life::Alive => {}
    }
    if a.sleeping && a.energy >= VITAL_MAX {
        a.sleeping = false;
        a.unlock(Achievement::WakeUp);
    }
    let rate = if a.sleeping { 0.5 } else { 1.0 };
    a.hunger += rate;
    if a.hunger > 25.0 {
        a.food = (a.food - 1).max(0);
        a.hunger = 0.0;
    }
    a.thirst += rate;
    if a.thirst > 20.0 {
        a.drink = (a.drink - 1).max(0);
        a.thirst = 0.0;
    }
    a.fatigue = if a.sleeping {
        (a.fatigue - if shelter { 1.5 } else { 1.0 }).min(0.0)
    } else {
        a.fatigue + 1.0
    };
    if a.fatigue > 30.0 {
        a.energy = (a.energy - 1).max(0);
        a.fatigue = 0.0;
    }
    if a.fatigue < -10.0 {
        a.energy = (a.energy + 1).min(VITAL_MAX);
        a.fatigue = 0.0;
    }
    let fine = a.food > 0 && a.drink > 0 && (a.energy > 0 || a.sleeping);
    a.recover += match (fine, a.sleeping) {
        (true, true) => 2.0,
        (true, false) => 1.0,
        (false, true) => -0.5,
        (false, false) => -1.0,
    };
    if a.recover > 25.0 {
        a.health = (a.health + 1).min(VITAL_MAX);
        a.recover = 0.0;
    }
    if a.recover < -15.0 {
        a.recover = 0.0;
        hurt(world, agent, 1, Harm::Needs, events);
    }
}
