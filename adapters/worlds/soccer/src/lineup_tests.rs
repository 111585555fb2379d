//! Tests of the 1v0, 1v1 and 3v3 lineups and of the `reference` observation mode.

use super::game::{Ball, Cell, DROP, FORWARD, Game, PICKUP, Pos};
use super::tests::{act, arranged_lineup, kinds, settings};
use super::*;
use mosaic_core::baseline::Random;
use mosaic_core::{AgentContext, Paradigm};

const NOOP: u32 = 0;

fn reference_settings() -> SoccerSettings {
    SoccerSettings {
        observation: ObservationMode::Reference,
        ..settings()
    }
}

#[test]
fn every_lineup_has_its_spec_agents_and_teams() {
    let expected: [(&str, &[&str], usize); 5] = [
        ("soccer-1v0", &["green_0"], 15),
        ("soccer-1v1", &["green_0", "blue_0"], 20),
        (
            "soccer-2v2",
            &["green_0", "green_1", "blue_0", "blue_1"],
            30,
        ),
        (
            "soccer-3v3",
            &[
                "green_0", "green_1", "green_2", "blue_0", "blue_1", "blue_2",
            ],
            40,
        ),
        ("soccer-0v1", &["blue_0"], 15),
    ];
    for (lineup, (name, ids, globals)) in Lineup::ALL.into_iter().zip(expected) {
        let env = Soccer::with_lineup(lineup, SoccerSettings::default()).unwrap();
        let spec = env.spec();
        assert_eq!(spec.name, name);
        let got: Vec<_> = spec.agents.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(got, ids);
        for agent in &spec.agents {
            assert!(agent.id.starts_with(agent.team.as_deref().unwrap()));
        }
        let teams = match lineup {
            Lineup::Solo => vec!["green"],
            Lineup::SoloBlue => vec!["blue"],
            _ => vec!["green", "blue"],
        };
        assert_eq!(spec.teams(), teams);
        assert_eq!(spec.symbolic_shape, Some(vec![globals + 27]), "{name}");
        assert_eq!(SymbolicLayout::new(lineup, 3).view(), globals);
        let reference = Soccer::with_lineup(lineup, reference_settings()).unwrap();
        assert_eq!(
            reference.spec().symbolic_shape,
            Some(vec![28]),
            "the reference observation does not depend on the team sizes"
        );
        assert_eq!(spec.action_labels, reference.spec().action_labels);
    }
}

#[test]
fn every_lineup_is_registered_with_a_scripted_player() {
    let mut registry = mosaic_core::EnvRegistry::default();
    KINDS.into_iter().for_each(|kind| registry.register(kind));
    for lineup in Lineup::ALL {
        let kind = registry.get(lineup.name()).unwrap();
        assert!(
            kind.settings
                .iter()
                .any(|s| s.starts_with("observation = \"mosaic\""))
        );
        let mut raw = Settings::new();
        raw.insert("observation".into(), "reference".into());
        let env = registry.make(lineup.name(), &raw).unwrap();
        assert_eq!(env.spec().agents.len(), lineup.agents());
        let player = (kind.scripted.unwrap())(&raw, &Settings::new()).unwrap();
        assert_eq!(player.paradigm(), Paradigm::Scripted);
    }
}

#[test]
fn reset_places_every_lineup_on_distinct_free_cells() {
    for lineup in Lineup::ALL {
        for seed in 0..50 {
            let game = Game::new(settings(), lineup, seed);
            game.validate().unwrap();
            assert_eq!(game.players.len(), lineup.agents());
            let Ball::Loose(ball) = game.ball else {
                panic!("ball starts carried")
            };
            for (i, p) in game.players.iter().enumerate() {
                assert_eq!(game.cell(p.pos), Cell::Empty);
                assert_ne!(p.pos, ball);
                assert!(game.players[..i].iter().all(|q| q.pos != p.pos));
            }
        }
    }
}

#[test]
fn without_a_teammate_drop_puts_the_ball_on_the_grass_in_front() {
    // green_0 carries, facing east onto grass; blue_0 far away.
    let mut env = arranged_lineup(
        Lineup::OneOnOne,
        settings(),
        &[(5, 5, 0), (12, 8, 2)],
        Ball::Carried(0),
    );
    let out = act(&mut env, &[DROP, NOOP]);
    assert_eq!(kinds(&out), ["drop"]);
    assert_eq!(env.game.ball, Ball::Loose(Pos::new(6, 5)));
    assert_eq!(env.metrics()["passes_green"], 0);
    // The loose ball blocks the way; picking it up again works.
    act(&mut env, &[FORWARD, NOOP]);
    assert_eq!(env.game.players[0].pos, Pos::new(5, 5));
    act(&mut env, &[PICKUP, NOOP]);
    assert_eq!(env.game.ball, Ball::Carried(0));

    // Nothing happens facing a wall, a goal cell, or a player.
    for (players, what) in [
        ([(5, 1, 3), (12, 8, 2)], "wall"),
        ([(13, 5, 0), (12, 8, 2)], "goal"),
        ([(5, 5, 0), (6, 5, 2)], "player"),
    ] {
        let mut env = arranged_lineup(Lineup::OneOnOne, settings(), &players, Ball::Carried(0));
        let out = act(&mut env, &[DROP, NOOP]);
        assert!(out.events.is_empty(), "{what}");
        assert_eq!(env.game.ball, Ball::Carried(0), "{what}");
    }
    // Alone on the pitch, the same.
    let mut solo = arranged_lineup(Lineup::Solo, settings(), &[(5, 5, 1)], Ball::Carried(0));
    act(&mut solo, &[DROP]);
    assert_eq!(solo.game.ball, Ball::Loose(Pos::new(5, 6)));
}

#[test]
fn in_3v3_a_pass_reaches_either_teammate() {
    let players = [
        (3, 3, 0),
        (3, 6, 0),
        (3, 9, 0),
        (12, 3, 2),
        (12, 6, 2),
        (12, 9, 2),
    ];
    let mut receivers = [0; 6];
    for seed in 0..40 {
        let mut env = arranged_lineup(Lineup::ThreeOnThree, settings(), &players, Ball::Carried(0));
        env.game.rng = mosaic_core::rng::seeded(seed);
        let out = act(&mut env, &[DROP, NOOP, NOOP, NOOP, NOOP, NOOP]);
        assert_eq!(kinds(&out), ["pass"]);
        let Ball::Carried(who) = env.game.ball else {
            panic!("the pass was lost")
        };
        receivers[who] += 1;
    }
    assert_eq!(receivers[0] + receivers[3] + receivers[4] + receivers[5], 0);
    assert!(receivers[1] > 5 && receivers[2] > 5, "{receivers:?}");
}

#[test]
fn in_3v3_a_goal_rewards_the_whole_team() {
    let players = [
        (13, 4, 0),
        (3, 6, 0),
        (3, 9, 0),
        (12, 3, 2),
        (12, 6, 2),
        (12, 9, 2),
    ];
    let mut env = arranged_lineup(Lineup::ThreeOnThree, settings(), &players, Ball::Carried(0));
    let out = act(&mut env, &[FORWARD, NOOP, NOOP, NOOP, NOOP, NOOP]);
    let reward = 1.0 + 255.0 * 0.05;
    assert_eq!(out.rewards, [reward, reward, reward, 0.0, 0.0, 0.0]);
    assert_eq!(env.score(), [1, 0]);
    env.game.teams[0].goals = 2;
    env.game.terminated = true;
    assert_eq!(
        env.outcome().unwrap(),
        [
            Outcome::Win,
            Outcome::Win,
            Outcome::Win,
            Outcome::Loss,
            Outcome::Loss,
            Outcome::Loss
        ]
    );
}

#[test]
fn alone_two_goals_win_and_running_out_of_time_loses() {
    let mut env = arranged_lineup(Lineup::Solo, settings(), &[(13, 4, 0)], Ball::Carried(0));
    env.game.teams[0].goals = 1;
    let out = act(&mut env, &[FORWARD]);
    assert_eq!(kinds(&out), ["goal"]);
    assert_eq!(out.terminated, [true]);
    assert_eq!(env.outcome(), Some(vec![Outcome::Win]));
    let metrics: Vec<_> = env.metrics().keys().cloned().collect();
    assert!(metrics.iter().all(|k| k.ends_with("_green")), "{metrics:?}");

    let short = SoccerSettings {
        max_steps: 3,
        ..settings()
    };
    let mut env = arranged_lineup(Lineup::Solo, short, &[(13, 4, 0)], Ball::Carried(0));
    for _ in 0..2 {
        act(&mut env, &[NOOP]);
        assert_eq!(env.outcome(), None);
    }
    env.game.teams[0].goals = 1;
    let out = act(&mut env, &[NOOP]);
    assert_eq!(out.truncated, [true]);
    assert_eq!(env.outcome(), Some(vec![Outcome::Loss]));
}

#[test]
fn mosaic_layout_places_teammates_then_opponents() {
    // 3v3: green_1 observes; teammates green_0, green_2; opponents blue_0..blue_2.
    let players = [
        (2, 2, 0),
        (4, 4, 1),
        (6, 6, 2),
        (8, 8, 3),
        (10, 2, 0),
        (12, 4, 1),
    ];
    let mut env = arranged_lineup(Lineup::ThreeOnThree, settings(), &players, Ball::Carried(5));
    env.game.teams[1].goals = 1;
    let shape = SymbolicLayout::new(Lineup::ThreeOnThree, 3);
    let data = env.observe(1, ObsRequest::SYMBOLIC).symbolic.unwrap().data;
    assert_eq!(data.len(), shape.total_len());
    assert_eq!(&data[..2], &[4.0, 4.0]);
    assert_eq!(data[layout::BALL + 2], layout::HOLDER_OPPONENT);
    let at = |offset: usize| (data[offset], data[offset + 1]);
    assert_eq!(at(shape.teammate(0)), (2.0, 2.0));
    assert_eq!(at(shape.teammate(1)), (6.0, 6.0));
    assert_eq!(at(shape.opponent(0)), (8.0, 8.0));
    assert_eq!(at(shape.opponent(2)), (12.0, 4.0));
    assert_eq!(data[shape.opponent(2) + layout::CARRYING], 1.0);
    assert_eq!(&data[shape.score()..shape.score() + 3], &[0.0, 1.0, 256.0]);

    // 1v0: no teammate or opponent block; the score follows the goals.
    let env = arranged_lineup(Lineup::Solo, settings(), &[(5, 5, 0)], Ball::Carried(0));
    let solo = SymbolicLayout::new(Lineup::Solo, 3);
    let data = env.observe(0, ObsRequest::SYMBOLIC).symbolic.unwrap().data;
    assert_eq!(solo.score(), layout::TEAMMATES);
    assert_eq!(&data[solo.score()..solo.view()], &[0.0, 0.0, 256.0]);
    assert_eq!(data[layout::BALL + 2], layout::HOLDER_SELF);
    // 1v1: one opponent block right after the goals.
    let env = arranged_lineup(
        Lineup::OneOnOne,
        settings(),
        &[(5, 5, 0), (9, 7, 3)],
        Ball::Carried(1),
    );
    let one = SymbolicLayout::new(Lineup::OneOnOne, 3);
    let data = env.observe(0, ObsRequest::SYMBOLIC).symbolic.unwrap().data;
    assert_eq!(one.opponent(0), layout::TEAMMATES);
    assert_eq!(
        &data[one.opponent(0)..one.score()],
        &[9.0, 7.0, 3.0, 1.0, 0.0]
    );
}

#[test]
fn reference_mode_is_the_view_then_the_direction_with_the_globals_in_info() {
    let players = [(7, 5, 0), (3, 8, 0), (6, 5, 0), (12, 8, 2)];
    for size in [3u32, 7] {
        let mosaic = SoccerSettings {
            view_size: size,
            ..settings()
        };
        let reference = SoccerSettings {
            observation: ObservationMode::Reference,
            ..mosaic
        };
        let lineup = Lineup::TwoOnTwo;
        let a = arranged_lineup(lineup, mosaic, &players, Ball::Carried(0));
        let b = arranged_lineup(lineup, reference, &players, Ball::Carried(0));
        let view = size as usize;
        let shape = SymbolicLayout::new(lineup, view);
        for (agent, &(_, _, dir)) in players.iter().enumerate() {
            let full = a
                .observe(agent, ObsRequest::SYMBOLIC)
                .symbolic
                .unwrap()
                .data;
            let obs = b.observe(agent, ObsRequest::SYMBOLIC);
            let data = obs.symbolic.unwrap().data;
            assert_eq!(data.len(), reference::len(view));
            assert_eq!(&data[..reference::direction(view)], &full[shape.view()..]);
            assert_eq!(data[reference::direction(view)], f32::from(dir));
            let globals: Vec<f32> =
                serde_json::from_value(obs.info.unwrap()[GLOBALS_INFO].clone()).unwrap();
            assert_eq!(globals, &full[..shape.view()]);
        }
    }
    // Nothing in info unless asked for the symbolic vector or the text.
    let env = arranged_lineup(
        Lineup::Solo,
        reference_settings(),
        &[(5, 5, 0)],
        Ball::Loose(Pos::new(8, 8)),
    );
    assert!(env.observe(0, ObsRequest::MASK_ONLY).info.is_none());
    let both = env.observe(0, ObsRequest::ALL).info.unwrap();
    assert!(both.get(GLOBALS_INFO).is_some() && both.get(mosaic_core::FACING_INFO).is_some());
}

#[test]
fn text_names_teammates_and_opponents_for_every_lineup() {
    let solo = arranged_lineup(
        Lineup::Solo,
        settings(),
        &[(5, 5, 0)],
        Ball::Loose(Pos::new(8, 8)),
    );
    let text = solo.observe(0, ObsRequest::ALL).text.unwrap();
    for needle in [
        "You are green_0 (team green) in 1v0 grid soccer. No teammates. No opponents.",
        "while carrying the ball; score 2 goals to win.",
        "Step 0 of 256. Score: green 0.",
        "drop (drop the ball on the grass in front of you)",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    let one = arranged_lineup(
        Lineup::OneOnOne,
        settings(),
        &[(5, 5, 0), (9, 5, 2)],
        Ball::Loose(Pos::new(8, 8)),
    );
    let text = one.observe(1, ObsRequest::ALL).text.unwrap();
    assert!(
        text.contains(
            "You are blue_0 (team blue) in 1v1 grid soccer. No teammates. Opponent: green_0."
        ),
        "{text}"
    );
    assert!(
        text.contains("green_0 (opponent): 4 ahead, facing east"),
        "{text}"
    );
    let players = [
        (2, 2, 0),
        (4, 4, 1),
        (6, 6, 2),
        (8, 8, 3),
        (10, 2, 0),
        (12, 4, 1),
    ];
    let three = arranged_lineup(
        Lineup::ThreeOnThree,
        settings(),
        &players,
        Ball::Loose(Pos::new(8, 2)),
    );
    let text = three.observe(4, ObsRequest::ALL).text.unwrap();
    for needle in [
        "in 3v3 grid soccer. Teammates: blue_0, blue_2. Opponents: green_0, green_1, green_2.",
        "Score: blue 0, green 0.",
        "pass the ball to one of your teammates (drawn at random)",
        "green_2 (opponent)",
        "blue_2 (teammate)",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn every_lineup_draws_its_players() {
    let players: [&[(i32, i32, u8)]; 4] = [
        &[(4, 6, 1)],
        &[(4, 6, 1), (10, 7, 2)],
        &[(4, 6, 1), (9, 2, 3), (10, 7, 2), (13, 4, 0)],
        &[
            (4, 6, 1),
            (9, 2, 3),
            (6, 8, 0),
            (10, 7, 2),
            (13, 4, 0),
            (11, 9, 3),
        ],
    ];
    let tile = PITCH_TILE;
    for (lineup, players) in Lineup::ALL.into_iter().zip(players) {
        let env = arranged_lineup(lineup, settings(), players, Ball::Loose(Pos::new(7, 3)));
        let frame = env.render().unwrap();
        assert_eq!((frame.width, frame.height), (16 * tile, 12 * tile));
        for (agent, (x, y, _)) in players.iter().enumerate() {
            let (px, py) = (
                *x as u32 * tile + tile / 2,
                (*y as u32 + 1) * tile + tile / 2,
            );
            let i = ((py * frame.width + px) * 3) as usize;
            let colour = [frame.rgb[i], frame.rgb[i + 1], frame.rgb[i + 2]];
            let expected = [[30, 200, 60], [60, 80, 220]][lineup.team_of(agent)];
            assert_eq!(colour, expected, "{} {agent}", lineup.name());
            let view = env.observe(agent, ObsRequest::ALL).frame.unwrap();
            assert_eq!(view.width, 3 * VIEW_TILE);
        }
        // Alone, the score bar shows green's discs only (looked at on the ring of blue's
        // first disc, which is blue whether scored or not).
        let ring = 16 * tile - tile / 2 - 4;
        let right_disc = ((tile / 2 * frame.width + ring) * 3) as usize;
        let blue_disc = frame.rgb[right_disc..right_disc + 3] != [30, 30, 30];
        assert_eq!(blue_disc, lineup.has_opponents(), "{}", lineup.name());
    }
}

#[test]
fn snapshots_restore_within_a_lineup_only() {
    let mut three = Soccer::with_lineup(Lineup::ThreeOnThree, SoccerSettings::default()).unwrap();
    three.reset(4).unwrap();
    act(&mut three, &[3, 3, 4, 5, 1, 2]);
    let snapshot = three.snapshot().unwrap();
    let mut restored =
        Soccer::with_lineup(Lineup::ThreeOnThree, SoccerSettings::default()).unwrap();
    restored.restore(&snapshot).unwrap();
    assert_eq!(restored.game, three.game);
    let mut two = Soccer::new(SoccerSettings::default()).unwrap();
    let err = two.restore(&snapshot).unwrap_err();
    assert!(err.to_string().contains("soccer-3v3"), "{err}");
    // A snapshot whose players do not fill the lineup is refused.
    let mut value: serde_json::Value = serde_json::from_slice(&snapshot.0).unwrap();
    value["game"]["players"].as_array_mut().unwrap().pop();
    let err = restored
        .restore(&Snapshot(serde_json::to_vec(&value).unwrap()))
        .unwrap_err();
    assert!(err.to_string().contains("5 players for 6 slots"), "{err}");
}

/// Plays one episode of `lineup` with the scripted player on `scripted_team` and random
/// players elsewhere, in `mode`; returns green's and blue's goals.
fn scripted_episode(
    lineup: Lineup,
    scripted_team: usize,
    mode: ObservationMode,
    seed: u64,
) -> [u32; 2] {
    let settings = SoccerSettings {
        observation: mode,
        ..SoccerSettings::default()
    };
    let mut env = Soccer::with_lineup(lineup, settings).unwrap();
    env.reset(seed).unwrap();
    let mut policies: Vec<Box<dyn Policy>> = (0..lineup.agents())
        .map(|agent| {
            if lineup.team_of(agent) == scripted_team {
                Box::new(ScriptedSoccer::new(lineup)) as Box<dyn Policy>
            } else {
                Box::new(Random::default())
            }
        })
        .collect();
    for (agent, policy) in policies.iter_mut().enumerate() {
        policy.reset(&AgentContext::new(
            seed,
            agent,
            lineup.agent_ids()[agent].into(),
            8,
        ));
    }
    let mut out = Transition::default();
    let mut actions = vec![None; lineup.agents()];
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
fn scripted_play_works_for_every_lineup_and_observation_mode() {
    for mode in [ObservationMode::Mosaic, ObservationMode::Reference] {
        // Alone, it scores its two goals in most episodes.
        let wins = (0..10)
            .filter(|seed| scripted_episode(Lineup::Solo, 0, mode, *seed)[0] >= 2)
            .count();
        assert!(wins >= 8, "{mode:?}: solo won {wins} of 10");
        for lineup in [Lineup::OneOnOne, Lineup::ThreeOnThree] {
            for scripted_team in [0, 1] {
                let (mut wins, mut losses) = (0, 0);
                for seed in 0..10 {
                    let score = scripted_episode(lineup, scripted_team, mode, seed);
                    let (ours, theirs) = (score[scripted_team], score[1 - scripted_team]);
                    wins += u32::from(ours > theirs);
                    losses += u32::from(ours < theirs);
                }
                assert!(
                    wins >= 8 && losses <= 1,
                    "{mode:?} {}: scripted {} won {wins}, lost {losses} of 10",
                    lineup.name(),
                    TEAMS[scripted_team]
                );
            }
        }
    }
}
