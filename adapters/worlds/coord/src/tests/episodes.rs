//! Rewards, determinism, observations, signals and the registry.

use super::*;

#[test]
fn rewards_are_first_time_achievements_and_maxima_normalise() {
    let mut env = arena(&two_agents(), &[(10, 11), (20, 20)]);
    face(&mut env, 0, Dir::North);
    set(&mut env, 10, 10, Block::Tree, Tag::NONE);
    assert_eq!(step(&mut env, &[Act::Do, Act::Noop]).rewards[0], 1.0);
    set(&mut env, 10, 10, Block::Tree, Tag::NONE);
    assert_eq!(step(&mut env, &[Act::Do, Act::Noop]).rewards[0], 0.0);
    let (base_max, coord_max) = achievable(env.config());
    assert_eq!((base_max, coord_max), (22, 21));
    {
        let w = world(&mut env);
        w.agents[0].base_reward = 11.0;
        w.agents[0].coord_reward = coord_max as f64;
        w.agents[1].base_reward = base_max as f64;
        w.agents[1].coord_reward = 0.0;
    }
    let m = env.metrics();
    assert_eq!(m["base_pct"], json!(75.0));
    assert_eq!(m["coord_pct"], json!(50.0));
    let total = 100.0 * (11.0 + 21.0 + 22.0) / 2.0 / 43.0;
    assert!((m["total_pct"].as_f64().unwrap() - total).abs() < 1e-3);
    for key in [
        "trades",
        "revives",
        "handovers",
        "sync_successes",
        "coordination_sites",
    ] {
        assert!(m.contains_key(key), "{key}");
    }
    // Every coordination achievement the maximum counts is one the rules can award.
    let two = Config::from_settings(&settings(&two_agents())).unwrap();
    assert!(!achievable_coordination(&two).contains(&Achievement::CoordTeamHard));
    for required in [2, 3] {
        for soft in [false, true] {
            let a = super::effects::sync_achievement(required, 2, soft);
            assert!(achievable_coordination(&two).contains(&a));
        }
    }
}

fn random_run(seed: u64, alpha: f64, steps: usize) -> (Vec<Transition>, Map, String) {
    let mut env = CoordWorld::from_settings(&settings(&[("alpha", json!(alpha))])).unwrap();
    env.reset(seed).unwrap();
    let mut rng = seeded(seed ^ 0x5eed);
    let mut out = Vec::new();
    for _ in 0..steps {
        if env.acting().is_empty() {
            break;
        }
        let actions: Vec<_> = (0..3)
            .map(|i| {
                let legal: Vec<_> = env
                    .observe(i, ObsRequest::MASK_ONLY)
                    .legal_actions()
                    .collect();
                Some(legal[rng.random_range(0..legal.len())])
            })
            .collect();
        let mut t = Transition::default();
        env.step(&actions, &mut t).unwrap();
        out.push(t);
    }
    let text = env.observe(1, ObsRequest::ALL).text.unwrap();
    (out, env.metrics(), text)
}

#[test]
fn episodes_are_deterministic_per_seed() {
    let a = random_run(42, 0.6, 1500);
    let b = random_run(42, 0.6, 1500);
    assert_eq!(a, b);
    let c = random_run(43, 0.6, 1500);
    assert_ne!(a.2, c.2);
}

#[test]
fn alpha_keeps_the_layout_and_the_site_count() {
    let make = |alpha: f64| {
        let mut env = CoordWorld::from_settings(&settings(&[("alpha", json!(alpha))])).unwrap();
        env.reset(9).unwrap();
        env
    };
    let (mut easy, mut hard) = (make(0.3), make(0.9));
    assert_eq!(world(&mut easy).blocks, world(&mut hard).blocks);
    assert_eq!(world(&mut easy).census, world(&mut hard).census);
    assert_eq!(
        easy.metrics()["coordination_sites"],
        hard.metrics()["coordination_sites"]
    );
    let positions = |env: &mut CoordWorld| {
        let w = world(env);
        (0..w.tags.len())
            .filter(|t| w.tags[*t].kind != CoordKind::None)
            .collect::<Vec<_>>()
    };
    assert_eq!(positions(&mut easy), positions(&mut hard));
}

#[test]
fn observations_describe_the_coordination_state() {
    let mut env = arena(&[("agents", json!(3))], &[(10, 11), (12, 12), (30, 30)]);
    set(&mut env, 10, 10, Block::Tree, sync(false, 2));
    set(&mut env, 11, 10, Block::Iron, handover(9));
    face(&mut env, 0, Dir::North);
    let obs = env.observe(0, ObsRequest::ALL);
    let text = obs.text.unwrap();
    for needle in [
        "Position: (x=10, y=11)",
        "Role: warrior",
        "You see:\n",
        "- tree 1 step north (x=10, y=10)",
        "Do target: tree (x=10, y=10).",
        "requires 2 agents to select Do simultaneously (fails alone). You are on the south side, adjacent (facing target).",
        "handover: one agent starts with Do, a different agent must finish with Do within 9 steps",
        "Agent 1 (forager): 1 step south and 2 steps east (x=12, y=12), health=9",
        "Available actions:\n- noop\n",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    assert!(text.ends_with('\n'));
    let symbolic = obs.symbolic.unwrap();
    let layout = Layout::new(3, 4);
    assert_eq!(symbolic.shape, vec![layout.len()]);
    let view = View::new(&symbolic.data, layout).unwrap();
    let (cx, cy) = (VIEW_W / 2, VIEW_H / 2);
    assert_eq!(view.block(cx, cy - 1), Block::Tree);
    assert!(view.flag(cx, cy - 1, observation::ch::SYNC_HARD));
    assert!(view.flag(cx + 1, cy - 1, observation::ch::HANDOVER));
    assert!(view.flag(cx + 2, cy + 1, observation::ch::TEAMMATE));
    assert_eq!(view.facing(), Dir::North);
    assert_eq!(view.vitals(), [9, 9, 9, 9]);
    assert_eq!(view.role(), Role::Warrior);
    let frame = obs.frame.unwrap();
    frame.validate().unwrap();
    assert_eq!((frame.width, frame.height), (144, 144));
    let full = env.render().unwrap();
    full.validate().unwrap();
}

#[test]
fn a_marked_agent_is_framed_and_drawn_above_a_teammate_on_its_tile() {
    let mut env = arena(&two_agents(), &[(20, 20), (20, 20)]);
    {
        let w = world(&mut env);
        w.agents[0].role = Role::Forager;
        w.agents[1].role = Role::Miner;
    }
    let plain = env.render().unwrap();
    assert_eq!(env.render_marked(&[]).unwrap(), plain);
    let marked = env.render_marked(&[0]).unwrap();
    let pixel = |frame: &mosaic_core::Frame, x: u32, y: u32| {
        let i = ((y * frame.width + x) * 3) as usize;
        [frame.rgb[i], frame.rgb[i + 1], frame.rgb[i + 2]]
    };
    // 64 × 64 tiles of 8 pixels under a 16-pixel status bar.
    let (x0, y0) = (20 * 8, 16 + 20 * 8);
    let centre = |frame| pixel(frame, x0 + 4, y0 + 4);
    assert_eq!(
        centre(&plain),
        render::role_colour(Role::Miner),
        "unmarked: the later agent on top"
    );
    assert_eq!(
        centre(&marked),
        render::role_colour(Role::Forager),
        "marked: agent 0 on top"
    );
    let mark = mosaic_core::canvas::MARK;
    for (x, y) in [(x0, y0), (x0 + 7, y0 + 3), (x0 + 3, y0 + 7)] {
        assert_eq!(pixel(&marked, x, y), mark, "({x}, {y})");
    }
    let framed = marked.rgb.chunks(3).filter(|px| *px == mark).count();
    assert_eq!(framed, 28, "one ring of 8 pixels a side, nothing else");
    assert!(!plain.rgb.chunks(3).any(|px| px == mark));
}

#[test]
fn visible_teammates_describe_who_is_in_view() {
    // Agent 1 next to agent 0, agent 2 down to the north-west, agent 3 out of view (but
    // in agent 1's).
    let mut env = arena(
        &[("agents", json!(4))],
        &[(20, 20), (21, 20), (16, 17), (25, 22)],
    );
    set(&mut env, 22, 20, Block::Tree, Tag::NONE);
    face(&mut env, 1, Dir::East);
    {
        let w = world(&mut env);
        w.agents[1].add(Item::Wood, 3);
        w.agents[1].add(Item::StonePickaxe, 1);
        w.agents[1].drink = 4;
        w.agents[2].health = 0;
        w.agents[2].life = Life::Downed { since: 0 };
        w.agents[3].sleeping = true;
    }
    let text_only = ObsRequest {
        text: true,
        ..ObsRequest::MASK_ONLY
    };
    let lines = |env: &CoordWorld, agent: usize| -> Vec<String> {
        let info = env.observe(agent, text_only).info.unwrap();
        serde_json::from_value(info["visible_teammates"].clone()).unwrap()
    };
    assert_eq!(
        lines(&env, 0),
        [
            "agent_1 (forager): 1 step east (x=21, y=20), facing east towards tree (x=22, y=20); health 9/9, food 9/11, drink 4/11, energy 9/9; holds wood 3, stone_pickaxe 1",
            "agent_2 (miner): 3 steps north and 4 steps west (x=16, y=17), DOWN: face them and use Do within 100 steps to revive them",
        ]
    );
    // Agent 1 sees agent 0 facing it and agent 3 asleep, not agent 2 (5 tiles west).
    face(&mut env, 0, Dir::East);
    let seen_by_1 = lines(&env, 1);
    assert_eq!(seen_by_1.len(), 2, "{seen_by_1:?}");
    assert!(
        seen_by_1[0].starts_with("agent_0 (warrior): 1 step west (x=20, y=20), facing east towards you (x=21, y=20); health 9/9"),
        "{seen_by_1:?}"
    );
    assert!(seen_by_1[0].ends_with("; holds nothing"));
    assert!(
        seen_by_1[1].starts_with("agent_3 (warrior): 2 steps south and 4 steps east (x=25, y=22), facing north towards sand (x=25, y=21), asleep; health 9/9"),
        "{seen_by_1:?}"
    );
    // Nobody in view: an empty list; no text wanted: no info.
    let alone = arena(&two_agents(), &[(5, 5), (40, 40)]);
    assert!(lines(&alone, 0).is_empty());
    assert!(alone.observe(0, ObsRequest::MASK_ONLY).info.is_none());
}

#[test]
fn signals_reach_teammates() {
    let mut env = arena(&two_agents(), &[(5, 5), (40, 40)]);
    step(&mut env, &[Act::Signal(2), Act::Noop]);
    let layout = Layout::new(2, 4);
    let obs = env.observe(1, ObsRequest::ALL);
    let symbolic = obs.symbolic.unwrap();
    let view = View::new(&symbolic.data, layout).unwrap();
    assert_eq!(view.mate(0, observation::mate::SIGNAL_FRESHNESS), 1.0);
    assert_eq!(view.mate(0, observation::mate::SIGNAL + 2), 1.0);
    assert!(obs.text.unwrap().contains("last signal 2 (1 steps ago)"));
}

#[test]
fn registry_builds_the_world_and_its_scripted_operator() {
    let mut registry = mosaic_core::EnvRegistry::default();
    registry.register(kind());
    let env = registry
        .make(NAME, &settings(&[("preset", json!("hard"))]))
        .unwrap();
    assert_eq!(env.spec().agents.len(), 3);
    assert_eq!(env.spec().action_labels.len(), 36);
    let Err(err) = registry.make(NAME, &settings(&[("agents", json!(7))])) else {
        panic!("seven agents accepted");
    };
    assert!(err.message.contains("agents"), "{err}");
    let make = registry.get(NAME).unwrap().scripted.unwrap();
    assert!(make(&Settings::new(), &Settings::new()).is_ok());
    assert!(make(&Settings::new(), &settings(&[("typo", json!(1))])).is_err());
}
