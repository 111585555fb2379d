//! The text observation in COMPASS's style (App. D): the own unit, "Can move North: yes"
//! lines, the enemies and allies in sight with type, health, distance and direction, the
//! team's shared entity memory with each entry's age and source, and the actions
//! available now.

use crate::battle::{Battle, Dir, TEAMS, actions};
use crate::units::Weapon;
use std::fmt::Write as _;

/// The compass direction of the offset (dx, dy), y pointing north.
pub fn direction(dx: f32, dy: f32) -> &'static str {
    const NAMES: [&str; 8] = [
        "East",
        "Northeast",
        "North",
        "Northwest",
        "West",
        "Southwest",
        "South",
        "Southeast",
    ];
    if dx == 0.0 && dy == 0.0 {
        return "here";
    }
    let sector = (dy.atan2(dx) / std::f32::consts::FRAC_PI_4).round() as i32;
    NAMES[sector.rem_euclid(8) as usize]
}

fn percent(value: f32, max: f32) -> f32 {
    if max > 0.0 { 100.0 * value / max } else { 0.0 }
}

/// The label of action `index` in the spec.
pub(crate) fn action_label(index: usize) -> String {
    match index as u32 {
        actions::NOOP => "no_op".into(),
        actions::STOP => "stop".into(),
        a @ actions::NORTH..=actions::WEST => {
            format!(
                "move_{}",
                Dir::ALL[(a - actions::NORTH) as usize]
                    .name()
                    .to_lowercase()
            )
        }
        a => format!("target_{}", a - actions::TARGET),
    }
}

/// The text observation of unit `agent`.
pub(crate) fn describe(battle: &Battle, agent: usize) -> String {
    let config = &battle.config;
    let me = &battle.units[agent];
    let team = me.team;
    let local = agent - battle.offset(team);
    let stats = me.kind.stats();
    let mut text = String::with_capacity(2048);
    let line = &mut text;
    let _ = writeln!(
        line,
        "You control Ally #{local} of team {}, a {}, in the skirmish scenario {} ({} allies vs {} enemies on a {}x{} map). Step {} of {}.",
        TEAMS[team],
        me.kind.name(),
        config.scenario,
        config.teams[team],
        config.teams[1 - team],
        config.map_size,
        config.map_size,
        battle.steps,
        config.max_steps,
    );
    let _ = writeln!(
        line,
        "Goal: destroy every enemy unit while keeping your allies alive."
    );
    if !me.alive() {
        let _ = write!(line, "Your unit is dead. Available actions: no_op.");
        return text;
    }
    let mut own = format!(
        "Own unit: health {:.0}/{:.0} ({:.0}%)",
        me.health,
        stats.health,
        percent(me.health, stats.health)
    );
    if stats.shield > 0.0 {
        let _ = write!(
            own,
            ", shield {:.0}/{:.0} ({:.0}%)",
            me.shield,
            stats.shield,
            percent(me.shield, stats.shield)
        );
    }
    match stats.weapon {
        Weapon::Heal { max_energy, .. } => {
            let _ = write!(
                own,
                ", energy {:.0}/{max_energy:.0}, heal range {}",
                me.energy, stats.attack_range
            );
        }
        _ if me.cooldown > 0.0 => {
            let _ = write!(
                own,
                ", weapon cooling down ({:.2} s), attack range {}",
                me.cooldown, stats.attack_range
            );
        }
        _ => {
            let _ = write!(own, ", weapon ready, attack range {}", stats.attack_range);
        }
    }
    let _ = writeln!(
        line,
        "{own}, sight range {}, position ({:.1}, {:.1}).",
        stats.sight_range, me.pos[0], me.pos[1]
    );
    for dir in Dir::ALL {
        let can = if battle.can_move(agent, dir) {
            "yes"
        } else {
            "no"
        };
        let _ = writeln!(line, "Can move {}: {can}", dir.name());
    }

    let visible = battle.visible(agent);
    let describe_unit = |j: usize, role: &str, index: usize| {
        let u = &battle.units[j];
        let s = u.kind.stats();
        let (dx, dy) = (u.pos[0] - me.pos[0], u.pos[1] - me.pos[1]);
        let mut entry = format!(
            "- {role} #{index} ({}): health {:.0}%",
            u.kind.name(),
            percent(u.health, s.health)
        );
        if s.shield > 0.0 {
            let _ = write!(entry, ", shield {:.0}%", percent(u.shield, s.shield));
        }
        let _ = write!(
            entry,
            ", distance {:.1}, direction {}",
            (dx * dx + dy * dy).sqrt(),
            direction(dx, dy)
        );
        entry
    };
    let heals = me.kind.heals();
    let enemy_offset = battle.offset(1 - team);
    let _ = writeln!(line, "Enemies in sight:");
    let mut any = false;
    for k in 0..config.teams[1 - team] {
        let j = enemy_offset + k;
        if visible & (1 << j) != 0 {
            any = true;
            let mut entry = describe_unit(j, "Enemy", k);
            if !heals && battle.can_use_target(agent, k) {
                entry.push_str(", in attack range");
            }
            let _ = writeln!(line, "{entry}");
        }
    }
    if !any {
        let _ = writeln!(line, "- none");
    }
    let ally_offset = battle.offset(team);
    let _ = writeln!(line, "Allies in sight:");
    any = false;
    for k in (0..config.teams[team]).filter(|k| *k != local) {
        let j = ally_offset + k;
        if visible & (1 << j) != 0 {
            any = true;
            let mut entry = describe_unit(j, "Ally", k);
            if heals && battle.can_use_target(agent, k) {
                entry.push_str(", in heal range");
            }
            let _ = writeln!(line, "{entry}");
        }
    }
    if !any {
        let _ = writeln!(line, "- none");
    }

    let memory = config.memory;
    let _ = writeln!(
        line,
        "Shared entity memory (relayed up to {} hops, kept {} steps), units out of your sight:",
        memory.max_hops, memory.max_age
    );
    any = false;
    for r in battle.memory[team].recollections(local) {
        if r.entity == agent || visible & (1 << r.entity) != 0 {
            continue;
        }
        any = true;
        let u = &battle.units[r.entity];
        let s = u.kind.stats();
        let (role, index) = if u.team == team {
            ("Ally", r.entity - ally_offset)
        } else {
            ("Enemy", r.entity - enemy_offset)
        };
        let (dx, dy) = (r.payload.pos[0] - me.pos[0], r.payload.pos[1] - me.pos[1]);
        let mut entry = format!(
            "- {role} #{index} ({}): health {:.0}%",
            u.kind.name(),
            percent(r.payload.health, s.health)
        );
        if s.shield > 0.0 {
            let _ = write!(
                entry,
                ", shield {:.0}%",
                percent(r.payload.shield, s.shield)
            );
        }
        let source = if r.source == local {
            "you".to_owned()
        } else {
            format!("Ally #{}", r.source)
        };
        let plural = if r.hops == 1 { "" } else { "s" };
        let _ = writeln!(
            entry,
            ", distance {:.1}, direction {}, seen {} step{} ago by {source}, {} hop{plural}",
            (dx * dx + dy * dy).sqrt(),
            direction(dx, dy),
            r.age,
            if r.age == 1 { "" } else { "s" },
            r.hops,
        );
        line.push_str(&entry);
    }
    if !any {
        let _ = writeln!(line, "- nothing beyond what you see");
    }

    let mut available = Vec::new();
    let mut mask = Vec::new();
    battle.legal(agent, &mut mask);
    for index in mask.iter().enumerate().filter(|(_, l)| **l).map(|(i, _)| i) {
        let label = action_label(index);
        let meaning = match index as u32 {
            actions::STOP => "stop".to_owned(),
            actions::NORTH..=actions::WEST => label.replace('_', " "),
            a if heals => format!("heal Ally #{} ({label})", a - actions::TARGET),
            a => format!("attack Enemy #{} ({label})", a - actions::TARGET),
        };
        available.push(meaning);
    }
    let _ = write!(line, "Available actions: {}.", available.join("; "));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions_follow_the_compass() {
        assert_eq!(direction(0.0, 3.0), "North");
        assert_eq!(direction(2.0, 2.0), "Northeast");
        assert_eq!(direction(-1.0, 0.1), "West");
        assert_eq!(direction(0.5, -4.0), "South");
        assert_eq!(direction(-3.0, -3.2), "Southwest");
        assert_eq!(direction(0.0, 0.0), "here");
        assert_eq!(action_label(0), "no_op");
        assert_eq!(action_label(3), "move_south");
        assert_eq!(action_label(8), "target_2");
    }
}
