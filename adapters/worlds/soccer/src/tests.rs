//! Rule and environment tests of `soccer-2v2`; the other lineups are tested in
//! `lineup_tests.rs`.

use super::game::{Ball, Cell, DROP, FORWARD, Game, LEFT, PICKUP, Player, Pos, RIGHT};
use super::*;
use mosaic_core::baseline::Random;
use mosaic_core::rng::seeded;
use mosaic_core::{AgentContext, Paradigm};
use rand::Rng as _;

const NOOP: u32 = 0;
const AGENTS: usize = 4;
const AGENT_IDS: &[&str] = Lineup::TwoOnTwo.agent_ids();
const TWO: SymbolicLayout = SymbolicLayout::new(Lineup::TwoOnTwo, 3);

pub(crate) fn settings() -> SoccerSettings {
    SoccerSettings {
        reward_shaping: false,
        ..SoccerSettings::default()
    }
}

/// A 2v2 env reset with seed 1, then players (x, y, dir) and the ball put by hand.
fn arranged(settings: SoccerSettings, players: [(i32, i32, u8); AGENTS], ball: Ball) -> Soccer {
    arranged_lineup(Lineup::TwoOnTwo, settings, &players, ball)
}

/// An env of `lineup` reset with seed 1, then players (x, y, dir) and the ball put by hand.
pub(crate) fn arranged_lineup(
    lineup: Lineup,
    settings: SoccerSettings,
    players: &[(i32, i32, u8)],
    ball: Ball,
) -> Soccer {
    let mut env = Soccer::with_lineup(lineup, settings).unwrap();
    env.reset(1).unwrap();
    assert_eq!(players.len(), lineup.agents());
    for (player, &(x, y, dir)) in env.game.players.iter_mut().zip(players) {
        *player = Player {
            pos: Pos::new(x, y),
            dir,
            cooldown: 0,
            prev_pos: Pos::new(x, y),
        };
    }
    env.game.ball = ball;
    env.game.validate().unwrap();
    env
}

pub(crate) fn act(env: &mut Soccer, actions: &[u32]) -> Transition {
    let mut out = Transition::default();
    let actions: Vec<_> = actions.iter().map(|a| Some(Action(*a))).collect();
    env.step(&actions, &mut out).unwrap();
    out
}

pub(crate) fn kinds(out: &Transition) -> Vec<&str> {
    out.events.iter().map(|e| e.kind.as_str()).collect()
}

/// Far-apart players that do not interfere: green_0 (3,3) east, green_1 (3,8) east,
/// blue_0 (12,3) west, blue_1 (12,8) west.
const APART: [(i32, i32, u8); AGENTS] = [(3, 3, 0), (3, 8, 0), (12, 3, 2), (12, 8, 2)];

#[test]
fn spec_describes_four_simultaneous_agents_in_two_teams() {
    let env = Soccer::new(SoccerSettings::default()).unwrap();
    let spec = env.spec();
    assert_eq!(spec.name, "soccer-2v2");
    assert_eq!(spec.stepping, Stepping::Simultaneous);
    assert_eq!(spec.teams(), vec!["green", "blue"]);
    let ids: Vec<_> = spec.agents.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, AGENT_IDS);
    assert_eq!(spec.action_labels.len(), 8);
    assert_eq!(spec.action_label(Action(5)), "drop");
    assert_eq!(spec.default_action, Action(0));
    assert_eq!(spec.max_steps, Some(256));
    assert_eq!(spec.symbolic_shape, Some(vec![30 + 27]));
    let seven = Soccer::new(SoccerSettings {
        view_size: 7,
        ..SoccerSettings::default()
    })
    .unwrap();
    assert_eq!(seven.spec().symbolic_shape, Some(vec![30 + 147]));
}

#[test]
fn reset_places_everything_on_distinct_free_cells() {
    let mut starts = std::collections::BTreeSet::new();
    let mut dirs = [0u32; 4];
    for seed in 0..200 {
        let game = Game::new(settings(), Lineup::TwoOnTwo, seed);
        game.validate().unwrap();
        let Ball::Loose(ball) = game.ball else {
            panic!("ball starts carried")
        };
        assert_eq!(game.cell(ball), Cell::Ball);
        for (i, p) in game.players.iter().enumerate() {
            assert_eq!(game.cell(p.pos), Cell::Empty, "seed {seed} player {i}");
            assert!(game.players[..i].iter().all(|q| q.pos != p.pos));
            dirs[usize::from(p.dir)] += 1;
        }
        starts.insert((game.players[0].pos.x, game.players[0].pos.y));
    }
    assert!(starts.len() > 60, "starts barely vary: {}", starts.len());
    assert!(dirs.iter().all(|d| *d > 100), "directions {dirs:?}");
}

#[test]
fn same_seed_and_actions_give_identical_episodes() {
    let run = |seed: u64| {
        let mut env = Soccer::new(SoccerSettings::default()).unwrap();
        env.reset(seed).unwrap();
        let mut rng = seeded(99);
        let mut trace = Vec::new();
        let mut out = Transition::default();
        for _ in 0..600 {
            if env.acting().is_empty() {
                env.reset(seed + 1).unwrap();
            }
            let actions: Vec<_> = (0..AGENTS)
                .map(|_| Some(Action(rng.random_range(0..8))))
                .collect();
            env.step(&actions, &mut out).unwrap();
            let obs: Vec<_> = (0..AGENTS)
                .map(|a| env.observe(a, ObsRequest::ALL))
                .collect();
            let frame = obs[0].frame.as_ref().map(|f| f.rgb.clone());
            let obs: Vec<_> = obs
                .into_iter()
                .map(|o| (o.symbolic, o.text, o.legal))
                .collect();
            trace.push((out.clone(), obs, frame, env.render().map(|f| f.rgb)));
        }
        trace
    };
    let a = run(5);
    assert_eq!(a, run(5));
    assert_ne!(a, run(6));
}

#[test]
fn turning_and_moving() {
    let mut env = arranged(settings(), APART, Ball::Loose(Pos::new(8, 5)));
    act(&mut env, &[LEFT, RIGHT, FORWARD, NOOP]);
    let p = &env.game.players;
    assert_eq!((p[0].dir, p[1].dir), (3, 1));
    assert_eq!(p[2].pos, Pos::new(11, 3));
    assert_eq!(p[3].pos, Pos::new(12, 8));
    act(&mut env, &[RIGHT, LEFT, NOOP, NOOP]);
    assert_eq!((env.game.players[0].dir, env.game.players[1].dir), (0, 0));
    // toggle and done change nothing.
    let before = env.game.clone();
    act(&mut env, &[6, 7, 6, 7]);
    assert_eq!(env.game.players, before.players);
    assert_eq!(env.game.ball, before.ball);
}

#[test]
fn walls_and_the_ball_block_but_goals_and_players_do_not() {
    // green_0 faces the north wall, green_1 faces the ball, blue_0 faces the blue goal,
    // blue_1 faces green_1's cell... and walks onto it.
    let players = [(5, 1, 3), (6, 6, 0), (13, 5, 0), (6, 5, 1)];
    let mut env = arranged(settings(), players, Ball::Loose(Pos::new(7, 6)));
    act(&mut env, &[FORWARD; 4]);
    let p = &env.game.players;
    assert_eq!(p[0].pos, Pos::new(5, 1), "walked into the wall");
    assert_eq!(p[1].pos, Pos::new(6, 6), "walked onto the ball");
    assert_eq!(p[2].pos, Pos::new(14, 5), "goal cells are walkable");
    assert_eq!(p[3].pos, Pos::new(6, 6), "players may share a cell");
    assert_eq!(env.game.ball, Ball::Loose(Pos::new(7, 6)));
}

#[test]
fn pickup_takes_the_ball_in_front() {
    let players = [(7, 5, 0), (3, 8, 0), (12, 3, 2), (12, 8, 2)];
    let mut env = arranged(settings(), players, Ball::Loose(Pos::new(8, 5)));
    let out = act(&mut env, &[NOOP, PICKUP, PICKUP, NOOP]);
    assert!(
        out.events.is_empty(),
        "nothing in front of green_1 or blue_0"
    );
    let out = act(&mut env, &[PICKUP, NOOP, NOOP, NOOP]);
    assert_eq!(env.game.ball, Ball::Carried(0));
    assert_eq!(env.game.cell(Pos::new(8, 5)), Cell::Empty);
    assert_eq!(kinds(&out), ["pickup"]);
    assert_eq!(out.events[0].agent, Some(0));
    assert_eq!(env.metrics()["pickups_green"], 1);
}

#[test]
fn steal_from_an_opponent_puts_both_on_cooldown() {
    // blue_0 (west of green_0's cell) faces green_0, who carries the ball.
    let players = [(7, 5, 0), (3, 8, 0), (6, 5, 0), (12, 8, 2)];
    let mut env = arranged(settings(), players, Ball::Carried(0));
    let out = act(&mut env, &[NOOP, NOOP, PICKUP, NOOP]);
    assert_eq!(env.game.ball, Ball::Carried(2));
    assert_eq!(kinds(&out), ["steal"]);
    assert_eq!(
        out.events[0].detail,
        Some(serde_json::json!({ "from": "green_0" }))
    );
    assert_eq!(env.game.players[0].cooldown, 10);
    assert_eq!(env.game.players[2].cooldown, 10);
    assert_eq!(env.metrics()["steals_blue"], 1);

    // green_0 turns to face blue_0 and cannot steal back while cooling down (9 steps).
    act(&mut env, &[LEFT, NOOP, NOOP, NOOP]);
    act(&mut env, &[LEFT, NOOP, NOOP, NOOP]);
    for _ in 3..10 {
        act(&mut env, &[PICKUP, NOOP, NOOP, NOOP]);
        assert_eq!(env.game.ball, Ball::Carried(2));
    }
    assert_eq!(env.game.players[0].cooldown, 1);
    let out = act(&mut env, &[PICKUP, NOOP, NOOP, NOOP]);
    assert_eq!(
        env.game.ball,
        Ball::Carried(0),
        "cooldown over on the 10th step"
    );
    assert_eq!(kinds(&out), ["steal"]);
}

#[test]
fn no_stealing_from_a_teammate() {
    let players = [(7, 5, 0), (6, 5, 0), (12, 3, 2), (12, 8, 2)];
    let mut env = arranged(settings(), players, Ball::Carried(0));
    let out = act(&mut env, &[NOOP, PICKUP, NOOP, NOOP]);
    assert_eq!(env.game.ball, Ball::Carried(0));
    assert!(out.events.is_empty());
}

#[test]
fn steal_bonus_with_reward_shaping() {
    let shaped = SoccerSettings::default();
    let players = [(7, 5, 0), (3, 8, 0), (6, 5, 0), (12, 8, 2)];
    let mut env = arranged(shaped, players, Ball::Carried(0));
    let out = act(&mut env, &[NOOP, NOOP, PICKUP, NOOP]);
    assert_eq!(out.rewards, vec![0.0, 0.0, 0.3, 0.0]);
}

#[test]
fn distance_shaping_towards_ball_and_goal() {
    let shaped = SoccerSettings::default();
    // green_0 walks towards the loose ball, blue_0 away from it, others still.
    let players = [(3, 5, 0), (3, 8, 0), (12, 3, 0), (12, 8, 2)];
    let mut env = arranged(shaped, players, Ball::Loose(Pos::new(8, 5)));
    let out = act(&mut env, &[FORWARD, NOOP, FORWARD, NOOP]);
    assert_eq!(out.rewards, vec![0.01, 0.0, -0.01, 0.0]);
    // The carrier is pulled towards the middle of the opponent goal; others get nothing.
    env.game.ball = Ball::Carried(0);
    let out = act(&mut env, &[FORWARD, FORWARD, NOOP, NOOP]);
    assert_eq!(out.rewards, vec![0.01, 0.0, 0.0, 0.0]);
}

#[test]
fn drop_passes_by_teleport_to_the_teammate() {
    let players = [(3, 3, 0), (12, 9, 1), (5, 3, 2), (12, 8, 2)];
    let mut env = arranged(settings(), players, Ball::Carried(0));
    let out = act(&mut env, &[DROP, NOOP, NOOP, NOOP]);
    assert_eq!(env.game.ball, Ball::Carried(1));
    assert_eq!(kinds(&out), ["pass"]);
    assert_eq!(
        out.events[0].detail,
        Some(serde_json::json!({ "to": "green_1" }))
    );
    assert_eq!(env.metrics()["passes_green"], 1);
    // Dropping without the ball does nothing.
    let out = act(&mut env, &[DROP, NOOP, DROP, DROP]);
    assert_eq!(env.game.ball, Ball::Carried(1));
    assert!(out.events.is_empty());
}

#[test]
fn walking_onto_the_opponent_goal_with_the_ball_scores_and_respawns_it() {
    let players = [(13, 4, 0), (3, 8, 0), (12, 3, 2), (12, 8, 2)];
    let mut env = arranged(settings(), players, Ball::Carried(0));
    act(&mut env, &[NOOP; 4]);
    let out = act(&mut env, &[FORWARD, NOOP, NOOP, NOOP]);
    let reward = 1.0 + (256.0 - 2.0) * 0.05;
    assert_eq!(out.rewards, vec![reward, reward, 0.0, 0.0]);
    assert_eq!(kinds(&out), ["goal"]);
    assert_eq!(
        out.events[0].detail,
        Some(serde_json::json!({ "team": "green", "score": { "green": 1, "blue": 0 } }))
    );
    assert_eq!(env.score(), [1, 0]);
    let Ball::Loose(ball) = env.game.ball else {
        panic!("ball not respawned")
    };
    assert_eq!(env.game.cell(ball), Cell::Ball);
    assert!(env.game.players.iter().all(|p| p.pos != ball));
    assert!(!out.terminated.iter().any(|t| *t));
    assert_eq!(env.acting(), vec![0, 1, 2, 3]);
    assert_eq!(env.outcome(), None);
}

#[test]
fn own_goal_does_not_count() {
    let players = [(2, 5, 2), (3, 8, 0), (12, 3, 2), (12, 8, 2)];
    let mut env = arranged(settings(), players, Ball::Carried(0));
    let out = act(&mut env, &[FORWARD, NOOP, NOOP, NOOP]);
    assert_eq!(env.game.players[0].pos, Pos::new(1, 5));
    assert_eq!(env.game.ball, Ball::Carried(0));
    assert!(out.events.is_empty());
}

#[test]
fn a_pass_to_a_teammate_on_the_goal_scores_at_once() {
    let players = [(2, 5, 2), (3, 8, 0), (12, 3, 2), (1, 6, 2)];
    let mut env = arranged(settings(), players, Ball::Carried(2));
    let out = act(&mut env, &[NOOP, NOOP, DROP, NOOP]);
    assert_eq!(kinds(&out), ["pass", "goal"]);
    assert_eq!(out.events[1].agent, Some(3));
    assert_eq!(env.score(), [0, 1]);
    assert!(out.rewards[2] > 1.0 && out.rewards[2] == out.rewards[3]);
}

#[test]
fn second_goal_wins_and_ends_the_episode() {
    let players = [(13, 4, 0), (3, 8, 0), (12, 3, 2), (12, 8, 2)];
    let mut env = arranged(settings(), players, Ball::Carried(0));
    env.game.teams[0].goals = 1;
    let out = act(&mut env, &[FORWARD, NOOP, NOOP, NOOP]);
    assert_eq!(out.terminated, vec![true; 4]);
    assert_eq!(out.truncated, vec![false; 4]);
    assert!(out.all_done());
    assert!(env.acting().is_empty());
    assert_eq!(
        env.outcome(),
        Some(vec![
            Outcome::Win,
            Outcome::Win,
            Outcome::Loss,
            Outcome::Loss
        ])
    );
    assert_eq!(env.metrics()["goals_green"], 2);
    let mut out = Transition::default();
    assert!(matches!(
        env.step(&[Some(Action(0)); 4], &mut out),
        Err(EnvError::NotRunning)
    ));
}

#[test]
fn goals_to_win_is_a_setting() {
    let three = SoccerSettings {
        goals_to_win: 3,
        ..settings()
    };
    let players = [(13, 4, 0), (3, 8, 0), (12, 3, 2), (12, 8, 2)];
    let mut env = arranged(three, players, Ball::Carried(0));
    env.game.teams[0].goals = 1;
    let out = act(&mut env, &[FORWARD, NOOP, NOOP, NOOP]);
    assert_eq!(env.score(), [2, 0]);
    assert!(!out.all_done());
}

#[test]
fn truncation_at_max_steps_is_a_draw_when_level() {
    let short = SoccerSettings {
        max_steps: 5,
        ..settings()
    };
    let mut env = arranged(short, APART, Ball::Loose(Pos::new(8, 5)));
    for _ in 0..4 {
        let out = act(&mut env, &[NOOP; 4]);
        assert!(!out.all_done());
    }
    let out = act(&mut env, &[NOOP; 4]);
    assert_eq!(out.truncated, vec![true; 4]);
    assert_eq!(out.terminated, vec![false; 4]);
    assert_eq!(env.steps(), 5);
    assert!(env.acting().is_empty());
    assert_eq!(env.outcome(), Some(vec![Outcome::Draw; 4]));
    env.game.teams[1].goals = 1;
    assert_eq!(
        env.outcome(),
        Some(vec![
            Outcome::Loss,
            Outcome::Loss,
            Outcome::Win,
            Outcome::Win
        ])
    );
}

#[test]
fn turn_order_is_random_each_step() {
    // green_0 and blue_0 face the loose ball from both sides and both pick up: who gets it
    // depends on who acts first.
    let players = [(7, 5, 0), (3, 8, 0), (9, 5, 2), (12, 8, 2)];
    let mut winners = [0; AGENTS];
    for seed in 0..40 {
        let mut env = arranged(settings(), players, Ball::Loose(Pos::new(8, 5)));
        env.game.rng = seeded(seed);
        act(&mut env, &[PICKUP, NOOP, PICKUP, NOOP]);
        let Ball::Carried(who) = env.game.ball else {
            panic!("nobody picked the ball up")
        };
        winners[who] += 1;
    }
    assert!(winners[0] > 5 && winners[2] > 5, "{winners:?}");
}

#[test]
fn bad_joint_actions_are_rejected_without_effect() {
    let mut env = Soccer::new(settings()).unwrap();
    let mut out = Transition::default();
    assert!(matches!(
        env.step(&[Some(Action(0)); 4], &mut out),
        Err(EnvError::NotRunning)
    ));
    env.reset(3).unwrap();
    let before = env.game.clone();
    assert!(matches!(
        env.step(&[Some(Action(0)); 3], &mut out),
        Err(EnvError::InvalidAction { .. })
    ));
    let err = env
        .step(&[None, None, Some(Action(8)), None], &mut out)
        .unwrap_err();
    assert!(
        matches!(err, EnvError::InvalidAction { agent: 2, .. }),
        "{err}"
    );
    assert_eq!(env.game, before);
    // A missing action skips the agent.
    env.step(&[None, None, None, None], &mut out).unwrap();
    assert_eq!(env.game.players, before.players);
    assert_eq!(env.steps(), 1);
}

#[test]
fn every_action_is_always_legal() {
    let mut env = Soccer::new(settings()).unwrap();
    env.reset(4).unwrap();
    for agent in 0..AGENTS {
        let obs = env.observe(agent, ObsRequest::MASK_ONLY);
        assert_eq!(obs.legal, vec![true; 8]);
        assert!(obs.symbolic.is_none() && obs.text.is_none() && obs.frame.is_none());
    }
    assert_eq!(env.observe(9, ObsRequest::ALL).legal, vec![false; 8]);
}

#[derive(serde::Deserialize)]
struct Reference {
    scenarios: Vec<Scenario>,
}

#[derive(serde::Deserialize)]
struct Scenario {
    players: Vec<[i32; 3]>,
    ball: serde_json::Value,
    views: std::collections::BTreeMap<usize, Vec<Vec<Vec<[u8; 3]>>>>,
}

#[test]
fn views_match_the_reference_encoding() {
    let reference: Reference =
        serde_json::from_str(include_str!("testdata/reference_views.json")).unwrap();
    for (n, scenario) in reference.scenarios.iter().enumerate() {
        for (size, expected) in &scenario.views {
            let settings = SoccerSettings {
                view_size: *size as u32,
                ..settings()
            };
            let players: Vec<_> = scenario
                .players
                .iter()
                .map(|[x, y, d]| (*x, *y, *d as u8))
                .collect();
            let ball = match scenario.ball.get("carried_by") {
                Some(who) => Ball::Carried(who.as_u64().unwrap() as usize),
                None => {
                    let at = &scenario.ball["at"];
                    Ball::Loose(Pos::new(
                        at[0].as_i64().unwrap() as i32,
                        at[1].as_i64().unwrap() as i32,
                    ))
                }
            };
            let env = arranged(settings, players.try_into().unwrap(), ball);
            let shape = SymbolicLayout::new(Lineup::TwoOnTwo, *size);
            for (agent, image) in expected.iter().enumerate() {
                let obs = env.observe(agent, ObsRequest::ALL);
                let data = obs.symbolic.unwrap().data;
                for (i, column) in image.iter().enumerate() {
                    for (j, cell) in column.iter().enumerate() {
                        let got: Vec<u8> = (0..3)
                            .map(|c| data[shape.view_index(i, j, c)] as u8)
                            .collect();
                        assert_eq!(
                            got, cell,
                            "scenario {n}, view {size}, agent {agent}, cell ({i}, {j})"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn symbolic_globals_follow_the_layout() {
    let players = [(4, 6, 1), (9, 2, 3), (10, 7, 2), (13, 4, 0)];
    let mut env = arranged(settings(), players, Ball::Carried(2));
    env.game.players[3].cooldown = 4;
    env.game.teams[1].goals = 1;
    env.game.steps = 6;
    let data = env.observe(1, ObsRequest::ALL).symbolic.unwrap().data;
    assert_eq!(data.len(), TWO.total_len());
    use layout::*;
    let (teammate, opponents, score) = (TEAMMATES, TWO.opponents(), TWO.score());
    assert_eq!(
        &data[SELF..SELF + PLAYER_FIELDS],
        &[9.0, 2.0, 3.0, 0.0, 0.0]
    );
    assert_eq!(&data[BALL..BALL + 3], &[10.0, 7.0, HOLDER_OPPONENT]);
    assert_eq!(&data[GOALS..GOALS + 4], &[14.0, 5.0, 1.0, 5.0]);
    assert_eq!(&data[teammate..teammate + 5], &[4.0, 6.0, 1.0, 0.0, 0.0]);
    assert_eq!(&data[opponents..opponents + 5], &[10.0, 7.0, 2.0, 1.0, 0.0]);
    assert_eq!(
        &data[opponents + 5..opponents + 10],
        &[13.0, 4.0, 0.0, 0.0, 4.0]
    );
    assert_eq!(&data[score..score + 3], &[0.0, 1.0, 250.0]);
    let blue = env.observe(2, ObsRequest::ALL).symbolic.unwrap().data;
    assert_eq!(&blue[BALL..BALL + 3], &[10.0, 7.0, HOLDER_SELF]);
    assert_eq!(&blue[GOALS..GOALS + 4], &[1.0, 5.0, 14.0, 5.0]);
    assert_eq!(&blue[score..score + 2], &[1.0, 0.0]);
    let mate = env.observe(3, ObsRequest::ALL).symbolic.unwrap().data;
    assert_eq!(mate[BALL + 2], HOLDER_TEAMMATE);
    env.game.ball = Ball::Loose(Pos::new(8, 8));
    let loose = env.observe(0, ObsRequest::ALL).symbolic.unwrap().data;
    assert_eq!(&loose[BALL..BALL + 3], &[8.0, 8.0, HOLDER_LOOSE]);
}

#[test]
fn text_is_egocentric_and_complete() {
    // green_0 at (5,5) facing east; the ball 2 ahead, 1 left; blue_0 carries nothing.
    let players = [(5, 5, 0), (5, 8, 3), (9, 5, 2), (12, 8, 2)];
    let mut env = arranged(settings(), players, Ball::Loose(Pos::new(7, 4)));
    env.game.players[0].cooldown = 3;
    env.game.teams[1].goals = 1;
    env.game.steps = 12;
    let text = env.observe(0, ObsRequest::ALL).text.unwrap();
    for needle in [
        "You are green_0 (team green)",
        "Teammate: green_1. Opponents: blue_0, blue_1.",
        "blue goal (column 14, rows 4-6)",
        "first team to 2 goals wins",
        "Step 12 of 256. Score: green 0, blue 1.",
        "column 5, row 5, facing east",
        "Steal cooldown: 3 (you cannot steal for 3 more steps)",
        "Ball: on the ground, 2 ahead, 1 left.",
        "Nearest blue goal cell: 9 ahead.",
        "green_1 (teammate): 3 right, facing north",
        "blue_0 (opponent): 4 ahead, facing west",
        "In front of you: empty grass.",
        "Legal actions: noop, left, right, forward, pickup, drop, toggle, done.",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    env.game.ball = Ball::Carried(2);
    let text = env.observe(1, ObsRequest::ALL).text.unwrap();
    assert!(
        text.contains("Ball: carried by blue_0 (opponent), 3 ahead, 4 right."),
        "{text}"
    );
    assert!(text.contains("blue_0 (opponent): 3 ahead, 4 right, facing west, carrying the ball"));
    let text = env.observe(2, ObsRequest::ALL).text.unwrap();
    assert!(text.contains("Ball: you carry it."), "{text}");
    assert!(
        text.contains("Score by standing on the green goal (column 1"),
        "{text}"
    );
}

fn pixel(frame: &Frame, x: u32, y: u32) -> [u8; 3] {
    let i = ((y * frame.width + x) * 3) as usize;
    [frame.rgb[i], frame.rgb[i + 1], frame.rgb[i + 2]]
}

#[test]
fn pitch_frame_shows_players_ball_goals_and_score() {
    let players = [(4, 6, 1), (9, 2, 3), (10, 7, 2), (13, 4, 0)];
    let mut env = arranged(settings(), players, Ball::Carried(2));
    env.game.teams[0].goals = 1;
    let frame = env.render().unwrap();
    let tile = PITCH_TILE;
    assert_eq!((frame.width, frame.height), (16 * tile, 12 * tile));
    let centre = |x: i32, y: i32| {
        pixel(
            &frame,
            x as u32 * tile + tile / 2,
            (y as u32 + 1) * tile + tile / 2,
        )
    };
    assert_eq!(centre(10, 7), [255, 60, 60], "carried ball on blue_0");
    assert_eq!(centre(4, 6), [30, 200, 60], "green_0 body");
    assert_eq!(centre(13, 4), [60, 80, 220], "blue_1 body");
    let goal = pixel(&frame, tile + tile / 2, 6 * tile + tile / 2 + 2);
    assert_eq!(goal, [30, 200, 60], "green goal (between its net lines)");
    // Score bar: green's first disc filled, blue's empty.
    assert_eq!(pixel(&frame, tile / 2, tile / 2), [30, 200, 60]);
    assert_eq!(pixel(&frame, 16 * tile - tile / 2, tile / 2), [30, 30, 30]);
    env.game.ball = Ball::Loose(Pos::new(6, 3));
    let frame = env.render().unwrap();
    let centre = |x: i32, y: i32| {
        pixel(
            &frame,
            x as u32 * tile + tile / 2,
            (y as u32 + 1) * tile + tile / 2,
        )
    };
    assert_eq!(centre(6, 3), [255, 60, 60], "loose ball");
    assert_ne!(centre(10, 7), [255, 60, 60]);

    let png = frame.to_png().unwrap();
    assert_eq!(Frame::from_png(&png).unwrap(), frame);
}

/// The pixels of the pitch tile at (x, y), row by row.
fn tile_pixels(frame: &Frame, x: i32, y: i32) -> Vec<[u8; 3]> {
    let tile = PITCH_TILE;
    let (x0, y0) = (x as u32 * tile, (y as u32 + 1) * tile);
    (y0..y0 + tile)
        .flat_map(|py| (x0..x0 + tile).map(move |px| (px, py)))
        .map(|(px, py)| pixel(frame, px, py))
        .collect()
}

#[test]
fn a_marked_player_is_framed_and_drawn_above_the_players_on_its_cell() {
    let mark = mosaic_core::canvas::MARK;
    // green_0 at (5, 5) facing east; green_1 then blue_0 (drawn after it) on its cell.
    let crowded = arranged(
        settings(),
        [(5, 5, 0), (5, 5, 3), (5, 5, 2), (12, 8, 2)],
        Ball::Loose(Pos::new(8, 2)),
    );
    let alone = arranged(
        settings(),
        [(5, 5, 0), (3, 8, 3), (12, 3, 2), (12, 8, 2)],
        Ball::Loose(Pos::new(8, 2)),
    );
    let plain = crowded.render().unwrap();
    assert_eq!(
        crowded.render_marked(&[]).unwrap(),
        plain,
        "no marks: the plain view"
    );
    let marked = crowded.render_marked(&[0]).unwrap();
    assert!(
        !plain.rgb.chunks(3).any(|px| px == mark),
        "nothing marked in the plain view"
    );
    let tile = PITCH_TILE;
    let (x0, y0) = (5 * tile, 6 * tile);
    for k in [0, tile / 2, tile - 1] {
        assert_eq!(pixel(&marked, x0 + k, y0), mark, "top edge");
        assert_eq!(pixel(&marked, x0, y0 + k), mark, "left edge");
        assert_eq!(pixel(&marked, x0 + tile - 1, y0 + k), mark, "right edge");
    }
    let centre = |frame: &Frame| pixel(frame, x0 + tile / 2, y0 + tile / 2);
    assert_eq!(
        centre(&plain),
        [60, 80, 220],
        "unmarked, blue_0 covers green_0"
    );
    assert_eq!(centre(&marked), [30, 200, 60], "marked, green_0 is on top");
    // Every pixel green_0 draws (its footprint on its own) shows green_0, not a teammate.
    let empty = arranged(
        settings(),
        [(3, 3, 0), (3, 8, 3), (12, 3, 2), (12, 8, 2)],
        Ball::Loose(Pos::new(8, 2)),
    );
    let ground = tile_pixels(&empty.render().unwrap(), 5, 5);
    let own = tile_pixels(&alone.render_marked(&[0]).unwrap(), 5, 5);
    let shown = tile_pixels(&marked, 5, 5);
    let footprint: Vec<usize> = (0..own.len()).filter(|&i| own[i] != ground[i]).collect();
    assert!(footprint.len() > 50, "green_0 covers part of its tile");
    for &i in &footprint {
        assert_eq!(shown[i], own[i], "pixel {i} of green_0's tile");
    }
    let plain_alone = tile_pixels(&alone.render().unwrap(), 5, 5);
    let plain_shown = tile_pixels(&plain, 5, 5);
    assert!(
        footprint.iter().any(|&i| plain_shown[i] != plain_alone[i]),
        "unmarked, the others cover part of green_0"
    );
}

#[test]
fn the_text_view_gives_the_facing_on_screen() {
    let env = arranged(settings(), APART, Ball::Loose(Pos::new(8, 2)));
    let text = ObsRequest {
        text: true,
        ..ObsRequest::MASK_ONLY
    };
    let facing =
        |agent: usize| env.observe(agent, text).info.unwrap()[mosaic_core::FACING_INFO].clone();
    assert_eq!(facing(0), "right");
    assert_eq!(facing(2), "left");
    let mut turned = arranged(
        settings(),
        [(3, 3, 3), (3, 8, 1), (12, 3, 2), (12, 8, 2)],
        Ball::Loose(Pos::new(8, 2)),
    );
    assert_eq!(turned.observe(0, text).info.unwrap()["facing"], "up");
    assert_eq!(turned.observe(1, text).info.unwrap()["facing"], "down");
    act(&mut turned, &[RIGHT, NOOP, NOOP, NOOP]);
    assert_eq!(turned.observe(0, text).info.unwrap()["facing"], "right");
    assert!(turned.observe(0, ObsRequest::MASK_ONLY).info.is_none());
}

#[test]
fn agent_frame_is_the_rendered_view() {
    // blue_0 faces green_0, who carries the ball, one cell ahead.
    let players = [(7, 5, 0), (3, 8, 0), (6, 5, 0), (12, 8, 2)];
    for size in [3u32, 7] {
        let s = SoccerSettings {
            view_size: size,
            ..settings()
        };
        let env = arranged(s, players, Ball::Carried(0));
        let frame = env.observe(2, ObsRequest::ALL).frame.unwrap();
        let side = size * VIEW_TILE;
        assert_eq!((frame.width, frame.height), (side, side));
        let t = VIEW_TILE;
        let cell = |i: u32, j: u32| pixel(&frame, i * t + t / 2, j * t + t / 2);
        assert_eq!(
            cell(size / 2, size - 2),
            [255, 60, 60],
            "green_0 with the ball ahead"
        );
        assert_eq!(cell(size / 2, size - 1), [60, 80, 220], "the viewer itself");
        let png = frame.to_png().unwrap();
        assert_eq!(Frame::from_png(&png).unwrap(), *frame);
    }
}

#[test]
fn snapshot_restore_continues_identically() {
    let mut env = Soccer::new(SoccerSettings::default()).unwrap();
    env.reset(11).unwrap();
    let mut rng = seeded(5);
    let mut out = Transition::default();
    let mut random_actions = |n: usize| -> Vec<Vec<Option<Action>>> {
        (0..n)
            .map(|_| {
                (0..AGENTS)
                    .map(|_| Some(Action(rng.random_range(0..8))))
                    .collect()
            })
            .collect()
    };
    for actions in random_actions(40) {
        env.step(&actions, &mut out).unwrap();
    }
    let snapshot = env.snapshot().unwrap();
    let tail = random_actions(150);
    let play = |env: &mut Soccer| {
        let mut trace = Vec::new();
        let mut out = Transition::default();
        for actions in &tail {
            if env.acting().is_empty() {
                break;
            }
            env.step(actions, &mut out).unwrap();
            trace.push((out.clone(), env.observe(1, ObsRequest::ALL).symbolic));
        }
        (trace, env.metrics(), env.outcome())
    };
    let original = play(&mut env);
    let mut restored = Soccer::new(SoccerSettings::default()).unwrap();
    restored.restore(&snapshot).unwrap();
    assert_eq!(restored.steps(), 40);
    assert_eq!(play(&mut restored), original);
    assert!(!original.0.is_empty());
}

#[test]
fn restore_rejects_bad_snapshots() {
    let mut env = Soccer::new(SoccerSettings::default()).unwrap();
    env.reset(2).unwrap();
    let good = env.snapshot().unwrap();
    let mut other = Soccer::new(SoccerSettings {
        view_size: 7,
        ..SoccerSettings::default()
    })
    .unwrap();
    assert!(matches!(other.restore(&good), Err(EnvError::Restore(_))));
    assert!(matches!(
        env.restore(&Snapshot(b"not json".to_vec())),
        Err(EnvError::Restore(_))
    ));
    let mut value: serde_json::Value = serde_json::from_slice(&good.0).unwrap();
    value["game"]["players"][1]["pos"]["x"] = 40.into();
    let err = env
        .restore(&Snapshot(serde_json::to_vec(&value).unwrap()))
        .unwrap_err();
    assert!(
        err.to_string().contains("green_1 is off the pitch"),
        "{err}"
    );
    let mut value: serde_json::Value = serde_json::from_slice(&good.0).unwrap();
    value["game"]["ball"] = serde_json::json!({ "carried": 7 });
    assert!(
        env.restore(&Snapshot(serde_json::to_vec(&value).unwrap()))
            .is_err()
    );
    // Nothing was changed by the failed attempts.
    assert_eq!(env.snapshot().unwrap(), good);
}

/// Plays one episode with `policies[i]` for agent `i`; returns green's and blue's goals.
fn play_episode(policies: &mut [Box<dyn Policy>; AGENTS], seed: u64) -> [u32; 2] {
    let mut env = Soccer::new(SoccerSettings::default()).unwrap();
    env.reset(seed).unwrap();
    for (agent, policy) in policies.iter_mut().enumerate() {
        policy.reset(&AgentContext::new(seed, agent, AGENT_IDS[agent].into(), 8));
    }
    let mut out = Transition::default();
    let mut actions = vec![None; AGENTS];
    while !env.acting().is_empty() {
        for (agent, policy) in policies.iter_mut().enumerate() {
            let obs = env.observe(agent, policy.wants());
            actions[agent] = Some(policy.decide(&obs).action);
        }
        env.step(&actions, &mut out).unwrap();
    }
    env.score()
}

#[test]
fn scripted_team_beats_random_team() {
    for scripted_team in [0, 1] {
        let (mut wins, mut losses) = (0, 0);
        for seed in 0..20 {
            let mut policies: [Box<dyn Policy>; AGENTS] = std::array::from_fn(|agent| {
                if Lineup::TwoOnTwo.team_of(agent) == scripted_team {
                    Box::new(ScriptedSoccer::default()) as Box<dyn Policy>
                } else {
                    Box::new(Random::default())
                }
            });
            let score = play_episode(&mut policies, seed);
            let (ours, theirs) = (score[scripted_team], score[1 - scripted_team]);
            wins += u32::from(ours > theirs);
            losses += u32::from(ours < theirs);
        }
        assert!(
            wins >= 16 && losses <= 1,
            "scripted {}: {wins} wins, {losses} losses in 20",
            TEAMS[scripted_team]
        );
    }
}

#[test]
fn registry_builds_env_and_scripted_player() {
    let mut registry = mosaic_core::EnvRegistry::default();
    KINDS.into_iter().for_each(|kind| registry.register(kind));
    let kind = registry.get("soccer-2v2").unwrap();
    assert!(kind.settings.iter().any(|s| s.starts_with("view_size = 3")));
    let mut raw = Settings::new();
    raw.insert("view_size".into(), 7.into());
    let env = registry.make("soccer-2v2", &raw).unwrap();
    assert_eq!(
        env.spec().symbolic_shape,
        Some(vec![SymbolicLayout::new(Lineup::TwoOnTwo, 7).total_len()])
    );
    raw.insert("colour".into(), "red".into());
    let Err(err) = registry.make("soccer-2v2", &raw) else {
        panic!("unknown setting accepted")
    };
    assert!(err.message.contains("colour"), "{err:?}");

    let scripted = kind.scripted.unwrap();
    let player = scripted(&Settings::new(), &Settings::new()).unwrap();
    assert_eq!(player.paradigm(), Paradigm::Scripted);
    assert!(player.wants().symbolic);
    let mut slot = Settings::new();
    slot.insert("aggression".into(), 3.into());
    assert!(scripted(&Settings::new(), &slot).is_err());
}

#[test]
fn metrics_list_every_counter_per_team() {
    let env = Soccer::new(SoccerSettings::default()).unwrap();
    let metrics = env.metrics();
    let keys: Vec<_> = metrics.keys().map(String::as_str).collect();
    for key in [
        "goals_green",
        "goals_blue",
        "passes_green",
        "passes_blue",
        "steals_green",
        "steals_blue",
        "pickups_green",
        "pickups_blue",
    ] {
        assert!(keys.contains(&key), "{key} missing from {keys:?}");
    }
}
