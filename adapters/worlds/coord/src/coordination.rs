//! The coordination mechanics (ALEM §2.1–2.2, App. G.2): synchronous targets (hard:
//! nothing happens with too few agents; soft: a solo attempt succeeds with probability
//! 1 − α, a joint one earns the coordination achievements), handovers (a different agent
//! must finish within the target's window, otherwise the target resets and building
//! materials go back to the initiator), construction sites and coordinated mobs.

use super::actions::Act;
use super::effects::{
    Joint, Members, event, joint_success, members, mine, pay_pooled, pooled_has, role_check,
};
use super::settings::Config;
use super::state::{CoordKind, Note, Pending, Tag, World};
use super::types::{Achievement, Block, MobKind, Role, Structure};
use mosaic_core::Event;
use rand::Rng as _;

fn note_all(world: &mut World, group: Members, note: Note) {
    for i in members(group) {
        world.agents[i].note = Some(note);
    }
}

/// Do by `group` on a resource block with a coordination tag.
pub(crate) fn mine_tagged(
    world: &mut World,
    config: &Config,
    tile: usize,
    group: Members,
    events: &mut Vec<Event>,
) {
    let block = world.blocks[tile];
    let tag = world.tags[tile];
    let mut able: Members = 0;
    for i in members(group) {
        if world.agents[i].can_mine(block) {
            able |= 1 << i;
        } else {
            world.agents[i].note = Some(Note::NeedsBetterPickaxe);
        }
    }
    if able == 0 {
        return;
    }
    let at = world.coords(tile);
    match tag.kind {
        CoordKind::Sync => {
            let required = usize::from(tag.required);
            if able.count_ones() as usize >= required {
                if let Some(a) = Achievement::coord_mine(block, tag.soft) {
                    for i in members(able) {
                        world.agents[i].unlock(a);
                    }
                }
                mine(world, tile, able);
                let joint = Joint {
                    target: block.name(),
                    at,
                    required,
                    soft: tag.soft,
                };
                joint_success(world, config, able, joint, events);
            } else if tag.soft {
                let landed = world.rng.random::<f64>() >= config.difficulty.soft_solo_fail_prob;
                if landed {
                    mine(world, tile, able & able.wrapping_neg());
                }
                count_solo_attempt(world, able, landed);
            } else {
                count_too_few(world, able);
            }
        }
        CoordKind::Handover => match world.pending.iter().position(|p| p.tile == tile) {
            Some(index) => {
                let pending = world.pending[index];
                let Some(finisher) = members(able).find(|i| *i != pending.initiator) else {
                    note_all(world, able, Note::HandoverNeedsAnotherAgent);
                    return;
                };
                world.pending.remove(index);
                let credited = present(world, (1 << finisher) | (1 << pending.initiator));
                for i in members(credited) {
                    world.agents[i].unlock(Achievement::CoordMineHandover);
                    world.agents[i].unlock(Achievement::HandoverComplete);
                }
                mine(world, tile, credited);
                complete_handover(world, &pending, finisher, block.name(), events);
            }
            None => start_handover(world, tile, members(able).next(), None, events),
        },
        CoordKind::None => {}
    }
}

fn present(world: &World, group: Members) -> Members {
    members(group)
        .filter(|i| world.agents[*i].is_present())
        .fold(0, |m, i| m | (1 << i))
}

fn start_handover(
    world: &mut World,
    tile: usize,
    initiator: Option<usize>,
    structure: Option<Structure>,
    events: &mut Vec<Event>,
) {
    let Some(initiator) = initiator else { return };
    let window = u32::from(world.tags[tile].window);
    world.pending.push(Pending {
        tile,
        initiator,
        started: world.step,
        window,
        structure,
    });
    world.counters.handovers_started += 1;
    let (x, y) = world.coords(tile);
    event(
        events,
        "handover_start",
        Some(initiator),
        serde_json::json!({ "x": x, "y": y, "window": window, "structure": structure.map(Structure::name) }),
    );
}

fn complete_handover(
    world: &mut World,
    pending: &Pending,
    finisher: usize,
    target: &str,
    events: &mut Vec<Event>,
) {
    world.counters.handovers_completed += 1;
    let (x, y) = world.coords(pending.tile);
    event(
        events,
        "handover_complete",
        Some(finisher),
        serde_json::json!({
            "initiator": pending.initiator,
            "target": target,
            "x": x,
            "y": y,
            "steps": world.step - pending.started,
        }),
    );
}

/// Ends handovers whose window has passed: the target resets and building materials go
/// back to the initiator.
pub(crate) fn expire(world: &mut World, events: &mut Vec<Event>) {
    let now = world.step;
    let mut i = 0;
    while i < world.pending.len() {
        let p = world.pending[i];
        if now < p.started + p.window {
            i += 1;
            continue;
        }
        world.pending.remove(i);
        if let Some(structure) = p.structure
            && world.agents[p.initiator].is_present()
        {
            for (item, n) in structure.cost() {
                world.agents[p.initiator].add(*item, *n);
            }
        }
        world.counters.handovers_expired += 1;
        let (x, y) = world.coords(p.tile);
        event(
            events,
            "handover_expired",
            Some(p.initiator),
            serde_json::json!({ "x": x, "y": y, "refunded": p.structure.is_some() }),
        );
    }
}

/// Whether `agent` faces a construction site.
pub(crate) fn faces_site(world: &World, agent: usize) -> bool {
    let (x, y) = world.agents[agent].target();
    world.block(x, y) == Block::Site
}

/// Resolves the Build actions of the step, grouped by site and structure.
pub(crate) fn build(world: &mut World, config: &Config, acts: &[Act], events: &mut Vec<Event>) {
    let mut groups: [(usize, Structure, Members); 4] = [(0, Structure::Shelter, 0); 4];
    let mut count = 0;
    for (i, act) in acts.iter().enumerate() {
        let Act::Build(structure) = *act else {
            continue;
        };
        if !faces_site(world, i) {
            continue;
        }
        let (x, y) = world.agents[i].target();
        let Some(tile) = world.tile(x, y) else {
            continue;
        };
        match groups[..count]
            .iter_mut()
            .find(|(t, s, _)| *t == tile && *s == structure)
        {
            Some((_, _, m)) => *m |= 1 << i,
            None => {
                groups[count] = (tile, structure, 1 << i);
                count += 1;
            }
        }
    }
    for &(tile, structure, group) in &groups[..count] {
        if world.blocks[tile] == Block::Site {
            build_on(world, config, tile, structure, group, events);
        }
    }
}

fn build_on(
    world: &mut World,
    config: &Config,
    tile: usize,
    structure: Structure,
    group: Members,
    events: &mut Vec<Event>,
) {
    let tag: Tag = world.tags[tile];
    let cost = structure.cost();
    match tag.kind {
        CoordKind::Sync | CoordKind::None => {
            if !pooled_has(world, group, cost) {
                note_all(world, group, Note::BuildersLackMaterials);
                return;
            }
            let required = usize::from(tag.required);
            let joint = tag.kind == CoordKind::Sync && group.count_ones() as usize >= required;
            let solo_ok = tag.kind == CoordKind::None
                || (tag.soft && world.rng.random::<f64>() >= config.difficulty.soft_solo_fail_prob);
            if joint || solo_ok {
                pay_pooled(world, group, cost);
                finish_structure(world, tile, structure, group, joint, events);
                if joint {
                    let at = world.coords(tile);
                    let joint = Joint {
                        target: structure.name(),
                        at,
                        required,
                        soft: tag.soft,
                    };
                    joint_success(world, config, group, joint, events);
                } else if tag.kind == CoordKind::Sync {
                    world.counters.soft_solo_successes += 1;
                }
            } else {
                world.counters.sync_failures += 1;
                note_all(
                    world,
                    group,
                    if tag.soft {
                        Note::SoloFailed
                    } else {
                        Note::TooFewAgents
                    },
                );
            }
        }
        CoordKind::Handover => match world.pending.iter().position(|p| p.tile == tile) {
            Some(index) => {
                let pending = world.pending[index];
                let finisher = members(group)
                    .find(|i| *i != pending.initiator && pending.structure == Some(structure));
                let Some(finisher) = finisher else {
                    note_all(world, group, Note::HandoverNeedsSameStructure);
                    return;
                };
                world.pending.remove(index);
                let credited = present(world, (1 << finisher) | (1 << pending.initiator));
                for i in members(credited) {
                    world.agents[i].unlock(Achievement::HandoverComplete);
                }
                finish_structure(world, tile, structure, credited, true, events);
                complete_handover(world, &pending, finisher, structure.name(), events);
            }
            None => {
                let initiator = members(group)
                    .find(|i| cost.iter().all(|(it, n)| world.agents[*i].count(*it) >= *n));
                match initiator {
                    Some(i) => {
                        for (item, n) in cost {
                            world.agents[i].take(*item, *n);
                        }
                        start_handover(world, tile, Some(i), Some(structure), events);
                    }
                    None => note_all(world, group, Note::BuildersLackMaterials),
                }
            }
        },
    }
}

fn finish_structure(
    world: &mut World,
    tile: usize,
    structure: Structure,
    credited: Members,
    coordinated: bool,
    events: &mut Vec<Event>,
) {
    world.blocks[tile] = structure.block();
    world.tags[tile] = Tag::NONE;
    world.counters.structures_built += 1;
    if structure == Structure::Shelter {
        world.shelters += 1;
    }
    if coordinated {
        let achievement = match structure {
            Structure::Shelter => Achievement::CoordBuildShelter,
            Structure::Forge => Achievement::CoordBuildForge,
        };
        for i in members(credited) {
            world.agents[i].unlock(achievement);
        }
    }
    let (x, y) = world.coords(tile);
    event(
        events,
        "structure_built",
        members(credited).next(),
        serde_json::json!({ "structure": structure.name(), "x": x, "y": y, "coordinated": coordinated }),
    );
}

/// Do by `group` on mob `index`. Ordinary mobs take each hit in turn; coordinated mobs
/// take a joint hit (the sum of the group's damage) when enough agents strike together.
pub(crate) fn hit_mob(
    world: &mut World,
    config: &Config,
    index: usize,
    group: Members,
    events: &mut Vec<Event>,
) {
    let mob = world.mobs[index];
    let mut able: Members = 0;
    for i in members(group) {
        // Eating passive mobs is the forager's specialisation.
        if mob.kind != MobKind::Cow || role_check(world, config, i, Role::Forager) {
            able |= 1 << i;
        }
    }
    if able == 0 {
        return;
    }
    if !mob.tag.coordinated {
        for i in members(able) {
            world.mobs[index].health -= world.agents[i].damage();
            if world.mobs[index].health <= 0 {
                kill_mob(world, index, 1 << i, false);
                return;
            }
        }
        return;
    }
    let required = usize::from(mob.tag.required);
    if able.count_ones() as usize >= required {
        let damage: i32 = members(able).map(|i| world.agents[i].damage()).sum();
        world.mobs[index].health -= damage;
        let joint = Joint {
            target: mob.kind.name(true),
            at: (mob.x, mob.y),
            required,
            soft: mob.tag.soft,
        };
        joint_success(world, config, able, joint, events);
        if world.mobs[index].health <= 0 {
            kill_mob(world, index, able, true);
        }
    } else if mob.tag.soft {
        let mut landed = false;
        for i in members(able) {
            if world.rng.random::<f64>() < config.difficulty.soft_solo_fail_prob {
                continue;
            }
            landed = true;
            world.mobs[index].health -= world.agents[i].damage();
            if world.mobs[index].health <= 0 {
                kill_mob(world, index, 1 << i, false);
                break;
            }
        }
        count_solo_attempt(world, able, landed);
    } else {
        count_too_few(world, able);
    }
}

/// Counts an attempt of `able` alone at a soft requirement; tells them when it failed.
fn count_solo_attempt(world: &mut World, able: Members, landed: bool) {
    if landed {
        world.counters.soft_solo_successes += 1;
    } else {
        world.counters.sync_failures += 1;
        note_all(world, able, Note::SoloFailed);
    }
}

/// Counts a synchronous requirement `able` were too few for, and tells them.
fn count_too_few(world: &mut World, able: Members) {
    world.counters.sync_failures += 1;
    note_all(world, able, Note::TooFewAgents);
}

fn kill_mob(world: &mut World, index: usize, credited: Members, coordinated: bool) {
    let mob = world.mobs[index];
    let (base, coord) = match mob.kind {
        MobKind::Zombie => (Achievement::DefeatZombie, Achievement::CoordEliteMeleeKill),
        MobKind::Skeleton => (
            Achievement::DefeatSkeleton,
            Achievement::CoordEliteRangedKill,
        ),
        MobKind::Cow => (Achievement::EatCow, Achievement::CoordLargePassiveKill),
    };
    for i in members(credited) {
        let a = &mut world.agents[i];
        a.unlock(base);
        if coordinated {
            a.unlock(coord);
        }
        if mob.kind == MobKind::Cow {
            a.eat(6);
            a.hunger = 0.0;
        }
    }
    world.remove_mob(index);
}
