//! The text observation, in ALEM's style (App. H.5, H.7): position and role, what the
//! agent sees with relative and absolute coordinates, facing and Do target, a
//! Coordination section stating every nearby requirement and which side of the target
//! the agent is on, teammates, status, inventory and available actions.
//!
//! The text is a sequence of sections separated by blank lines; each section starts
//! with a `Heading:` line followed by `- ` items. It ends with the `Available actions:`
//! section and a newline, so an operator can append its own sections (teammates'
//! messages, its scratchpad) after it.

use super::actions::ActionSet;
use super::agent_id;
use super::metrics::{achievement_tally, reachable};
use super::observation::{VIEW_H, VIEW_W};
use super::scoring::Scoring;
use super::settings::Config;
use super::state::{AgentState, CoordKind, Life, VITAL_MAX, World};
use super::types::{Achievement, Block, Item, Role, Structure};
use std::fmt::Write as _;

/// The achievements the configured scoring counts that this configuration lets an agent
/// earn, one per line in title case as ALEM's prompt lists them (`Collect Wood`): ALEM's
/// names in ALEM's order on its scales (`Coord 3 Agents Soft` for this world's
/// whole-team achievement; what this world lacks left out), this world's on the compact
/// one.
pub(crate) fn achievement_list(config: &Config) -> String {
    let names: Vec<&str> = match config.scoring {
        Scoring::Compact => Achievement::ALL
            .iter()
            .filter(|a| reachable(config, **a))
            .map(|a| a.name())
            .collect(),
        Scoring::Alem | Scoring::AlemLite => config
            .scoring
            .alem_list()
            .filter(|e| e.world.is_some_and(|a| reachable(config, a)))
            .map(|e| e.name)
            .collect(),
    };
    names
        .iter()
        .map(|name| title_case(name))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `coord_2_agents_soft` → `Coord 2 Agents Soft`.
fn title_case(name: &str) -> String {
    name.split('_')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Most coordination targets listed (nearest first).
const MAX_COORDINATION_LINES: usize = 8;

/// "3 steps north", "1 step south and 2 steps west", "here".
pub(crate) fn relative(dx: i32, dy: i32) -> String {
    let part = |n: i32, pos: &str, neg: &str| -> Option<String> {
        (n != 0).then(|| {
            let steps = if n.abs() == 1 { "step" } else { "steps" };
            format!("{} {steps} {}", n.abs(), if n > 0 { pos } else { neg })
        })
    };
    match (part(dy, "south", "north"), part(dx, "east", "west")) {
        (Some(v), Some(h)) => format!("{v} and {h}"),
        (Some(one), None) | (None, Some(one)) => one,
        (None, None) => "here".into(),
    }
}

/// Which side of a target at (tx, ty) an agent at (ax, ay) is on: "south", "north-east".
pub(crate) fn side(ax: i32, ay: i32, tx: i32, ty: i32) -> &'static str {
    match ((ay - ty).signum(), (ax - tx).signum()) {
        (-1, -1) => "north-west",
        (-1, 0) => "north",
        (-1, 1) => "north-east",
        (0, -1) => "west",
        (0, 1) => "east",
        (1, -1) => "south-west",
        (1, 0) => "south",
        (1, 1) => "south-east",
        _ => "same",
    }
}

fn light_word(light: f32) -> &'static str {
    match light {
        l if l > 0.7 => "bright",
        l if l > 0.4 => "dim",
        l if l > 0.15 => "dusk",
        _ => "dark",
    }
}

fn cost_text(cost: &[(Item, u8)]) -> String {
    cost.iter()
        .map(|(item, n)| format!("{n} {}", item.name()))
        .collect::<Vec<_>>()
        .join(" + ")
}

fn role_text(role: Role) -> &'static str {
    match role {
        Role::Forager => {
            "drinking water, collecting saplings and eating cows; you also hold up to 11 food and 11 drink"
        }
        Role::Miner => "crafting pickaxes and placing stone",
        Role::Warrior => {
            "crafting stone, iron and diamond swords; you also deal double melee damage"
        }
    }
}

/// The text observation of `agent`.
pub(crate) fn text(
    world: &World,
    config: &Config,
    set: &ActionSet,
    agent: usize,
    legal: &[bool],
) -> String {
    let mut out = String::with_capacity(2048);
    let me = &world.agents[agent];
    let _ = writeln!(out, "Step: {}/{}", world.step, config.max_steps);
    let _ = writeln!(out, "Position: (x={}, y={})", me.x, me.y);
    if config.specialisation {
        let success = (config.difficulty.non_specialist_success * 100.0).round();
        let _ = writeln!(
            out,
            "Role: {} (Agent {agent} of {}). You always succeed at {}; other roles succeed at those with probability {success}%.",
            me.role.name(),
            config.agents,
            role_text(me.role),
        );
    } else {
        let _ = writeln!(
            out,
            "Role: {} (Agent {agent} of {}). No specialisation: every agent always succeeds at every action.",
            me.role.name(),
            config.agents,
        );
    }
    let _ = writeln!(
        out,
        "Light: {} ({:.2})",
        light_word(world.light),
        world.light
    );
    let (held, listed) = achievement_tally(config, me);
    let unlocked: Vec<&str> = Achievement::ALL
        .iter()
        .filter(|a| me.has(**a))
        .map(|a| a.name())
        .collect();
    let _ = writeln!(
        out,
        "Achievements: {held}/{listed}{}",
        if unlocked.is_empty() {
            String::new()
        } else {
            format!(" ({})", unlocked.join(", "))
        }
    );
    match me.life {
        Life::Downed { since } => {
            let left = (since + super::state::BLEED_OUT_STEPS).saturating_sub(world.step);
            let _ = writeln!(
                out,
                "You are DOWN: a teammate must face you and use Do within {left} steps to revive you."
            );
        }
        Life::Dead => {
            let _ = writeln!(out, "You are dead.");
        }
        Life::Alive if me.sleeping => {
            let _ = writeln!(out, "You are asleep until your energy is full.");
        }
        Life::Alive => {}
    }
    if let Some(note) = me.note {
        let _ = writeln!(out, "Last step: {}.", note.text());
    }

    see(&mut out, world, agent);
    let (tx, ty) = me.target();
    let _ = writeln!(out, "\nFacing: {}.", me.facing.name());
    let _ = writeln!(
        out,
        "Do target: {} (x={tx}, y={ty}).",
        describe_tile(world, tx, ty)
    );
    coordination(&mut out, world, config, agent);
    teammates(&mut out, world, agent);
    status(&mut out, world, agent);

    out.push_str("\nAvailable actions:\n");
    for (i, ok) in legal.iter().enumerate() {
        if *ok {
            let _ = writeln!(out, "- {}", set.label(i));
        }
    }
    out
}

fn describe_tile(world: &World, x: i32, y: i32) -> String {
    if let Some(a) = world.agent_at(x, y) {
        let other = &world.agents[a];
        let state = if other.is_alive() {
            "Do hits them"
        } else {
            "down, Do revives them"
        };
        return format!("Agent {a} ({}, {state})", other.role.name());
    }
    if let Some(m) = world.mob_at(x, y) {
        let mob = &world.mobs[m];
        return format!(
            "{} (health {})",
            mob.kind.name(mob.tag.coordinated),
            mob.health
        );
    }
    world.block(x, y).name().to_owned()
}

fn in_view(world: &World, agent: usize) -> impl Iterator<Item = (i32, i32)> {
    let me = &world.agents[agent];
    let (ox, oy) = (me.x - VIEW_W / 2, me.y - VIEW_H / 2);
    (0..VIEW_H).flat_map(move |vy| (0..VIEW_W).map(move |vx| (ox + vx, oy + vy)))
}

fn see(out: &mut String, world: &World, agent: usize) {
    let me = &world.agents[agent];
    let distance = |x: i32, y: i32| (x - me.x).abs() + (y - me.y).abs();
    // Nearest tile of every notable block, then every mob and arrow in view.
    let mut nearest: [Option<(i32, i32, i32)>; Block::ALL.len()] = [None; Block::ALL.len()];
    let mut things: Vec<(i32, String, i32, i32)> = Vec::new();
    for (x, y) in in_view(world, agent) {
        let block = world.block(x, y);
        let notable = !matches!(
            block,
            Block::Grass | Block::Sand | Block::Path | Block::OutOfBounds
        );
        let d = distance(x, y);
        if notable && nearest[block as usize].is_none_or(|(_, _, best)| d < best) {
            nearest[block as usize] = Some((x, y, d));
        }
        if let Some(m) = world.mob_at(x, y) {
            let mob = &world.mobs[m];
            things.push((d, mob.kind.name(mob.tag.coordinated).to_owned(), x, y));
        }
    }
    for arrow in &world.arrows {
        if (arrow.x - me.x).abs() <= VIEW_W / 2 && (arrow.y - me.y).abs() <= VIEW_H / 2 {
            things.push((distance(arrow.x, arrow.y), "arrow".into(), arrow.x, arrow.y));
        }
    }
    for (block, found) in Block::ALL.iter().zip(nearest) {
        if let Some((x, y, d)) = found {
            things.push((d, block.name().to_owned(), x, y));
        }
    }
    things.sort();
    out.push_str("\nYou see:\n");
    if things.is_empty() {
        out.push_str("- only open ground\n");
    }
    for (_, name, x, y) in things {
        let _ = writeln!(
            out,
            "- {name} {} (x={x}, y={y})",
            relative(x - me.x, y - me.y)
        );
    }
}

fn requirement(world: &World, config: &Config, x: i32, y: i32) -> Option<String> {
    let tile = world.tile(x, y)?;
    let solo = (100.0 * (1.0 - config.difficulty.soft_solo_fail_prob)).round();
    let block = world.blocks[tile];
    if let Some(m) = world.mob_at(x, y) {
        let tag = world.mobs[m].tag;
        if !tag.coordinated {
            return None;
        }
        return Some(if tag.soft {
            format!(
                "solo hits land with probability {solo}%; {} agents hitting it with Do in the same step always land and earn a bonus",
                tag.required
            )
        } else {
            format!(
                "requires {} agents to hit it with Do in the same step (solo hits do nothing)",
                tag.required
            )
        });
    }
    if block == Block::Forge {
        return Some(format!(
            "epic forge: diamond tools need {} agents next to it choosing the same make action in the same step (materials pooled: pickaxe {}, sword {})",
            config.diamond_crafters(),
            cost_text(&[(Item::Wood, 1), (Item::Diamond, 3)]),
            cost_text(&[(Item::Wood, 1), (Item::Diamond, 2)]),
        ));
    }
    let tag = world.tags[tile];
    let (action, what) = if block == Block::Site {
        (
            "use the same build action",
            format!(
                " (shelter: {}; forge: {})",
                cost_text(Structure::Shelter.cost()),
                cost_text(Structure::Forge.cost())
            ),
        )
    } else {
        ("select Do", String::new())
    };
    Some(match tag.kind {
        CoordKind::None => return None,
        CoordKind::Sync if tag.soft => format!(
            "works solo with probability {solo}%, and grants a bonus when {} agents {action} simultaneously{what}",
            tag.required
        ),
        CoordKind::Sync => format!(
            "requires {} agents to {action} simultaneously (fails alone){what}",
            tag.required
        ),
        CoordKind::Handover => match world.pending_at(tile) {
            Some(p) => format!(
                "handover started by Agent {}{}: a different agent must {} within {} steps",
                p.initiator,
                p.structure
                    .map(|s| format!(" (building a {})", s.name()))
                    .unwrap_or_default(),
                if block == Block::Site {
                    format!(
                        "use build_{}",
                        p.structure.map_or("shelter", Structure::name)
                    )
                } else {
                    "select Do".to_owned()
                },
                p.remaining(world.step)
            ),
            None if block == Block::Site => format!(
                "handover: one agent starts a build (paying the materials), a different agent must finish the same build within {} steps, otherwise the site resets and the materials are refunded{what}",
                tag.window
            ),
            None => format!(
                "handover: one agent starts with Do, a different agent must finish with Do within {} steps, otherwise the block resets",
                tag.window
            ),
        },
    })
}

fn coordination(out: &mut String, world: &World, config: &Config, agent: usize) {
    let me = &world.agents[agent];
    let mut lines: Vec<(i32, String)> = Vec::new();
    for (x, y) in in_view(world, agent) {
        let Some(rule) = requirement(world, config, x, y) else {
            continue;
        };
        let d = (x - me.x).abs() + (y - me.y).abs();
        let position = if d == 1 {
            let facing = if me.target() == (x, y) {
                "facing target".to_owned()
            } else {
                format!("facing {}", me.facing.name())
            };
            format!("adjacent ({facing})")
        } else {
            format!("{d} steps away")
        };
        lines.push((
            d,
            format!(
                "- {} {} (x={x}, y={y}): {rule}. You are on the {} side, {position}.",
                describe_tile(world, x, y),
                relative(x - me.x, y - me.y),
                side(me.x, me.y, x, y),
            ),
        ));
    }
    lines.sort();
    out.push_str("\nCoordination:\n");
    if lines.is_empty() {
        out.push_str("- no coordination target in view\n");
    }
    let hidden = lines.len().saturating_sub(MAX_COORDINATION_LINES);
    for (_, line) in lines.into_iter().take(MAX_COORDINATION_LINES) {
        out.push_str(&line);
        out.push('\n');
    }
    if hidden > 0 {
        let _ = writeln!(out, "- and {hidden} more further away");
    }
}

fn teammates(out: &mut String, world: &World, agent: usize) {
    let me = &world.agents[agent];
    // A lone agent (ALEM's single-agent calibration) has no section to read.
    if world.agents.len() == 1 {
        return;
    }
    out.push_str("\nTeammates:\n");
    for (i, o) in world.agents.iter().enumerate() {
        if i == agent {
            continue;
        }
        let where_ = format!(
            "{} (x={}, y={})",
            relative(o.x - me.x, o.y - me.y),
            o.x,
            o.y
        );
        let _ = match o.life {
            Life::Dead => writeln!(out, "- Agent {i} ({}): dead", o.role.name()),
            Life::Downed { since } => writeln!(
                out,
                "- Agent {i} ({}): DOWN {where_}; face them and use Do within {} steps to revive",
                o.role.name(),
                (since + super::state::BLEED_OUT_STEPS).saturating_sub(world.step)
            ),
            Life::Alive => {
                let mut line = format!(
                    "- Agent {i} ({}): {where_}, health={}",
                    o.role.name(),
                    o.health
                );
                if o.sleeping {
                    line.push_str(", asleep");
                }
                if let Some(r) = o.request.filter(|r| r.until >= world.step) {
                    let _ = write!(
                        line,
                        ", requests {} ({} steps left; give_to_agent_{i} sends one)",
                        r.resource.name(),
                        r.until + 1 - world.step
                    );
                }
                if let Some(s) = o.signal {
                    let _ = write!(
                        line,
                        ", last signal {} ({} steps ago)",
                        s.value,
                        world.step - s.step
                    );
                }
                writeln!(out, "{line}")
            }
        };
    }
}

/// What `agent` sees of each teammate inside its 9 × 7 view, one line each (for the
/// observation's `info.visible_teammates`): id and role, where it is, which way it faces
/// and what it would act on, whether it is asleep or down, its vitals and inventory.
pub(crate) fn visible_teammates(world: &World, agent: usize) -> Vec<String> {
    let me = &world.agents[agent];
    let visible =
        |o: &&AgentState| (o.x - me.x).abs() <= VIEW_W / 2 && (o.y - me.y).abs() <= VIEW_H / 2;
    world
        .agents
        .iter()
        .enumerate()
        .filter(|(i, o)| *i != agent && o.is_present() && visible(o))
        .map(|(i, o)| {
            let mut line = format!(
                "{} ({}): {} (x={}, y={})",
                agent_id(i),
                o.role.name(),
                relative(o.x - me.x, o.y - me.y),
                o.x,
                o.y
            );
            if let Life::Downed { since } = o.life {
                let left = (since + super::state::BLEED_OUT_STEPS).saturating_sub(world.step);
                let _ = write!(
                    line,
                    ", DOWN: face them and use Do within {left} steps to revive them"
                );
                return line;
            }
            let (tx, ty) = o.target();
            let faced = if (tx, ty) == (me.x, me.y) {
                "you".to_owned()
            } else {
                describe_tile(world, tx, ty)
            };
            let _ = write!(
                line,
                ", facing {} towards {faced} (x={tx}, y={ty})",
                o.facing.name()
            );
            if o.sleeping {
                line.push_str(", asleep");
            }
            let (cap, most) = (o.food_capacity(), VITAL_MAX);
            let _ = write!(
                line,
                "; health {}/{most}, food {}/{cap}, drink {}/{cap}, energy {}/{most}",
                o.health, o.food, o.drink, o.energy
            );
            let held: Vec<String> = Item::ALL
                .iter()
                .filter(|item| o.count(**item) > 0)
                .map(|item| format!("{} {}", item.name(), o.count(*item)))
                .collect();
            let _ = write!(
                line,
                "; holds {}",
                if held.is_empty() {
                    "nothing".to_owned()
                } else {
                    held.join(", ")
                }
            );
            line
        })
        .collect()
}

fn status(out: &mut String, world: &World, agent: usize) {
    let me = &world.agents[agent];
    out.push_str("\nYour status:\n");
    for (name, value, most) in [
        ("health", me.health, VITAL_MAX),
        ("food", me.food, me.food_capacity()),
        ("drink", me.drink, me.food_capacity()),
        ("energy", me.energy, VITAL_MAX),
    ] {
        let _ = writeln!(out, "- {name}: {value}/{most}");
    }
    if let Some(r) = me.request.filter(|r| r.until >= world.step) {
        let _ = writeln!(
            out,
            "- your request: {} ({} steps left)",
            r.resource.name(),
            r.until + 1 - world.step
        );
    }
    let held: Vec<String> = Item::ALL
        .iter()
        .filter(|i| me.count(**i) > 0)
        .map(|i| format!("- {}: {}", i.name(), me.count(*i)))
        .collect();
    if held.is_empty() {
        out.push_str("\nYou have nothing in your inventory.\n");
    } else {
        out.push_str("\nInventory:\n");
        for line in held {
            out.push_str(&line);
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_and_side_words() {
        assert_eq!(relative(0, -3), "3 steps north");
        assert_eq!(relative(-2, 1), "1 step south and 2 steps west");
        assert_eq!(relative(0, 0), "here");
        assert_eq!(side(25, 24, 25, 23), "south");
        assert_eq!(side(26, 20, 24, 22), "north-east");
    }
}
