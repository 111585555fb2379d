use super::*;
use mosaic_core::AgentContext;
use mosaic_core::baseline::Random;
use serde_json::Value;

fn settings(value: Value) -> Settings {
    value.as_object().cloned().unwrap_or_default()
}

fn env(value: Value) -> Gridworld {
    Gridworld::from_settings(&settings(value)).unwrap()
}

fn step(env: &mut Gridworld, action: GridAction) -> Transition {
    let mut out = Transition::default();
    env.step(&[Some(action.action())], &mut out).unwrap();
    out
}

fn state(env: &Gridworld) -> &State {
    env.state.as_ref().unwrap()
}

/// A grid from MiniGrid's full encoding, row-major `[y][x][channel]`.
fn grid_from_codes(size: i32, codes: &[Value]) -> Grid {
    let mut grid = Grid::new(size);
    for y in 0..size {
        for x in 0..size {
            let at = ((y * size + x) * 3) as usize;
            let code = [0, 1, 2].map(|c| codes[at + c].as_u64().unwrap() as u8);
            grid.set(Pos::new(x, y), Tile::decode(code).unwrap());
        }
    }
    grid
}

fn grid_codes(grid: &Grid) -> Vec<u64> {
    let size = grid.size();
    (0..size)
        .flat_map(|y| (0..size).map(move |x| Pos::new(x, y)))
        .flat_map(|pos| grid.get(pos).encode())
        .map(u64::from)
        .collect()
}

fn numbers(value: &Value) -> Vec<u64> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

fn pos_of(value: &Value) -> Pos {
    Pos::new(
        value[0].as_i64().unwrap() as i32,
        value[1].as_i64().unwrap() as i32,
    )
}

#[test]
fn views_match_minigrid() {
    // Agent views computed by MiniGrid's gen_obs (see testdata/make_minigrid_fixtures.py).
    let cases: Vec<Value> =
        serde_json::from_str(include_str!("testdata/minigrid_views.json")).unwrap();
    assert_eq!(cases.len(), 54);
    for (i, case) in cases.iter().enumerate() {
        let size = case["size"].as_i64().unwrap() as i32;
        let grid = grid_from_codes(size, case["grid"].as_array().unwrap());
        let carrying = match &case["carrying"] {
            Value::Null => None,
            code => match Tile::decode([0, 1, 2].map(|c| code[c].as_u64().unwrap() as u8)) {
                Some(Tile::Item(item)) => Some(item),
                other => panic!("case {i}: carried {other:?}"),
            },
        };
        let view = View::of(
            &grid,
            pos_of(&case["agent"]),
            case["dir"].as_u64().unwrap() as u8,
            carrying,
            case["see_through_walls"].as_bool().unwrap(),
        );
        let mut image = Vec::new();
        view.encode_into(&mut image);
        let ours: Vec<u64> = image.iter().map(|v| *v as u64).collect();
        assert_eq!(ours, numbers(&case["image"]), "case {i}");
    }
}

#[test]
fn dynamics_match_minigrid() {
    // Episodes played in MiniGrid with recorded actions, replayed here from the same start.
    let cases: Vec<Value> =
        serde_json::from_str(include_str!("testdata/minigrid_trajectories.json")).unwrap();
    let mut successes = 0;
    for (i, case) in cases.iter().enumerate() {
        let size = case["size"].as_i64().unwrap() as i32;
        let task = match case["task"].as_str().unwrap() {
            "doorkey" => Task::DoorKey,
            _ => Task::GoTo,
        };
        let config = GridworldConfig {
            max_steps: case["max_steps"].as_u64().unwrap() as u32,
            ..GridworldConfig::sized(task, size as u32)
        };
        let mut env = Gridworld::new(config).unwrap();
        let mission = Mission::parse(case["mission"].as_str().unwrap()).unwrap();
        let target = (!case["target"].is_null()).then(|| pos_of(&case["target"]));
        env.state = Some(State::new(
            grid_from_codes(size, case["grid"].as_array().unwrap()),
            pos_of(&case["agent"]),
            case["dir"].as_u64().unwrap() as u8,
            mission,
            target,
        ));
        let images: Vec<(usize, Vec<u64>)> = case["images"]
            .as_array()
            .unwrap()
            .iter()
            .map(|pair| (pair[0].as_u64().unwrap() as usize, numbers(&pair[1])))
            .collect();
        for (t, record) in case["steps"].as_array().unwrap().iter().enumerate() {
            let expect = |k: usize| record[k].as_f64().unwrap();
            let action = GridAction::ALL[expect(0) as usize];
            let out = step(&mut env, action);
            let s = state(&env);
            let carried = s.carrying.map_or(0, |item| Tile::Item(item).encode()[0]);
            let ours = (s.agent.x, s.agent.y, s.direction, carried);
            let theirs = (
                expect(1) as i32,
                expect(2) as i32,
                expect(3) as u8,
                expect(4) as u8,
            );
            assert_eq!(ours, theirs, "case {i} step {t} ({action:?})");
            assert!(
                (f64::from(out.rewards[0]) - expect(5)).abs() < 1e-5,
                "case {i} step {t}"
            );
            assert_eq!(out.terminated[0], expect(6) == 1.0, "case {i} step {t}");
            assert_eq!(out.truncated[0], expect(7) == 1.0, "case {i} step {t}");
            if let Some((_, image)) = images.iter().find(|(at, _)| *at == t) {
                let obs = env.observe(0, ObsRequest::ALL);
                let ours: Vec<u64> = obs.symbolic.unwrap().data[..SYMBOLIC_LEN - 1]
                    .iter()
                    .map(|v| *v as u64)
                    .collect();
                assert_eq!(&ours, image, "case {i} view after step {t}");
            }
            if expect(5) > 0.0 {
                successes += 1;
            }
        }
        assert!(env.acting().is_empty(), "case {i} ended");
        assert_eq!(
            grid_codes(&state(&env).grid),
            numbers(&case["final_grid"]),
            "case {i} final grid"
        );
    }
    assert!(
        successes >= 5,
        "the fixtures exercise success ({successes})"
    );
}

#[test]
fn settings_have_minigrid_defaults_and_are_checked() {
    let doorkey = env(serde_json::json!({}));
    assert_eq!(
        *doorkey.config(),
        GridworldConfig {
            task: Task::DoorKey,
            size: 5,
            max_steps: 250,
            objects: 2
        }
    );
    let goto = env(serde_json::json!({ "task": "goto" }));
    assert_eq!((goto.config().size, goto.config().max_steps), (6, 180));
    let custom =
        env(serde_json::json!({ "task": "goto", "size": 10, "max_steps": 77, "objects": 5 }));
    assert_eq!(
        (
            custom.config().size,
            custom.config().max_steps,
            custom.config().objects
        ),
        (10, 77, 5)
    );
    assert_eq!(custom.spec().max_steps, Some(77));
    for (bad, field) in [
        (serde_json::json!({ "task": "maze" }), "maze"),
        (serde_json::json!({ "sise": 8 }), "sise"),
        (serde_json::json!({ "size": 4 }), "size"),
        (serde_json::json!({ "size": 17 }), "size"),
        (serde_json::json!({ "max_steps": 0 }), "max_steps"),
        (serde_json::json!({ "objects": 3 }), "objects"),
        (
            serde_json::json!({ "task": "goto", "objects": 0 }),
            "objects",
        ),
        (
            serde_json::json!({ "task": "goto", "size": 5, "objects": 9 }),
            "objects",
        ),
    ] {
        let err = Gridworld::from_settings(&settings(bad.clone()))
            .err()
            .unwrap();
        assert!(
            err.path == field || err.message.contains(field),
            "{bad}: {err}"
        );
    }
    let planner = GridPlanner::from_settings(
        &Settings::new(),
        &settings(serde_json::json!({ "depth": 3 })),
    );
    assert!(planner.is_err());
}

#[test]
fn doorkey_layouts_follow_minigrid() {
    for size in [5, 6, 8, 16] {
        let mut env = env(serde_json::json!({ "size": size }));
        for seed in 0..40 {
            env.reset(seed).unwrap();
            let s = state(&env);
            let split = (2..size - 2)
                .find(|&x| {
                    (0..size).all(|y| {
                        !s.grid.get(Pos::new(x, y)).can_overlap()
                            && s.grid.get(Pos::new(x, y)) != Tile::Empty
                    })
                })
                .expect("a splitting wall");
            let doors: Vec<i32> = (0..size)
                .filter(|&y| matches!(s.grid.get(Pos::new(split, y)), Tile::Door { .. }))
                .collect();
            assert_eq!(doors.len(), 1);
            assert!((1..size - 2).contains(&doors[0]), "door row {}", doors[0]);
            assert_eq!(
                s.grid.get(Pos::new(split, doors[0])),
                Tile::Door {
                    colour: Colour::Yellow,
                    state: DoorState::Locked
                }
            );
            assert_eq!(s.grid.get(Pos::new(size - 2, size - 2)), Tile::Goal);
            let key = Tile::Item(Item {
                kind: ItemKind::Key,
                colour: Colour::Yellow,
            });
            let keys: Vec<Pos> = (0..size)
                .flat_map(|y| (0..size).map(move |x| Pos::new(x, y)))
                .filter(|p| s.grid.get(*p) == key)
                .collect();
            assert_eq!(keys.len(), 1);
            assert!(keys[0].x < split && s.agent.x < split && s.agent != keys[0]);
            assert_eq!(s.grid.get(s.agent), Tile::Empty);
            for i in 0..size {
                for p in [
                    Pos::new(i, 0),
                    Pos::new(0, i),
                    Pos::new(size - 1, i),
                    Pos::new(i, size - 1),
                ] {
                    assert_eq!(s.grid.get(p), Tile::Wall);
                }
            }
            assert_eq!(env.mission().unwrap(), DOORKEY_MISSION);
        }
    }
}

#[test]
fn goto_layouts_follow_minigrid() {
    let mut env = env(serde_json::json!({ "task": "goto", "size": 8, "objects": 4 }));
    let mut targets = std::collections::BTreeSet::new();
    for seed in 0..60 {
        env.reset(seed).unwrap();
        let s = state(&env);
        let items: Vec<(Pos, Item)> = (0..8)
            .flat_map(|y| (0..8).map(move |x| Pos::new(x, y)))
            .filter_map(|p| match s.grid.get(p) {
                Tile::Item(item) => Some((p, item)),
                _ => None,
            })
            .collect();
        assert_eq!(items.len(), 4);
        let distinct: std::collections::BTreeSet<Item> = items.iter().map(|(_, i)| *i).collect();
        assert_eq!(distinct.len(), 4, "objects differ in kind or colour");
        let Mission::GoTo(target) = s.mission else {
            panic!("goto mission expected")
        };
        let at = s.target.unwrap();
        assert_eq!(s.grid.get(at), Tile::Item(target));
        assert_eq!(s.grid.get(s.agent), Tile::Empty);
        targets.insert(target);
    }
    assert!(targets.len() > 10, "targets vary: {targets:?}");
}

/// A 6x6 DoorKey-like room: wall at x = 3 with a locked door at (3, 2), the goal at (4, 4),
/// the agent at (1, 2) facing east, a yellow key at (2, 2) in front of it.
fn small_room() -> Gridworld {
    let mut env = env(serde_json::json!({ "size": 6, "max_steps": 40 }));
    let mut grid = Grid::new(6);
    grid.wall_border();
    for y in 0..6 {
        grid.set(Pos::new(3, y), Tile::Wall);
    }
    grid.set(
        Pos::new(3, 2),
        Tile::Door {
            colour: Colour::Yellow,
            state: DoorState::Locked,
        },
    );
    grid.set(Pos::new(4, 4), Tile::Goal);
    grid.set(
        Pos::new(2, 2),
        Tile::Item(Item {
            kind: ItemKind::Key,
            colour: Colour::Yellow,
        }),
    );
    env.state = Some(State::new(grid, Pos::new(1, 2), 0, Mission::DoorKey, None));
    env
}

#[test]
fn doorkey_rules_pickup_unlock_and_goal() {
    let mut env = small_room();
    use GridAction::*;
    // blocked by the key: forward does nothing
    step(&mut env, Forward);
    assert_eq!(state(&env).agent, Pos::new(1, 2));
    // toggling a non-door does nothing; dropping with empty hands does nothing
    step(&mut env, Toggle);
    step(&mut env, Drop);
    let out = step(&mut env, Pickup);
    assert_eq!(out.events[0].kind, "pickup");
    assert_eq!(
        state(&env).carrying,
        Some(Item {
            kind: ItemKind::Key,
            colour: Colour::Yellow
        })
    );
    // a second pickup with full hands does nothing
    step(&mut env, Forward);
    assert_eq!(state(&env).agent, Pos::new(2, 2));
    // the door is locked: forward is blocked, toggle with the key unlocks and opens it
    step(&mut env, Forward);
    assert_eq!(state(&env).agent, Pos::new(2, 2));
    let out = step(&mut env, Toggle);
    assert_eq!(out.events[0].kind, "unlock");
    assert_eq!(
        state(&env).grid.get(Pos::new(3, 2)),
        Tile::Door {
            colour: Colour::Yellow,
            state: DoorState::Open
        }
    );
    // an unlocked door closes and opens again with toggle
    step(&mut env, Toggle);
    assert!(matches!(
        state(&env).grid.get(Pos::new(3, 2)),
        Tile::Door {
            state: DoorState::Closed,
            ..
        }
    ));
    step(&mut env, Toggle);
    for action in [Forward, Forward, Right, Forward] {
        let out = step(&mut env, action);
        assert_eq!(out.rewards[0], 0.0);
    }
    assert_eq!(
        (state(&env).agent, state(&env).direction),
        (Pos::new(4, 3), 1)
    );
    // done is a no-op in doorkey
    step(&mut env, Done);
    assert!(!env.acting().is_empty());
    let out = step(&mut env, Forward);
    let steps = 15.0;
    assert!(
        (out.rewards[0] - (1.0 - 0.9 * steps / 40.0)).abs() < 1e-6,
        "{:?}",
        out.rewards
    );
    assert_eq!((out.terminated[0], out.truncated[0]), (true, false));
    assert_eq!(out.events.last().unwrap().kind, "success");
    assert_eq!(env.outcome(), Some(vec![Outcome::Win]));
    assert_eq!(env.metrics()["success"], true);
    assert!(env.acting().is_empty());
    assert!(matches!(
        env.step(&[Some(Action(0))], &mut Transition::default()),
        Err(EnvError::NotRunning)
    ));
}

#[test]
fn drop_puts_the_item_in_front_only_on_free_floor() {
    let mut env = small_room();
    use GridAction::*;
    step(&mut env, Pickup);
    step(&mut env, Left); // facing north: (1, 1) is free floor
    let out = step(&mut env, Drop);
    assert_eq!(out.events[0].kind, "drop");
    assert_eq!(state(&env).carrying, None);
    assert!(matches!(
        state(&env).grid.get(Pos::new(1, 1)),
        Tile::Item(_)
    ));
    step(&mut env, Pickup);
    step(&mut env, Left); // facing west: a wall
    step(&mut env, Drop);
    assert!(state(&env).carrying.is_some(), "cannot drop onto a wall");
}

fn goto_room(agent: Pos) -> Gridworld {
    let mut env = env(serde_json::json!({ "task": "goto", "size": 6 }));
    let mut grid = Grid::new(6);
    grid.wall_border();
    let ball = Item {
        kind: ItemKind::Ball,
        colour: Colour::Red,
    };
    let boxed = Item {
        kind: ItemKind::Box,
        colour: Colour::Blue,
    };
    grid.set(Pos::new(3, 3), Tile::Item(ball));
    grid.set(Pos::new(1, 1), Tile::Item(boxed));
    env.state = Some(State::new(
        grid,
        agent,
        0,
        Mission::GoTo(ball),
        Some(Pos::new(3, 3)),
    ));
    env
}

#[test]
fn goto_rewards_done_next_to_the_target_facing_any_way() {
    for (agent, direction, success) in [
        (Pos::new(2, 3), 0, true),  // west of it, facing it
        (Pos::new(3, 4), 1, true),  // south of it, facing away
        (Pos::new(3, 2), 3, true),  // north of it, facing away
        (Pos::new(2, 2), 0, false), // diagonal
        (Pos::new(1, 3), 0, false), // two cells away
    ] {
        let mut env = goto_room(agent);
        env.state.as_mut().unwrap().direction = direction;
        let out = step(&mut env, GridAction::Done);
        assert!(out.terminated[0], "done ends the episode");
        assert_eq!(out.rewards[0] > 0.0, success, "{agent:?}");
        if success {
            assert!((out.rewards[0] - (1.0 - 0.9 / 180.0)).abs() < 1e-6);
            assert_eq!(env.outcome(), Some(vec![Outcome::Win]));
        } else {
            assert_eq!(env.outcome(), Some(vec![Outcome::Loss]));
        }
    }
}

#[test]
fn goto_toggle_ends_the_episode_and_opens_boxes() {
    let mut env = goto_room(Pos::new(2, 1));
    env.state.as_mut().unwrap().direction = 2; // facing the box at (1, 1)
    let out = step(&mut env, GridAction::Toggle);
    assert_eq!((out.terminated[0], out.rewards[0]), (true, 0.0));
    assert_eq!(state(&env).grid.get(Pos::new(1, 1)), Tile::Empty);
    assert_eq!(env.outcome(), Some(vec![Outcome::Loss]));
}

#[test]
fn episodes_truncate_at_max_steps() {
    let mut env = env(serde_json::json!({ "max_steps": 3 }));
    env.reset(0).unwrap();
    for _ in 0..2 {
        let out = step(&mut env, GridAction::Left);
        assert!(!out.truncated[0]);
    }
    let out = step(&mut env, GridAction::Left);
    assert_eq!((out.terminated[0], out.truncated[0]), (false, true));
    assert!(env.acting().is_empty());
    assert_eq!(env.outcome(), Some(vec![Outcome::Loss]));
    assert_eq!(env.metrics()["steps"], 3);
}

#[test]
fn malformed_actions_are_rejected() {
    let mut out = Transition::default();
    let mut fresh = env(serde_json::json!({}));
    assert!(matches!(
        fresh.step(&[Some(Action(0))], &mut out),
        Err(EnvError::NotRunning)
    ));
    fresh.reset(1).unwrap();
    for (actions, needle) in [
        (vec![Some(Action(7))], "out of range"),
        (vec![None], "no action"),
        (vec![Some(Action(0)), None], "2 actions"),
        (vec![], "0 actions"),
    ] {
        match fresh.step(&actions, &mut out) {
            Err(EnvError::InvalidAction { agent: 0, reason }) => {
                assert!(reason.contains(needle), "{reason}")
            }
            other => panic!("{actions:?}: {other:?}"),
        }
    }
    assert_eq!(fresh.steps(), 0, "rejected actions take no step");
}

#[test]
fn observations_symbolic_info_and_mask() {
    let mut env = small_room();
    let obs = env.observe(0, ObsRequest::ALL);
    let symbolic = obs.symbolic.unwrap();
    assert_eq!(symbolic.shape, [SYMBOLIC_LEN]);
    assert_eq!(symbolic.data.len(), SYMBOLIC_LEN);
    assert_eq!(symbolic.data[SYMBOLIC_LEN - 1], 0.0, "facing east");
    let at = |vx: usize, vy: usize| {
        let i = (vx * VIEW + vy) * 3;
        [symbolic.data[i], symbolic.data[i + 1], symbolic.data[i + 2]]
    };
    assert_eq!(at(3, 5), [5.0, 4.0, 0.0], "the yellow key ahead");
    assert_eq!(at(3, 4), [4.0, 4.0, 2.0], "the locked door behind it");
    assert_eq!(at(3, 6), [1.0, 0.0, 0.0], "empty hands");
    assert_eq!(
        at(3, 3),
        [0.0, 0.0, 0.0],
        "behind the closed door is unseen"
    );
    assert_eq!(obs.legal, [true; 7]);
    let info = obs.info.unwrap();
    assert_eq!(info["agent_pos"], serde_json::json!([1, 2]));
    assert_eq!(info["agent_dir"], 0);
    assert_eq!(info["mission"], DOORKEY_MISSION);

    step(&mut env, GridAction::Pickup);
    let symbolic = env.observe(0, ObsRequest::SYMBOLIC).symbolic.unwrap();
    let agent_cell = (3 * VIEW + 6) * 3;
    assert_eq!(
        symbolic.data[agent_cell..agent_cell + 3],
        [5.0, 4.0, 0.0],
        "carried key"
    );

    let bare = env.observe(0, ObsRequest::MASK_ONLY);
    assert!(
        bare.symbolic.is_none()
            && bare.text.is_none()
            && bare.frame.is_none()
            && bare.info.is_none()
    );
    let other = env.observe(1, ObsRequest::ALL);
    assert!(other.symbolic.is_none() && other.legal.iter().all(|l| !l));
}

#[test]
fn text_view_is_egocentric() {
    let env = small_room();
    let text = env.observe(0, ObsRequest::ALL).text.unwrap();
    assert!(
        text.contains("Mission: use the key to open the door and then get to the goal."),
        "{text}"
    );
    assert!(
        text.contains("Step 0 of 40. You face east. You carry nothing."),
        "{text}"
    );
    assert!(
        text.contains("Ahead: a yellow key, right in front of you."),
        "{text}"
    );
    assert!(
        text.contains("Left: empty floor. Right: empty floor."),
        "{text}"
    );
    assert!(text.contains("- a yellow key: 1 cell ahead\n"), "{text}");
    assert!(
        text.contains("- a locked yellow door: 2 cells ahead\n"),
        "{text}"
    );
    assert!(
        !text.contains("goal square:"),
        "the goal is hidden behind the wall: {text}"
    );
    assert!(
        text.contains("Legal actions: left (turn left), right (turn right), forward"),
        "{text}"
    );
    assert!(
        text.ends_with("done (declare the mission complete).\n"),
        "{text}"
    );

    let mut env = goto_room(Pos::new(1, 4));
    env.state.as_mut().unwrap().direction = 3; // north, through walls in goto
    let text = env.observe(0, ObsRequest::ALL).text.unwrap();
    assert!(text.contains("Mission: go to the red ball."), "{text}");
    assert!(
        text.contains("Ahead: 2 free cells, then a blue box."),
        "{text}"
    );
    assert!(text.contains("Left: a wall. Right: empty floor."), "{text}");
    assert!(
        text.contains("- a red ball: 1 cell ahead and 2 cells to your right\n"),
        "{text}"
    );
    assert!(text.contains("- a blue box: 3 cells ahead\n"), "{text}");
    step(&mut env, GridAction::Forward);
    step(&mut env, GridAction::Forward);
    step(&mut env, GridAction::Pickup);
    let text = env.observe(0, ObsRequest::ALL).text.unwrap();
    assert!(text.contains("You carry a blue box."), "{text}");
    assert!(text.contains("Ahead: 1 free cell, then a wall."), "{text}");
}

#[test]
fn frames_draw_the_grid_and_encode_to_png() {
    let env = small_room();
    let frame = env.render().unwrap();
    assert_eq!((frame.width, frame.height), (6 * 32, 6 * 32));
    let pixel = |x: u32, y: u32| {
        let i = ((y * frame.width + x) * 3) as usize;
        [frame.rgb[i], frame.rgb[i + 1], frame.rgb[i + 2]]
    };
    assert_eq!(pixel(4 * 32 + 16, 4 * 32 + 16), [0, 255, 0], "goal");
    assert_eq!(pixel(16, 16), [100, 100, 100], "wall");
    assert_eq!(pixel(32 + 12, 2 * 32 + 16), [255, 0, 0], "agent");
    assert_eq!(pixel(2 * 32 + 18, 2 * 32 + 20), [255, 255, 0], "key");
    assert_eq!(
        pixel(3 * 32 + 2, 2 * 32 + 2),
        [114, 114, 0],
        "locked door inside"
    );
    assert_eq!(pixel(32 + 16, 32 + 16), [76, 76, 76], "floor in view");
    assert_eq!(
        pixel(4 * 32 + 16, 32 + 16),
        [0, 0, 0],
        "floor hidden behind the wall"
    );
    let png = frame.to_png().unwrap();
    assert_eq!(Frame::from_png(&png).unwrap(), frame);
    let obs = env.observe(0, ObsRequest::ALL);
    assert_eq!(*obs.frame.unwrap(), frame);
}

#[test]
fn a_marked_agent_is_framed_on_its_tile() {
    let mut env = small_room();
    let plain = env.render().unwrap();
    assert_eq!(env.render_marked(&[]).unwrap(), plain);
    let marked = env.render_marked(&[0]).unwrap();
    let pixel = |frame: &Frame, x: u32, y: u32| {
        let i = ((y * frame.width + x) * 3) as usize;
        [frame.rgb[i], frame.rgb[i + 1], frame.rgb[i + 2]]
    };
    let mark = mosaic_core::canvas::MARK;
    // The agent stands at (1, 2), 32-pixel tiles, four-pixel frame.
    for (x, y) in [
        (32, 64),
        (32 + 31, 64 + 16),
        (32 + 3, 64 + 3),
        (32 + 16, 64 + 31),
    ] {
        assert_eq!(pixel(&marked, x, y), mark, "({x}, {y})");
        assert_ne!(pixel(&plain, x, y), mark, "({x}, {y})");
    }
    assert_eq!(
        pixel(&marked, 32 + 12, 64 + 16),
        [255, 0, 0],
        "the agent inside"
    );
    assert_ne!(
        pixel(&marked, 32 + 4, 64 + 4),
        mark,
        "the frame is four pixels"
    );
    let frame_pixels = marked.rgb.chunks(3).filter(|px| *px == mark).count();
    // Rings of sides 32, 30, 28 and 26 pixels: 124 + 116 + 108 + 100.
    assert_eq!(frame_pixels, 448, "only the agent's tile");
    step(&mut env, GridAction::Left);
    let facing = env.observe(0, ObsRequest::ALL).info.unwrap();
    assert_eq!(facing[mosaic_core::FACING_INFO], "up", "{facing}");
}

/// Random play from `seed`; every step's rewards, flags and text.
fn random_episode(settings_value: Value, seed: u64) -> Vec<(Vec<f32>, bool, String)> {
    let mut env = env(settings_value);
    env.reset(seed).unwrap();
    let mut player = Random::default();
    player.reset(&AgentContext::new(seed, 0, "agent_0".into(), 7));
    let mut out = Transition::default();
    let mut trace = Vec::new();
    while !env.acting().is_empty() {
        let obs = env.observe(0, ObsRequest::ALL);
        let action = player.decide(&obs).action;
        env.step(&[Some(action)], &mut out).unwrap();
        trace.push((out.rewards.clone(), out.terminated[0], obs.text.unwrap()));
    }
    trace
}

#[test]
fn episodes_are_deterministic_per_seed() {
    for settings_value in [
        serde_json::json!({}),
        serde_json::json!({ "task": "goto", "size": 9, "objects": 5 }),
    ] {
        for seed in [0, 1, 99] {
            assert_eq!(
                random_episode(settings_value.clone(), seed),
                random_episode(settings_value.clone(), seed)
            );
        }
        assert_ne!(
            random_episode(settings_value.clone(), 1)[0].2,
            random_episode(settings_value.clone(), 2)[0].2
        );
    }
}

#[test]
fn snapshot_restore_continues_the_episode() {
    let settings_value = serde_json::json!({ "size": 8 });
    let mut original = env(settings_value.clone());
    original.reset(5).unwrap();
    let actions: Vec<GridAction> = (0..60)
        .map(|i| GridAction::ALL[(i * 5 + i / 7) % 6])
        .collect();
    for &a in &actions[..30] {
        step(&mut original, a);
    }
    let snapshot = original.snapshot().unwrap();
    let mut restored = env(settings_value);
    restored.restore(&snapshot).unwrap();
    assert_eq!(restored.steps(), 30);
    for &a in &actions[30..] {
        let (x, y) = (step(&mut original, a), step(&mut restored, a));
        assert_eq!(x, y);
        assert_eq!(
            original.observe(0, ObsRequest::ALL),
            restored.observe(0, ObsRequest::ALL)
        );
    }
    assert_eq!(original.render(), restored.render());
}

#[test]
fn broken_snapshots_are_refused_with_a_reason() {
    let mut source = env(serde_json::json!({}));
    source.reset(2).unwrap();
    let good: Value = serde_json::from_slice(&source.snapshot().unwrap().0).unwrap();
    let mut target = env(serde_json::json!({}));
    let refuse = |target: &mut Gridworld, bytes: Vec<u8>, needle: &str| match target
        .restore(&Snapshot(bytes))
    {
        Err(EnvError::Restore(reason)) => assert!(reason.contains(needle), "{reason}"),
        other => panic!("expected a restore error, got {other:?}"),
    };
    let edit = |f: &dyn Fn(&mut Value)| {
        let mut value = good.clone();
        f(&mut value);
        serde_json::to_vec(&value).unwrap()
    };
    refuse(&mut target, b"{".to_vec(), "gridworld snapshot");
    refuse(
        &mut target,
        edit(&|v| v["direction"] = 9.into()),
        "direction",
    );
    refuse(
        &mut target,
        edit(&|v| v["agent"] = serde_json::json!({ "x": 0, "y": 0 })),
        "free cell",
    );
    refuse(
        &mut target,
        edit(&|v| v["steps"] = 10_000.into()),
        "max_steps",
    );
    refuse(
        &mut target,
        edit(&|v| v["grid"]["tiles"] = serde_json::json!([])),
        "grid size",
    );
    let mut bigger = env(serde_json::json!({ "size": 7 }));
    refuse(&mut bigger, serde_json::to_vec(&good).unwrap(), "grid size");
    let mut goto = env(serde_json::json!({ "task": "goto", "size": 5 }));
    refuse(&mut goto, serde_json::to_vec(&good).unwrap(), "mission");
    assert!(target.acting().is_empty(), "nothing was restored");
}

/// The planner's success rate over `seeds` episodes.
fn planner_success(settings_value: Value, seeds: u64) -> (u32, u32) {
    let settings = settings(settings_value);
    let mut env = Gridworld::from_settings(&settings).unwrap();
    let mut planner = GridPlanner::from_settings(&settings, &Settings::new()).unwrap();
    let mut solved = 0;
    let mut out = Transition::default();
    for seed in 0..seeds {
        env.reset(seed).unwrap();
        planner.reset(&AgentContext::new(seed, 0, "agent_0".into(), 7));
        while !env.acting().is_empty() {
            let decision = planner.decide(&env.observe(0, planner.wants()));
            assert_eq!(decision.source, mosaic_core::DecisionSource::Policy);
            env.step(&[Some(decision.action)], &mut out).unwrap();
        }
        if env.outcome() == Some(vec![Outcome::Win]) {
            solved += 1;
        }
    }
    (solved, seeds as u32)
}

#[test]
fn planner_solves_doorkey() {
    for size in [5, 8, 16] {
        let (solved, of) = planner_success(serde_json::json!({ "size": size }), 50);
        assert!(
            solved * 100 >= of * 95,
            "DoorKey {size}x{size}: {solved}/{of}"
        );
    }
}

#[test]
fn planner_solves_goto() {
    for (size, objects) in [(6, 2), (8, 4), (16, 8)] {
        let (solved, of) = planner_success(
            serde_json::json!({ "task": "goto", "size": size, "objects": objects }),
            50,
        );
        assert!(
            solved * 100 >= of * 95,
            "GoTo {size}x{size} N{objects}: {solved}/{of}"
        );
    }
}

#[test]
fn planner_without_its_view_falls_back() {
    let env = small_room();
    let mut planner = GridPlanner::new(6);
    let decision = planner.decide(&env.observe(0, ObsRequest::MASK_ONLY));
    assert_eq!(decision.source, mosaic_core::DecisionSource::Error);
    assert_eq!(decision.action, GridAction::Left.action());
}

#[test]
fn registered_with_its_planner() {
    let mut registry = mosaic_core::EnvRegistry::default();
    registry.register(KIND);
    let kind = registry.get("gridworld").unwrap();
    let settings = settings(serde_json::json!({ "task": "goto", "size": 7 }));
    let mut env = registry.make("gridworld", &settings).unwrap();
    assert_eq!(env.spec().stepping, Stepping::Single);
    assert_eq!(env.spec().agents[0].id, "agent_0");
    assert_eq!(
        env.spec().action_labels,
        [
            "left", "right", "forward", "pickup", "drop", "toggle", "done"
        ]
    );
    let mut planner = (kind.scripted.unwrap())(&settings, &Settings::new()).unwrap();
    env.reset(8).unwrap();
    planner.reset(&AgentContext::new(8, 0, "agent_0".into(), 7));
    let mut out = Transition::default();
    while !env.acting().is_empty() {
        let decision = planner.decide(&env.observe(0, planner.wants()));
        env.step(&[Some(decision.action)], &mut out).unwrap();
    }
    assert_eq!(env.outcome(), Some(vec![Outcome::Win]));
    let err = registry
        .make("gridworld", &settings_of_bad_size())
        .err()
        .unwrap();
    assert_eq!(err.path, "env_settings.size");
}

fn settings_of_bad_size() -> Settings {
    settings(serde_json::json!({ "size": 3 }))
}
