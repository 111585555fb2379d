use super::*;
use mosaic_core::baseline::Random;
use mosaic_core::{AgentContext, Decision, DecisionSource};

/// Plays `moves` (action indices) in turn from a fresh game; returns the game and the
/// transition of the last move.
fn play(rules: &'static BoardRules, moves: &[u32]) -> (BoardGame, Transition) {
    let mut game = BoardGame::new(rules);
    game.reset(0).unwrap();
    let mut out = Transition::default();
    for (i, &m) in moves.iter().enumerate() {
        assert!(
            game.outcome().is_none(),
            "game over before move {i} of {moves:?}"
        );
        let mover = game.acting()[0];
        let mut actions = [None, None];
        actions[mover] = Some(Action(m));
        game.step(&actions, &mut out).unwrap();
    }
    (game, out)
}

fn assert_won_by(rules: &'static BoardRules, moves: &[u32], winner: usize) {
    let (game, out) = play(rules, moves);
    let mut expected = [-1.0, -1.0];
    expected[winner] = 1.0;
    assert_eq!(out.rewards, expected, "{moves:?}");
    assert_eq!(out.terminated, [true, true]);
    assert_eq!(out.events[0].kind, "win");
    assert_eq!(out.events[0].agent, Some(winner));
    let mut outcome = vec![Outcome::Loss, Outcome::Loss];
    outcome[winner] = Outcome::Win;
    assert_eq!(game.outcome(), Some(outcome));
    assert!(game.acting().is_empty());
    // one move fewer is still a running game with no reward yet
    let (before, out) = play(rules, &moves[..moves.len() - 1]);
    assert_eq!(before.outcome(), None);
    assert_eq!(out.rewards, [0.0, 0.0]);
}

#[test]
fn connect_four_wins_in_every_direction() {
    // horizontal on the bottom row
    assert_won_by(&CONNECT_FOUR, &[0, 0, 1, 1, 2, 2, 3], 0);
    // vertical
    assert_won_by(&CONNECT_FOUR, &[0, 1, 0, 1, 0, 1, 0], 0);
    // rising diagonal: bottom of column 1 to height 4 of column 4
    assert_won_by(&CONNECT_FOUR, &[0, 1, 1, 2, 2, 3, 2, 3, 3, 6, 3], 0);
    // falling diagonal, the mirror image
    assert_won_by(&CONNECT_FOUR, &[6, 5, 5, 4, 4, 3, 4, 3, 3, 0, 3], 0);
    // the second player wins too
    assert_won_by(&CONNECT_FOUR, &[0, 1, 0, 1, 2, 1, 4, 1], 1);
    // a line completed in its middle counts
    assert_won_by(&CONNECT_FOUR, &[0, 0, 1, 1, 3, 3, 2], 0);
}

#[test]
fn tic_tac_toe_wins_in_every_direction() {
    // cells are numbered column by column: 0 = a1, 1 = a2, 3 = b1, 4 = b2, 6 = c1
    assert_won_by(&TIC_TAC_TOE, &[0, 1, 3, 2, 6], 0); // top row
    assert_won_by(&TIC_TAC_TOE, &[0, 3, 1, 4, 2], 0); // column a
    assert_won_by(&TIC_TAC_TOE, &[0, 1, 4, 2, 8], 0); // a1-b2-c3
    assert_won_by(&TIC_TAC_TOE, &[6, 0, 4, 1, 2], 0); // c1-b2-a3
    assert_won_by(&TIC_TAC_TOE, &[0, 4, 1, 3, 8, 5], 1); // middle column b
}

#[test]
fn full_boards_without_a_line_are_draws() {
    let connect_four_draw = [
        4, 3, 6, 0, 1, 4, 5, 5, 1, 1, 5, 0, 1, 6, 0, 1, 5, 5, 1, 0, 4, 6, 3, 2, 6, 6, 0, 4, 6, 5,
        2, 0, 4, 2, 4, 2, 2, 2, 3, 3, 3, 3,
    ];
    let tic_tac_toe_draw = [4, 0, 6, 2, 1, 7, 3, 5, 8];
    for (rules, moves) in [
        (&CONNECT_FOUR, &connect_four_draw[..]),
        (&TIC_TAC_TOE, &tic_tac_toe_draw[..]),
    ] {
        let (game, out) = play(rules, moves);
        assert!(game.board().is_full());
        assert_eq!(out.rewards, [0.0, 0.0]);
        assert_eq!(out.terminated, [true, true]);
        assert_eq!(out.events[0].kind, "draw");
        assert_eq!(game.outcome(), Some(vec![Outcome::Draw, Outcome::Draw]));
        assert_eq!(game.metrics()["winner"], "draw");
        assert_eq!(game.steps(), moves.len() as u32);
    }
}

#[test]
fn illegal_actions_are_rejected_without_changing_the_game() {
    let (mut game, _) = play(&CONNECT_FOUR, &[2, 2, 2, 2, 2, 2]);
    let before = game.snapshot().unwrap();
    let mut out = Transition::default();
    let invalid = |r: Result<(), EnvError>, agent_expected: usize, needle: &str| match r {
        Err(EnvError::InvalidAction { agent, reason }) => {
            assert_eq!(agent, agent_expected);
            assert!(reason.contains(needle), "{reason}");
        }
        other => panic!("expected InvalidAction, got {other:?}"),
    };
    invalid(
        game.step(&[Some(Action(2)), None], &mut out),
        0,
        "column 3 is not free",
    );
    invalid(
        game.step(&[Some(Action(7)), None], &mut out),
        0,
        "out of range",
    );
    invalid(
        game.step(&[None, Some(Action(0))], &mut out),
        1,
        "player_0's turn",
    );
    invalid(
        game.step(&[Some(Action(0)), Some(Action(1))], &mut out),
        1,
        "turn",
    );
    invalid(game.step(&[None, None], &mut out), 0, "no action");
    invalid(
        game.step(&[Some(Action(0))], &mut out),
        0,
        "1 actions given",
    );
    assert_eq!(game.snapshot().unwrap(), before);

    let (mut game, _) = play(&TIC_TAC_TOE, &[4]);
    invalid(
        game.step(&[None, Some(Action(4))], &mut out),
        1,
        "cell b2 is not free",
    );
}

#[test]
fn stepping_outside_a_running_game_is_an_error() {
    let mut out = Transition::default();
    let mut fresh = BoardGame::new(&TIC_TAC_TOE);
    assert!(fresh.acting().is_empty());
    assert!(matches!(
        fresh.step(&[Some(Action(0)), None], &mut out),
        Err(EnvError::NotRunning)
    ));
    let (mut over, _) = play(&TIC_TAC_TOE, &[0, 1, 3, 2, 6]);
    assert!(matches!(
        over.step(&[None, Some(Action(4))], &mut out),
        Err(EnvError::NotRunning)
    ));
}

#[test]
fn masks_follow_the_turn_and_full_columns() {
    let (game, _) = play(&CONNECT_FOUR, &[3, 3, 3, 3, 3, 3, 0]);
    assert_eq!(game.acting(), vec![1]);
    let mover = game.observe(1, ObsRequest::MASK_ONLY);
    assert_eq!(mover.legal, [true, true, true, false, true, true, true]);
    let waiting = game.observe(0, ObsRequest::MASK_ONLY);
    assert_eq!(waiting.legal, [false; 7]);
    assert_eq!(mover.step, 7);

    let (game, _) = play(&TIC_TAC_TOE, &[4, 0]);
    let legal: Vec<usize> = game
        .observe(0, ObsRequest::MASK_ONLY)
        .legal_actions()
        .map(Action::index)
        .collect();
    assert_eq!(legal, [1, 2, 3, 5, 6, 7, 8]);
    // a finished game offers nobody a move
    let (over, _) = play(&TIC_TAC_TOE, &[0, 1, 3, 2, 6]);
    for agent in 0..2 {
        assert!(
            over.observe(agent, ObsRequest::MASK_ONLY)
                .legal
                .iter()
                .all(|l| !l)
        );
    }
}

#[test]
fn symbolic_planes_use_pettingzoo_layouts() {
    // Connect Four: shape (6, 7, 2), row 0 at the top; a first piece lands in row 5
    let (game, _) = play(&CONNECT_FOUR, &[1]);
    let own = game.observe(0, ObsRequest::ALL).symbolic.unwrap();
    let other = game.observe(1, ObsRequest::ALL).symbolic.unwrap();
    assert_eq!(own.shape, [6, 7, 2]);
    let at = (5 * 7 + 1) * 2;
    assert_eq!((own.data[at], own.data[at + 1]), (1.0, 0.0));
    assert_eq!((other.data[at], other.data[at + 1]), (0.0, 1.0));
    assert_eq!(own.data.iter().sum::<f32>(), 1.0);

    // tic-tac-toe: PettingZoo reshapes its column-major squares, so index = action * 2
    let (game, _) = play(&TIC_TAC_TOE, &[1, 6]);
    let planes = game.observe(0, ObsRequest::ALL).symbolic.unwrap();
    assert_eq!(planes.shape, [3, 3, 2]);
    assert_eq!(planes.data[2], 1.0); // own mark on action 1 (cell a2)
    assert_eq!(planes.data[6 * 2 + 1], 1.0); // opponent's on action 6 (cell c1)
    let board = Board::from_planes(&TIC_TAC_TOE, &planes).unwrap();
    assert_eq!(board.mark(1, 0), Some(0));
    assert_eq!(board.mark(0, 2), Some(1));
    assert!(Board::from_planes(&CONNECT_FOUR, &planes).is_none());
}

#[test]
fn text_view_draws_the_board_and_names_the_moves() {
    let (game, _) = play(&CONNECT_FOUR, &[3, 3, 3, 3, 3, 3, 0]);
    let text = game.observe(1, ObsRequest::ALL).text.unwrap();
    assert!(text.contains("you are player_1 and play O"), "{text}");
    assert!(text.contains("It is your turn (move 8)"), "{text}");
    assert!(
        text.contains(
            "1 2 3 4 5 6 7\n. . . O . . .\n. . . X . . .\n. . . O . . .\n. . . X . . .\n. . . O . . .\nX . . X . . .\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("Legal moves: column 1, column 2, column 3, column 5, column 6, column 7."),
        "{text}"
    );
    let waiting = game.observe(0, ObsRequest::ALL).text.unwrap();
    assert!(waiting.contains("It is player_1's turn"), "{waiting}");
    assert!(waiting.contains("Legal moves: none."), "{waiting}");

    let (game, _) = play(&TIC_TAC_TOE, &[4, 0]);
    let text = game.observe(0, ObsRequest::ALL).text.unwrap();
    assert!(
        text.contains("  a b c\n1 O . .\n2 . X .\n3 . . .\n"),
        "{text}"
    );
    assert!(
        text.contains("cell a2, cell a3, cell b1, cell b3"),
        "{text}"
    );
    let (over, _) = play(&TIC_TAC_TOE, &[0, 1, 3, 2, 6]);
    assert!(
        over.observe(0, ObsRequest::ALL)
            .text
            .unwrap()
            .contains("you won")
    );
    assert!(
        over.observe(1, ObsRequest::ALL)
            .text
            .unwrap()
            .contains("player_1 won")
    );
}

#[test]
fn frames_show_the_marks_and_encode_to_png() {
    let (game, _) = play(&CONNECT_FOUR, &[0, 6]);
    let frame = game.render().unwrap();
    assert_eq!((frame.width, frame.height), (7 * 64, 6 * 64));
    let pixel = |f: &Frame, x: u32, y: u32| {
        let i = ((y * f.width + x) * 3) as usize;
        [f.rgb[i], f.rgb[i + 1], f.rgb[i + 2]]
    };
    assert_eq!(pixel(&frame, 32, 5 * 64 + 32), [220, 40, 40]); // player_0's disc
    assert_eq!(pixel(&frame, 6 * 64 + 32, 5 * 64 + 32), [245, 200, 30]);
    assert_eq!(pixel(&frame, 3 * 64 + 32, 32), [235, 235, 235]); // an empty hole
    let png = frame.to_png().unwrap();
    assert_eq!(Frame::from_png(&png).unwrap(), frame);

    let (game, _) = play(&TIC_TAC_TOE, &[4, 0]);
    let obs = game.observe(0, ObsRequest::ALL);
    let frame = obs.frame.unwrap();
    assert_eq!((frame.width, frame.height), (192, 192));
    assert_eq!(pixel(&frame, 64 + 32, 64 + 32), [30, 30, 30]); // the cross's centre
    assert_eq!(pixel(&frame, 32, 32 - 17), [200, 40, 40]); // on the nought's ring
    assert_eq!(pixel(&frame, 32, 32), [250, 250, 245]); // inside the ring
    frame.to_png().unwrap();
}

/// Random play (seeded per agent) from `seed`; returns every step's rewards and the last
/// text views.
fn random_game(rules: &'static BoardRules, seed: u64) -> (Vec<Vec<f32>>, Vec<String>) {
    let mut game = BoardGame::new(rules);
    game.reset(seed).unwrap();
    let mut players: Vec<Random> = (0..2).map(|_| Random::default()).collect();
    for (i, p) in players.iter_mut().enumerate() {
        p.reset(&AgentContext::new(seed, i, rules.agents[i].into(), 7));
    }
    let mut out = Transition::default();
    let mut rewards = Vec::new();
    while let Some(&mover) = game.acting().first() {
        let decision = players[mover].decide(&game.observe(mover, ObsRequest::MASK_ONLY));
        let mut actions = [None, None];
        actions[mover] = Some(decision.action);
        game.step(&actions, &mut out).unwrap();
        rewards.push(out.rewards.clone());
    }
    let texts = (0..2)
        .map(|a| game.observe(a, ObsRequest::ALL).text.unwrap())
        .collect();
    (rewards, texts)
}

#[test]
fn games_are_deterministic_given_seed_and_actions() {
    for rules in [&CONNECT_FOUR, &TIC_TAC_TOE] {
        for seed in 0..5 {
            assert_eq!(random_game(rules, seed), random_game(rules, seed));
        }
        assert_ne!(random_game(rules, 1), random_game(rules, 2));
    }
}

#[test]
fn snapshot_restore_continues_the_same_game() {
    let moves = [3, 2, 3, 4, 2, 4, 1, 5, 5, 0, 6, 6];
    let (mut original, _) = play(&CONNECT_FOUR, &moves[..6]);
    let snapshot = original.snapshot().unwrap();
    let mut restored = BoardGame::new(&CONNECT_FOUR);
    restored.restore(&snapshot).unwrap();
    assert_eq!(restored.acting(), original.acting());
    let (mut out_a, mut out_b) = (Transition::default(), Transition::default());
    for &m in &moves[6..] {
        let mover = original.acting()[0];
        let mut actions = [None, None];
        actions[mover] = Some(Action(m));
        original.step(&actions, &mut out_a).unwrap();
        restored.step(&actions, &mut out_b).unwrap();
        assert_eq!(out_a, out_b);
        for agent in 0..2 {
            assert_eq!(
                original.observe(agent, ObsRequest::ALL).text,
                restored.observe(agent, ObsRequest::ALL).text
            );
        }
    }
    assert_eq!(original.render(), restored.render());
    assert_eq!(original.steps(), restored.steps());
}

#[test]
fn broken_snapshots_are_refused_with_a_reason() {
    let (game, _) = play(&TIC_TAC_TOE, &[4]);
    let good: serde_json::Value = serde_json::from_slice(&game.snapshot().unwrap().0).unwrap();
    let mut target = BoardGame::new(&TIC_TAC_TOE);
    let refuse = |target: &mut BoardGame, value: serde_json::Value, needle: &str| {
        let bytes = serde_json::to_vec(&value).unwrap();
        match target.restore(&Snapshot(bytes)) {
            Err(EnvError::Restore(reason)) => assert!(reason.contains(needle), "{reason}"),
            other => panic!("expected a restore error, got {other:?}"),
        }
    };
    let mut wrong_game = good.clone();
    wrong_game["game"] = "connect-four".into();
    refuse(&mut target, wrong_game, "`connect-four` snapshot");
    let mut short = good.clone();
    short["cells"] = serde_json::json!([0, 0]);
    refuse(&mut target, short, "2 cells");
    let mut bad_mark = good.clone();
    bad_mark["cells"][0] = 7.into();
    refuse(&mut target, bad_mark, "cell value 7");
    let mut bad_turn = good;
    bad_turn["to_move"] = 2.into();
    refuse(&mut target, bad_turn, "agent index");
    assert!(matches!(
        target.restore(&Snapshot(b"not json".to_vec())),
        Err(EnvError::Restore(_))
    ));
    assert!(
        target.acting().is_empty(),
        "a refused snapshot starts nothing"
    );
}

#[test]
fn settings_are_checked() {
    let mut settings = Settings::new();
    assert!(make_connect_four(&settings).is_ok());
    settings.insert("rows".into(), 7.into());
    let err = make_tic_tac_toe(&settings).err().unwrap();
    assert!(err.message.contains("rows"), "{err}");
    assert!(scripted_connect_four(&Settings::new(), &settings).is_err());
}

fn heuristic_move(rules: &'static BoardRules, moves: &[u32], seed: u64) -> Decision {
    let (game, _) = play(rules, moves);
    let mover = game.acting()[0];
    let mut player = BoardHeuristic::new(rules);
    player.reset(&AgentContext::new(
        seed,
        mover,
        rules.agents[mover].into(),
        9,
    ));
    player.decide(&game.observe(mover, player.wants()))
}

#[test]
fn heuristic_wins_then_blocks_then_takes_the_centre() {
    // X (to move) can win on column 1 while O threatens column 5: winning comes first
    let d = heuristic_move(&CONNECT_FOUR, &[0, 4, 0, 4, 0, 4], 0);
    assert_eq!(
        (d.action, d.detail.unwrap()["rule"].clone()),
        (Action(0), "win".into())
    );
    // O must block X's open column
    let d = heuristic_move(&CONNECT_FOUR, &[0, 6, 0, 6, 0], 0);
    assert_eq!(
        (d.action, d.detail.unwrap()["rule"].clone()),
        (Action(0), "block".into())
    );
    // tic-tac-toe: X on a1 and b1 (actions 0, 3) wins on c1 (6); O blocks it there
    let d = heuristic_move(&TIC_TAC_TOE, &[0, 4, 3], 0);
    assert_eq!(
        (d.action, d.detail.unwrap()["rule"].clone()),
        (Action(6), "block".into())
    );
    // empty boards: the centre column and the centre cell, whatever the seed
    for seed in 0..10 {
        assert_eq!(heuristic_move(&CONNECT_FOUR, &[], seed).action, Action(3));
        assert_eq!(heuristic_move(&TIC_TAC_TOE, &[], seed).action, Action(4));
    }
    // with the centre taken, ties among the eight surrounding cells follow the seed
    let replies: std::collections::BTreeSet<u32> = (0..40)
        .map(|seed| heuristic_move(&TIC_TAC_TOE, &[4], seed).action.0)
        .collect();
    assert!(replies.len() > 3 && !replies.contains(&4), "{replies:?}");
    assert_eq!(
        heuristic_move(&TIC_TAC_TOE, &[4], 7).action,
        heuristic_move(&TIC_TAC_TOE, &[4], 7).action
    );
}

#[test]
fn heuristic_without_symbolic_view_falls_back_to_a_legal_move() {
    let (game, _) = play(&CONNECT_FOUR, &[3, 3, 3, 3, 3, 3]);
    let mut player = BoardHeuristic::new(&CONNECT_FOUR);
    player.reset(&AgentContext::new(0, 0, "player_0".into(), 7));
    let obs = game.observe(0, ObsRequest::MASK_ONLY);
    let d = player.decide(&obs);
    assert!(obs.is_legal(d.action));
    assert_eq!(d.source, DecisionSource::Error);
}

/// Heuristic against random over `games` games, alternating who moves first; returns
/// (heuristic wins, draws, heuristic losses).
fn heuristic_against_random(rules: &'static BoardRules, games: u64) -> (u32, u32, u32) {
    let (mut wins, mut draws, mut losses) = (0, 0, 0);
    for seed in 0..games {
        let heuristic_seat = (seed % 2) as usize;
        let mut game = BoardGame::new(rules);
        game.reset(seed).unwrap();
        let mut heuristic = BoardHeuristic::new(rules);
        let mut random = Random::default();
        let ctx = |agent: usize| {
            AgentContext::new(seed, agent, rules.agents[agent].into(), rules.num_actions())
        };
        heuristic.reset(&ctx(heuristic_seat));
        random.reset(&ctx(1 - heuristic_seat));
        let mut out = Transition::default();
        while let Some(&mover) = game.acting().first() {
            let obs = game.observe(mover, ObsRequest::ALL);
            let decision = if mover == heuristic_seat {
                heuristic.decide(&obs)
            } else {
                random.decide(&obs)
            };
            let mut actions = [None, None];
            actions[mover] = Some(decision.action);
            game.step(&actions, &mut out).unwrap();
        }
        match game.outcome().unwrap()[heuristic_seat] {
            Outcome::Win => wins += 1,
            Outcome::Draw => draws += 1,
            Outcome::Loss => losses += 1,
        }
    }
    (wins, draws, losses)
}

#[test]
fn heuristic_clearly_beats_random_play() {
    let (wins, _, losses) = heuristic_against_random(&CONNECT_FOUR, 200);
    assert!(
        wins >= 180 && losses <= 10,
        "connect four: {wins} wins, {losses} losses"
    );
    let (wins, _, losses) = heuristic_against_random(&TIC_TAC_TOE, 200);
    assert!(
        wins >= 160 && losses <= 10,
        "tic-tac-toe: {wins} wins, {losses} losses"
    );
}

#[test]
fn registered_with_their_heuristics() {
    let mut registry = mosaic_core::EnvRegistry::default();
    KINDS.into_iter().for_each(|kind| registry.register(kind));
    for name in ["connect-four", "tic-tac-toe"] {
        let kind = registry.get(name).unwrap();
        let scripted = kind.scripted.unwrap();
        let mut env = registry.make(name, &Settings::new()).unwrap();
        assert_eq!(env.spec().name, name);
        assert_eq!(env.spec().stepping, Stepping::Sequential);
        let mut players: Vec<Box<dyn Policy>> = (0..2)
            .map(|_| scripted(&Settings::new(), &Settings::new()).unwrap())
            .collect();
        env.reset(4).unwrap();
        for (i, player) in players.iter_mut().enumerate() {
            let id = env.spec().agents[i].id.clone();
            player.reset(&AgentContext::new(4, i, id, env.spec().action_labels.len()));
        }
        let mut out = Transition::default();
        while let [mover] = env.acting()[..] {
            let obs = env.observe(mover, players[mover].wants());
            let decision = players[mover].decide(&obs);
            assert_eq!(decision.source, DecisionSource::Policy);
            let mut actions = [None, None];
            actions[mover] = Some(decision.action);
            env.step(&actions, &mut out).unwrap();
        }
        assert!(env.outcome().is_some(), "{name} finished");
    }
}
