//! The text observation written for language models: egocentric and self-contained.

use super::game::{
    ACTION_LABELS, Ball, Cell, DIRECTION_NAMES, GOAL_BOTTOM, GOAL_TOP, GOAL_X, Game, Player, Pos,
    TEAMS, rival,
};
use std::fmt::Write as _;

/// What each action does, in label order, for a player with `teammates` teammates.
fn action_meanings(teammates: usize) -> [&'static str; 8] {
    [
        "wait",
        "turn left",
        "turn right",
        "move one cell forward",
        "take the ball from the cell in front, or steal it from an opponent in front",
        match teammates {
            0 => "drop the ball on the grass in front of you",
            1 => "pass the ball to your teammate, wherever they are",
            _ => "pass the ball to one of your teammates (drawn at random), wherever they are",
        },
        "no effect",
        "no effect",
    ]
}

/// "Teammate: green_1." / "Teammates: green_1, green_2." / "No teammates.".
fn roll_call(one: &str, many: &str, names: &[&str]) -> String {
    match names {
        [] => format!("No {many}."),
        [name] => format!("{one}: {name}."),
        _ => format!("{}: {}.", capitalised(many), names.join(", ")),
    }
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// `target` relative to `from`: cells ahead (negative: behind) and to the right (negative:
/// left) of its facing direction.
pub(crate) fn relative(from: &Player, target: Pos) -> (i32, i32) {
    let (dx, dy) = (target.x - from.pos.x, target.y - from.pos.y);
    let (fx, fy) = match from.dir {
        0 => (1, 0),
        1 => (0, 1),
        2 => (-1, 0),
        _ => (0, -1),
    };
    (dx * fx + dy * fy, dy * fx - dx * fy)
}

/// "2 ahead, 1 left", or "on your cell".
pub(crate) fn describe_offset(ahead: i32, right: i32) -> String {
    let mut parts = Vec::with_capacity(2);
    match ahead {
        0 => {}
        a if a > 0 => parts.push(format!("{a} ahead")),
        a => parts.push(format!("{} behind", -a)),
    }
    match right {
        0 => {}
        r if r > 0 => parts.push(format!("{r} right")),
        r => parts.push(format!("{} left", -r)),
    }
    if parts.is_empty() {
        "on your cell".to_owned()
    } else {
        parts.join(", ")
    }
}

/// The text observation of `agent`.
pub(crate) fn describe(game: &Game, agent: usize) -> String {
    let me = &game.players[agent];
    let lineup = game.lineup;
    let ids = lineup.agent_ids();
    let team = lineup.team_of(agent);
    let (own, other) = (TEAMS[team], TEAMS[rival(team)]);
    let mates: Vec<&str> = lineup
        .members(team)
        .filter(|a| *a != agent)
        .map(|a| ids[a])
        .collect();
    let opponents: Vec<&str> = lineup.members(rival(team)).map(|a| ids[a]).collect();
    let goal_x = GOAL_X[rival(team)];
    let settings = &game.settings;
    let mut text = String::with_capacity(1024);
    let line = &mut text;

    let _ = writeln!(
        line,
        "You are {} (team {own}) in {} grid soccer. {} {}",
        ids[agent],
        lineup.short_name(),
        roll_call("Teammate", "teammates", &mates),
        roll_call("Opponent", "opponents", &opponents),
    );
    let (to_win, score) = if lineup.has_opponents() {
        (
            format!("the first team to {} goals wins", settings.goals_to_win),
            format!(
                "{own} {}, {other} {}",
                game.teams[team].goals,
                game.teams[rival(team)].goals
            ),
        )
    } else {
        (
            format!("score {} goals to win", settings.goals_to_win),
            format!("{own} {}", game.teams[team].goals),
        )
    };
    let _ = writeln!(
        line,
        "Score by standing on the {other} goal (column {goal_x}, rows {GOAL_TOP}-{GOAL_BOTTOM}) \
         while carrying the ball; {to_win}."
    );
    let _ = writeln!(
        line,
        "Step {} of {}. Score: {score}.",
        game.steps, settings.max_steps,
    );
    let cooldown = match me.cooldown {
        0 => "you can steal".to_owned(),
        n => format!("you cannot steal for {n} more steps"),
    };
    let _ = writeln!(
        line,
        "You are at column {}, row {}, facing {}. Steal cooldown: {} ({cooldown}).",
        me.pos.x,
        me.pos.y,
        DIRECTION_NAMES[usize::from(me.dir)],
        me.cooldown
    );

    let ball = match game.ball {
        Ball::Carried(who) if who == agent => "you carry it".to_owned(),
        Ball::Carried(who) => {
            let (ahead, right) = relative(me, game.players[who].pos);
            let role = if lineup.team_of(who) == team {
                "your teammate"
            } else {
                "opponent"
            };
            format!(
                "carried by {} ({role}), {}",
                ids[who],
                describe_offset(ahead, right)
            )
        }
        Ball::Loose(pos) => {
            let (ahead, right) = relative(me, pos);
            format!("on the ground, {}", describe_offset(ahead, right))
        }
    };
    let _ = writeln!(line, "Ball: {ball}.");

    let nearest_goal = Pos::new(goal_x, me.pos.y.clamp(GOAL_TOP, GOAL_BOTTOM));
    let (ahead, right) = relative(me, nearest_goal);
    let _ = writeln!(
        line,
        "Nearest {other} goal cell: {}.",
        describe_offset(ahead, right)
    );

    for other_agent in (0..ids.len()).filter(|a| *a != agent) {
        let player = &game.players[other_agent];
        let (ahead, right) = relative(me, player.pos);
        let role = if lineup.team_of(other_agent) == team {
            "teammate"
        } else {
            "opponent"
        };
        let carrying = if game.carrier() == Some(other_agent) {
            ", carrying the ball"
        } else {
            ""
        };
        let _ = writeln!(
            line,
            "{} ({role}): {}, facing {}{carrying}, steal cooldown {}.",
            ids[other_agent],
            describe_offset(ahead, right),
            DIRECTION_NAMES[usize::from(player.dir)],
            player.cooldown
        );
    }

    let front = game.front(agent);
    let in_front = match (game.agent_at(front), game.cell(front)) {
        (Some(who), _) => ids[who].to_owned(),
        (None, Cell::Wall) => "the wall".to_owned(),
        (None, Cell::Ball) => "the ball".to_owned(),
        (None, Cell::Goal { team: owner }) => format!("the {} goal", TEAMS[owner]),
        (None, Cell::Empty) => "empty grass".to_owned(),
    };
    let _ = writeln!(line, "In front of you: {in_front}.");

    let meanings: Vec<String> = ACTION_LABELS
        .iter()
        .zip(action_meanings(mates.len()))
        .map(|(label, meaning)| format!("{label} ({meaning})"))
        .collect();
    let _ = writeln!(line, "Actions: {}.", meanings.join("; "));
    let _ = write!(line, "Legal actions: {}.", ACTION_LABELS.join(", "));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_egocentric() {
        let east = Player {
            pos: Pos::new(5, 5),
            dir: 0,
            cooldown: 0,
            prev_pos: Pos::new(5, 5),
        };
        assert_eq!(relative(&east, Pos::new(7, 4)), (2, -1));
        let north = Player { dir: 3, ..east };
        assert_eq!(relative(&north, Pos::new(7, 4)), (1, 2));
        let west = Player { dir: 2, ..east };
        assert_eq!(relative(&west, Pos::new(5, 8)), (0, -3));
        let south = Player { dir: 1, ..east };
        assert_eq!(relative(&south, Pos::new(4, 4)), (-1, 1));
        assert_eq!(describe_offset(2, -1), "2 ahead, 1 left");
        assert_eq!(describe_offset(-3, 0), "3 behind");
        assert_eq!(describe_offset(0, 0), "on your cell");
    }
}
