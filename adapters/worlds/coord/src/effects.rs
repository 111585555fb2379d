//! Effects shared by the parts of a step (the rules, coordination, crafting and mobs):
//! agent sets, events, role checks, harm, mining, pooled materials and joint successes.
//! It builds on the world's data only (state, settings, types); the parts use it and it
//! uses none of them, so no part imports another.

use super::settings::Config;
use super::state::{AgentState, DeathCause, Life, Note, Tag, World};
use super::types::{Achievement, Block, Item, Role};
use mosaic_core::Event;
use rand::Rng as _;

/// Agents as a bit set (at most 4), iterated in index order.
pub(crate) type Members = u8;

/// The agents in `members`, in index order.
pub(crate) fn members(members: Members) -> impl Iterator<Item = usize> {
    (0..8).filter(move |i| members & (1 << i) != 0)
}

/// Records a notable event.
pub(crate) fn event(
    events: &mut Vec<Event>,
    kind: &str,
    agent: Option<usize>,
    detail: serde_json::Value,
) {
    events.push(Event {
        kind: kind.to_owned(),
        agent,
        detail: (!detail.is_null()).then_some(detail),
    });
}

/// A role-gated attempt by `agent`: specialists always pass, others with probability
/// 1 − α (one draw per attempt by a non-specialist); without specialisation everyone
/// passes.
pub(crate) fn role_check(world: &mut World, config: &Config, agent: usize, role: Role) -> bool {
    if world.agents[agent].role == role || !config.specialisation {
        return true;
    }
    world.counters.role_attempts += 1;
    let ok = world.rng.random::<f64>() < config.difficulty.non_specialist_success;
    if !ok {
        world.counters.role_failures += 1;
        world.agents[agent].note = Some(Note::RoleFailed);
    }
    ok
}

/// What hurt an agent; attacks wake a sleeping agent, hunger, thirst and exhaustion do
/// not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Harm {
    /// A zombie's blow.
    Zombie,
    /// A skeleton's arrow.
    Arrow,
    /// A teammate's Do.
    FriendlyFire,
    /// Missing food, drink or energy.
    Needs,
}

impl Harm {
    /// The cause of death this harm records when it puts `agent` down: missing needs
    /// count as starvation, dehydration or exhaustion, whichever vital is empty (in
    /// that order).
    pub(crate) fn cause(self, agent: &AgentState) -> DeathCause {
        match self {
            Harm::Zombie | Harm::Arrow => DeathCause::Mob,
            Harm::FriendlyFire => DeathCause::FriendlyFire,
            Harm::Needs if agent.food <= 0 => DeathCause::Starvation,
            Harm::Needs if agent.drink <= 0 => DeathCause::Dehydration,
            Harm::Needs => DeathCause::Exhaustion,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Harm::Zombie => "zombie",
            Harm::Arrow => "arrow",
            Harm::FriendlyFire => "friendly fire",
            Harm::Needs => "hunger, thirst or exhaustion",
        }
    }
}

/// Damages a living agent (attacks also wake it). At zero health it goes down.
pub(crate) fn hurt(
    world: &mut World,
    agent: usize,
    damage: i32,
    harm: Harm,
    events: &mut Vec<Event>,
) {
    let wakes = harm != Harm::Needs;
    let step = world.step;
    let a = &mut world.agents[agent];
    if !a.is_alive() {
        return;
    }
    a.health -= damage;
    if wakes && a.sleeping {
        a.sleeping = false;
        a.unlock(Achievement::WakeUp);
    }
    if a.health <= 0 {
        a.health = 0;
        a.life = Life::Downed { since: step };
        a.downed_by = Some(harm.cause(a));
        world.counters.downed += 1;
        event(
            events,
            "downed",
            Some(agent),
            serde_json::json!({ "cause": harm.name() }),
        );
    }
}

/// Gives every agent in `to` one unit of the resource of the block at `tile` and clears
/// the block (trees leave grass, everything else a path).
pub(crate) fn mine(world: &mut World, tile: usize, to: Members) {
    let block = world.blocks[tile];
    let Some(item) = block.resource() else { return };
    for i in members(to) {
        world.agents[i].add(item, 1);
        if let Some(a) = Achievement::collect(item) {
            world.agents[i].unlock(a);
        }
    }
    world.blocks[tile] = if block == Block::Tree {
        Block::Grass
    } else {
        Block::Path
    };
    world.tags[tile] = Tag::NONE;
}

/// A synchronous target that was acted on jointly.
pub(crate) struct Joint<'a> {
    /// What it was, e.g. `iron`.
    pub target: &'a str,
    /// Where.
    pub at: (i32, i32),
    /// Agents it needed.
    pub required: usize,
    /// Soft (assurance game) or hard.
    pub soft: bool,
}

/// The team-size achievement of a joint success.
pub(crate) fn sync_achievement(required: usize, agents: usize, soft: bool) -> Achievement {
    let team = agents >= 3 && required >= agents;
    match (team, soft) {
        (false, true) => Achievement::Coord2AgentsSoft,
        (false, false) => Achievement::Coord2AgentsHard,
        (true, true) => Achievement::CoordTeamSoft,
        (true, false) => Achievement::CoordTeamHard,
    }
}

/// Credits a synchronous success to every agent of `group`.
pub(crate) fn joint_success(
    world: &mut World,
    config: &Config,
    group: Members,
    joint: Joint<'_>,
    events: &mut Vec<Event>,
) {
    let achievement = sync_achievement(joint.required, config.agents, joint.soft);
    for i in members(group) {
        world.agents[i].unlock(achievement);
    }
    world.counters.sync_successes += 1;
    event(
        events,
        "sync_success",
        members(group).next(),
        serde_json::json!({
            "target": joint.target,
            "x": joint.at.0,
            "y": joint.at.1,
            "required": joint.required,
            "soft": joint.soft,
            "agents": members(group).collect::<Vec<_>>(),
        }),
    );
}

/// Whether the agents of `group` hold `cost` between them.
pub(crate) fn pooled_has(world: &World, group: Members, cost: &[(Item, u8)]) -> bool {
    cost.iter().all(|(item, n)| {
        members(group)
            .map(|i| u32::from(world.agents[i].count(*item)))
            .sum::<u32>()
            >= u32::from(*n)
    })
}

/// Takes `cost` from the agents of `group`, lowest index first.
pub(crate) fn pay_pooled(world: &mut World, group: Members, cost: &[(Item, u8)]) {
    for (item, n) in cost {
        let mut left = *n;
        for i in members(group) {
            left -= world.agents[i].take(*item, left);
        }
    }
}
