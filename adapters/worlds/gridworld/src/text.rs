//! The egocentric text view written for language models.

use super::world::{Tile, VIEW, VIEW_AGENT, View, direction_name};
use super::{GridAction, State};
use std::fmt::Write as _;

/// What each action does, in index order, for the action list.
fn action_meaning(action: GridAction) -> &'static str {
    match action {
        GridAction::Left => "turn left",
        GridAction::Right => "turn right",
        GridAction::Forward => "move one cell ahead",
        GridAction::Pickup => "pick up the object in front of you",
        GridAction::Drop => "put what you carry down in front of you",
        GridAction::Toggle => "open, close or unlock the door in front of you",
        GridAction::Done => "declare the mission complete",
    }
}

/// `2 cells ahead and 1 to the left`.
fn relative_position(forward: i32, right: i32) -> String {
    let cells = |n: i32| if n == 1 { "cell" } else { "cells" };
    let side = match right {
        0 => None,
        r if r < 0 => Some(format!("{} {} to your left", -r, cells(-r))),
        r => Some(format!("{r} {} to your right", cells(r))),
    };
    match (forward, side) {
        (0, Some(side)) => side,
        (f, None) => format!("{f} {} ahead", cells(f)),
        (f, Some(side)) => format!("{f} {} ahead and {side}", cells(f)),
    }
}

/// The run of free cells straight ahead and what ends it.
fn ahead(view: &View) -> String {
    let mut free = 0;
    for forward in 1..VIEW as i32 {
        match view.relative(forward, 0) {
            Some(Tile::Empty) => free += 1,
            Some(tile) if free == 0 => {
                return format!("{}, right in front of you", tile.describe());
            }
            Some(tile) => {
                let cells = if free == 1 { "cell" } else { "cells" };
                return format!("{free} free {cells}, then {}", tile.describe());
            }
            None => return format!("{free} free cells, then you cannot see further"),
        }
    }
    format!("at least {free} free cells")
}

fn beside(view: &View, right: i32) -> String {
    view.relative(0, right)
        .map_or_else(|| "out of sight".to_owned(), Tile::describe)
}

/// The text observation.
pub(super) fn describe(state: &State, view: &View, max_steps: u32, labels: &[String]) -> String {
    let mut text = String::with_capacity(768);
    let _ = writeln!(text, "Mission: {}.", state.mission.text());
    let carrying = state.carrying.map_or_else(
        || "nothing".to_owned(),
        |item| format!("a {}", item.describe()),
    );
    let _ = writeln!(
        text,
        "Step {} of {max_steps}. You face {}. You carry {carrying}.",
        state.steps,
        direction_name(state.direction)
    );
    let _ = writeln!(text, "Ahead: {}.", ahead(view));
    let _ = writeln!(
        text,
        "Left: {}. Right: {}.",
        beside(view, -1),
        beside(view, 1)
    );

    let mut seen: Vec<(u32, i32, i32, Tile)> = Vec::new();
    for (vx, column) in view.cells.iter().enumerate() {
        for (vy, cell) in column.iter().enumerate() {
            let forward = VIEW_AGENT.1 as i32 - vy as i32;
            let right = vx as i32 - VIEW_AGENT.0 as i32;
            match cell {
                Some(Tile::Empty | Tile::Wall) | None => {}
                Some(_) if (forward, right) == (0, 0) => {} // what the agent carries
                Some(tile) => seen.push((
                    forward.unsigned_abs() + right.unsigned_abs(),
                    forward,
                    right,
                    *tile,
                )),
            }
        }
    }
    seen.sort_by_key(|&(distance, forward, right, _)| (distance, forward, right));
    if seen.is_empty() {
        text.push_str("You see no objects.\n");
    } else {
        text.push_str("You see:\n");
        for (_, forward, right, tile) in seen {
            let _ = writeln!(
                text,
                "- {}: {}",
                tile.describe(),
                relative_position(forward, right)
            );
        }
    }
    text.push_str("Legal actions:");
    for (action, label) in GridAction::ALL.iter().zip(labels) {
        let _ = write!(text, " {label} ({}),", action_meaning(*action));
    }
    text.pop();
    text.push_str(".\n");
    text
}
