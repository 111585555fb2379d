//! Mobs: Craftax-Classic's cows, zombies and skeletons (with arrows), moving and
//! attacking by simple seeded rules; each mob targets the nearest living agent. Spawn
//! slots carry coordination labels drawn at world generation (elite zombies and
//! skeletons, large cows).

use super::effects::{Harm, hurt};
use super::settings::Config;
use super::state::{Arrow, MOB_LABELS, Mob, World};
use super::types::{Block, Dir, MobKind};
use mosaic_core::Event;
use rand::Rng as _;

/// Mobs farther than this (Manhattan) from every agent disappear.
const DESPAWN_DISTANCE: i32 = 14;

/// Arrows in flight at once, per agent (Craftax-Classic's cap).
const ARROWS_PER_AGENT: usize = 3;

/// Health of an ordinary mob.
fn base_health(kind: MobKind) -> i32 {
    match kind {
        MobKind::Zombie => 5,
        MobKind::Cow => 3,
        MobKind::Skeleton => 3,
    }
}

/// Health of a newly spawned mob: coordinated mobs have twice as much; with
/// `scale_base_difficulty` every mob has 1 + α/3 times as much.
pub(crate) fn spawn_health(kind: MobKind, coordinated: bool, config: &Config) -> i32 {
    let health = base_health(kind) * if coordinated { 2 } else { 1 };
    if config.scale_base_difficulty {
        (f64::from(health) * config.difficulty.mob_health_multiplier).round() as i32
    } else {
        health
    }
}

/// How many of `kind` may be alive at once for a team of `agents` (Craftax-Classic's caps,
/// per agent).
fn cap(kind: MobKind, agents: usize) -> usize {
    agents
        * match kind {
            MobKind::Zombie | MobKind::Cow => 3,
            MobKind::Skeleton => 2,
        }
}

fn random_step(world: &mut World) -> (i32, i32) {
    Dir::ALL[world.rng.random_range(0..4)].delta()
}

/// One step along the axis with the larger distance towards (tx, ty) (ties at random).
fn step_towards(world: &mut World, from: (i32, i32), to: (i32, i32)) -> (i32, i32) {
    let (dx, dy) = (to.0 - from.0, to.1 - from.1);
    let horizontal = match dx.abs().cmp(&dy.abs()) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => world.rng.random_bool(0.5),
    };
    if horizontal {
        (dx.signum(), 0)
    } else {
        (0, dy.signum())
    }
}

fn can_enter(world: &World, x: i32, y: i32) -> bool {
    world.is_free(x, y) && world.block(x, y) != Block::Lava
}

/// Moves, attacks and despawns every mob, then flies the arrows.
pub(crate) fn update(world: &mut World, events: &mut Vec<Event>) {
    let mut i = 0;
    while i < world.mobs.len() {
        let mob = world.mobs[i];
        let nearest = world
            .agents
            .iter()
            .filter(|a| a.is_present())
            .map(|a| (a.x - mob.x).abs() + (a.y - mob.y).abs())
            .min();
        if nearest.is_none_or(|d| d >= DESPAWN_DISTANCE) {
            world.remove_mob(i);
            continue;
        }
        let proposal = match mob.kind {
            MobKind::Zombie => zombie(world, i, events),
            MobKind::Cow => {
                if world.rng.random_bool(0.5) {
                    None
                } else {
                    Some(random_step(world))
                }
            }
            MobKind::Skeleton => skeleton(world, i),
        };
        if let Some((dx, dy)) = proposal
            && can_enter(world, mob.x + dx, mob.y + dy)
        {
            world.move_mob(i, mob.x + dx, mob.y + dy);
        }
        i += 1;
    }
    arrows(world, events);
}

/// Chases the nearest agent within 10 tiles (75% of the time) and hits it when adjacent.
fn zombie(world: &mut World, index: usize, events: &mut Vec<Event>) -> Option<(i32, i32)> {
    let mob = world.mobs[index];
    let target = world.nearest_alive_agent(mob.x, mob.y);
    if let Some((agent, 1)) = target
        && mob.cooldown <= 0
    {
        let elite = i32::from(mob.tag.coordinated);
        let damage = if world.agents[agent].sleeping { 7 } else { 2 } + elite;
        world.mobs[index].cooldown = 5;
        hurt(world, agent, damage, Harm::Zombie, events);
        return None;
    }
    world.mobs[index].cooldown -= 1;
    match target {
        Some((agent, d)) if d < 10 && world.rng.random_bool(0.75) => {
            let a = &world.agents[agent];
            let to = (a.x, a.y);
            Some(step_towards(world, (mob.x, mob.y), to))
        }
        _ => Some(random_step(world)),
    }
}

/// Keeps its distance (moves away closer than 4, closer when 10 or more away), shoots
/// arrows from 4–5 tiles or when cornered.
fn skeleton(world: &mut World, index: usize) -> Option<(i32, i32)> {
    let mob = world.mobs[index];
    let Some((agent, distance)) = world.nearest_alive_agent(mob.x, mob.y) else {
        return Some(random_step(world));
    };
    let to = (world.agents[agent].x, world.agents[agent].y);
    let towards = step_towards(world, (mob.x, mob.y), to);
    let too_close = distance <= 3;
    let mut proposal = if too_close {
        (-towards.0, -towards.1)
    } else if distance >= 10 {
        towards
    } else {
        random_step(world)
    };
    if world.rng.random::<f64>() >= 0.15 {
        proposal = random_step(world);
    }
    let cornered = too_close && !can_enter(world, mob.x + proposal.0, mob.y + proposal.1);
    if ((4..=5).contains(&distance) || cornered) && mob.cooldown <= 0 {
        if world.arrows.len() < ARROWS_PER_AGENT * world.agents.len() {
            world.arrows.push(Arrow {
                x: mob.x,
                y: mob.y,
                dx: towards.0,
                dy: towards.1,
                damage: 2 + i32::from(mob.tag.coordinated),
            });
        }
        world.mobs[index].cooldown = 4;
        return None;
    }
    world.mobs[index].cooldown -= 1;
    Some(proposal)
}

/// Arrows fly one tile per step over walkable tiles and water; they hurt the agent they
/// reach and break tables and furnaces (as in Craftax-Classic).
fn arrows(world: &mut World, events: &mut Vec<Event>) {
    let mut i = 0;
    while i < world.arrows.len() {
        let arrow = world.arrows[i];
        let (x, y) = (arrow.x + arrow.dx, arrow.y + arrow.dy);
        let keep = if let Some(agent) = world.agent_at(x, y) {
            hurt(world, agent, arrow.damage, Harm::Arrow, events);
            false
        } else if let Some(tile) = world.tile(x, y) {
            match world.blocks[tile] {
                Block::Table | Block::Furnace => {
                    world.blocks[tile] = Block::Path;
                    false
                }
                block => (!block.is_solid() || block == Block::Water) && world.mob_at[tile] == 0,
            }
        } else {
            false
        };
        if keep && !(arrow.dx == 0 && arrow.dy == 0) {
            world.arrows[i].x = x;
            world.arrows[i].y = y;
            i += 1;
        } else {
            world.arrows.swap_remove(i);
        }
    }
}

/// Craftax-Classic's spawning, once per living agent: cows on grass 4–13 tiles away
/// (10%), zombies on grass or paths 10–13 away (2%, up to 12% at night), skeletons on
/// paths 10–13 away (5%). Classic's caps (3 cows, 3 zombies, 2 skeletons) hold within
/// reach of each agent, so a team standing together meets a single player's density. No
/// mob spawns closer to any agent than the minimum.
pub(crate) fn spawn(world: &mut World, config: &Config) {
    let darkness = 1.0 - f64::from(world.light);
    for agent in 0..world.agents.len() {
        if !world.agents[agent].is_alive() {
            continue;
        }
        let rules = [
            (MobKind::Cow, 0.1, 3),
            (MobKind::Zombie, 0.02 + 0.1 * darkness * darkness, 9),
            (MobKind::Skeleton, 0.05, 9),
        ];
        for (kind, chance, min_distance) in rules {
            if world.rng.random::<f64>() >= chance || crowded(world, agent, kind, config.agents) {
                continue;
            }
            if let Some((x, y)) = spawn_tile(world, agent, kind, min_distance) {
                let slot = world.spawned[kind as usize] as usize % MOB_LABELS;
                let tag = world.mob_labels[kind as usize][slot];
                world.spawned[kind as usize] += 1;
                world.add_mob(Mob {
                    kind,
                    x,
                    y,
                    health: spawn_health(kind, tag.coordinated, config),
                    cooldown: 0,
                    tag,
                });
            }
        }
    }
}

/// Whether `agent` already has Classic's cap of `kind` within reach, or the team its
/// total.
fn crowded(world: &World, agent: usize, kind: MobKind, agents: usize) -> bool {
    let (ax, ay) = (world.agents[agent].x, world.agents[agent].y);
    let mut total = 0;
    let mut near = 0;
    for m in world.mobs.iter().filter(|m| m.kind == kind) {
        total += 1;
        if (m.x - ax).abs() + (m.y - ay).abs() < DESPAWN_DISTANCE {
            near += 1;
        }
    }
    near >= cap(kind, 1) || total >= cap(kind, agents)
}

/// A free tile of the right terrain in the spawn band around `agent`, by rejection
/// sampling (uniform over the valid tiles of the band when it succeeds).
fn spawn_tile(world: &mut World, agent: usize, kind: MobKind, min: i32) -> Option<(i32, i32)> {
    let (ax, ay) = (world.agents[agent].x, world.agents[agent].y);
    let reach = DESPAWN_DISTANCE - 1;
    for _ in 0..16 {
        let dx = world.rng.random_range(-reach..=reach);
        let dy = world.rng.random_range(-reach..=reach);
        let d = dx.abs() + dy.abs();
        if d <= min || d >= DESPAWN_DISTANCE {
            continue;
        }
        let (x, y) = (ax + dx, ay + dy);
        let terrain_ok = match world.block(x, y) {
            Block::Grass => kind != MobKind::Skeleton,
            Block::Path => kind != MobKind::Cow,
            _ => false,
        };
        let clear_of_agents = world
            .agents
            .iter()
            .filter(|a| a.is_present())
            .all(|a| (a.x - x).abs() + (a.y - y).abs() > min);
        if terrain_ok && clear_of_agents && world.is_free(x, y) {
            return Some((x, y));
        }
    }
    None
}
