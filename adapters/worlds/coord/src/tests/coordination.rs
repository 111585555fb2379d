//! Synchronised and handover targets, the forge, specialists and role-gated recipes.

use super::*;

#[test]
fn hard_sync_fails_alone_and_succeeds_together() {
    // Agent 0 south of the tree, agent 1 north of it.
    let mut env = arena(&two_agents(), &[(10, 11), (10, 9)]);
    set(&mut env, 10, 10, Block::Tree, sync(false, 2));
    face(&mut env, 0, Dir::North);
    face(&mut env, 1, Dir::South);
    let out = step(&mut env, &[Act::Do, Act::Noop]);
    assert_eq!(world(&mut env).block(10, 10), Block::Tree);
    assert_eq!(world(&mut env).counters.sync_failures, 1);
    assert_eq!(out.rewards[0], 0.0);
    let out = step(&mut env, &[Act::Do, Act::Do]);
    let w = world(&mut env);
    assert_eq!(w.block(10, 10), Block::Grass);
    assert_eq!(w.counters.sync_successes, 1);
    for (i, a) in w.agents.iter().enumerate() {
        assert_eq!(a.count(Item::Wood), 1);
        assert!(a.has(Achievement::CoordMineWoodHard));
        assert!(a.has(Achievement::Coord2AgentsHard));
        // collect_wood (base) + two coordination achievements.
        assert_eq!(out.rewards[i], 3.0);
        assert_eq!(a.coord_reward, 2.0);
    }
    assert!(out.events.iter().any(|e| e.kind == "sync_success"));
}

#[test]
fn soft_sync_succeeds_alone_with_probability_one_minus_alpha() {
    let mut env = arena(&two_agents(), &[(10, 11), (30, 30)]);
    face(&mut env, 0, Dir::North);
    let trials = 1500;
    let mut successes = 0;
    for _ in 0..trials {
        set(&mut env, 10, 10, Block::Tree, sync(true, 2));
        refresh(&mut env);
        step(&mut env, &[Act::Do, Act::Noop]);
        if world(&mut env).block(10, 10) == Block::Grass {
            successes += 1;
        }
    }
    let rate = f64::from(successes) / f64::from(trials);
    let sd = (0.4 * 0.6 / f64::from(trials)).sqrt();
    assert!((rate - 0.4).abs() < 4.0 * sd, "solo success rate {rate}");
    let w = world(&mut env);
    assert!(!w.agents[0].has(Achievement::CoordMineWoodSoft));
    assert_eq!(w.counters.soft_solo_successes, successes);
    // Together: always, with the bonus.
    w.agents[1].x = 10;
    w.agents[1].y = 9;
    face(&mut env, 1, Dir::South);
    set(&mut env, 10, 10, Block::Tree, sync(true, 2));
    step(&mut env, &[Act::Do, Act::Do]);
    let w = world(&mut env);
    assert!(w.agents[0].has(Achievement::CoordMineWoodSoft));
    assert!(w.agents[1].has(Achievement::Coord2AgentsSoft));
}

#[test]
fn whole_team_targets_need_every_agent() {
    let mut env = arena(&[("agents", json!(3))], &[(10, 11), (10, 9), (9, 10)]);
    set(&mut env, 10, 10, Block::Tree, sync(false, 3));
    face(&mut env, 0, Dir::North);
    face(&mut env, 1, Dir::South);
    face(&mut env, 2, Dir::East);
    step(&mut env, &[Act::Do, Act::Do, Act::Noop]);
    assert_eq!(world(&mut env).block(10, 10), Block::Tree);
    step(&mut env, &[Act::Do, Act::Do, Act::Do]);
    let w = world(&mut env);
    assert_eq!(w.block(10, 10), Block::Grass);
    assert!(w.agents.iter().all(|a| a.has(Achievement::CoordTeamHard)));
}

#[test]
fn handover_needs_a_different_agent_within_the_window() {
    let mut env = arena(&two_agents(), &[(10, 11), (10, 9)]);
    set(&mut env, 10, 10, Block::Tree, handover(5));
    face(&mut env, 0, Dir::North);
    face(&mut env, 1, Dir::South);
    step(&mut env, &[Act::Do, Act::Noop]);
    assert_eq!(world(&mut env).pending.len(), 1);
    // The initiator cannot finish it.
    step(&mut env, &[Act::Do, Act::Noop]);
    assert_eq!(world(&mut env).block(10, 10), Block::Tree);
    let out = step(&mut env, &[Act::Noop, Act::Do]);
    let w = world(&mut env);
    assert_eq!(w.block(10, 10), Block::Grass);
    assert!(w.pending.is_empty());
    assert_eq!(w.counters.handovers_completed, 1);
    for a in &w.agents {
        assert!(a.has(Achievement::HandoverComplete) && a.has(Achievement::CoordMineHandover));
        assert_eq!(a.count(Item::Wood), 1);
    }
    assert!(out.events.iter().any(|e| e.kind == "handover_complete"));
}

#[test]
fn handover_expires_and_resets() {
    let window = 4;
    let mut env = arena(&two_agents(), &[(10, 11), (10, 9)]);
    set(&mut env, 10, 10, Block::Tree, handover(window));
    face(&mut env, 0, Dir::North);
    face(&mut env, 1, Dir::South);
    step(&mut env, &[Act::Do, Act::Noop]);
    for _ in 0..window - 1 {
        step(&mut env, &[Act::Noop, Act::Noop]);
        assert_eq!(world(&mut env).pending.len(), 1);
    }
    let out = step(&mut env, &[Act::Noop, Act::Noop]);
    assert!(out.events.iter().any(|e| e.kind == "handover_expired"));
    let w = world(&mut env);
    assert!(w.pending.is_empty());
    assert_eq!(w.counters.handovers_expired, 1);
    assert_eq!(w.block(10, 10), Block::Tree);
    // Finishing now only starts a new handover.
    step(&mut env, &[Act::Noop, Act::Do]);
    assert_eq!(world(&mut env).block(10, 10), Block::Tree);
    assert_eq!(world(&mut env).pending[0].initiator, 1);
}

#[test]
fn construction_handover_refunds_the_initiator_or_builds_together() {
    let mut env = arena(&two_agents(), &[(10, 11), (10, 9)]);
    set(&mut env, 10, 10, Block::Site, handover(3));
    face(&mut env, 0, Dir::North);
    face(&mut env, 1, Dir::South);
    {
        let a = &mut world(&mut env).agents[0];
        a.add(Item::Wood, 9);
        a.add(Item::Stone, 5);
    }
    // Nine wood is not enough for a shelter (ten).
    step(&mut env, &[Act::Build(Structure::Shelter), Act::Noop]);
    assert!(world(&mut env).pending.is_empty());
    world(&mut env).agents[0].inventory[Item::Wood as usize] = 10;
    step(&mut env, &[Act::Build(Structure::Shelter), Act::Noop]);
    assert_eq!(world(&mut env).agents[0].count(Item::Wood), 0);
    assert_eq!(world(&mut env).agents[0].count(Item::Stone), 0);
    for _ in 0..3 {
        step(&mut env, &[Act::Noop, Act::Noop]);
    }
    let w = world(&mut env);
    assert!(w.pending.is_empty());
    // The refund may exceed the inventory cap of 9: it is capped like any gain.
    assert_eq!(w.agents[0].count(Item::Wood), 9);
    assert_eq!(w.agents[0].count(Item::Stone), 5);
    assert_eq!(w.block(10, 10), Block::Site);

    // Again, finished in time by the other agent with the same structure.
    w.agents[0].inventory[Item::Wood as usize] = 10;
    step(&mut env, &[Act::Build(Structure::Shelter), Act::Noop]);
    step(&mut env, &[Act::Noop, Act::Build(Structure::Forge)]);
    assert_eq!(world(&mut env).block(10, 10), Block::Site);
    step(&mut env, &[Act::Noop, Act::Build(Structure::Shelter)]);
    let w = world(&mut env);
    assert_eq!(w.block(10, 10), Block::Shelter);
    assert_eq!(w.shelters, 1);
    assert!(
        w.agents
            .iter()
            .all(|a| a.has(Achievement::CoordBuildShelter))
    );
}

#[test]
fn synchronous_forge_pools_materials_and_enables_joint_diamond_tools() {
    let mut env = arena(&two_agents(), &[(10, 11), (10, 9)]);
    set(&mut env, 10, 10, Block::Site, sync(false, 2));
    face(&mut env, 0, Dir::North);
    face(&mut env, 1, Dir::South);
    {
        let w = world(&mut env);
        w.agents[0].add(Item::Stone, 9);
        w.agents[1].add(Item::Stone, 1);
        w.agents[1].add(Item::Iron, 3);
        w.agents[1].add(Item::Coal, 2);
    }
    step(&mut env, &[Act::Build(Structure::Forge), Act::Noop]);
    assert_eq!(world(&mut env).block(10, 10), Block::Site);
    step(
        &mut env,
        &[Act::Build(Structure::Forge), Act::Build(Structure::Forge)],
    );
    let w = world(&mut env);
    assert_eq!(w.block(10, 10), Block::Forge);
    assert!(w.agents.iter().all(|a| a.has(Achievement::CoordBuildForge)));
    assert!(w.agents.iter().all(|a| a.count(Item::Stone) == 0));

    // Diamond pickaxe: miner role for a clean test; materials from both agents.
    w.agents[0].role = Role::Miner;
    w.agents[1].role = Role::Miner;
    w.agents[0].add(Item::Diamond, 3);
    w.agents[1].add(Item::Wood, 1);
    let legal = super::observation::legal(w, &ActionSet::new(2, 4), 1);
    assert!(legal[ActionSet::new(2, 4).index_of(Act::Make(Item::DiamondPickaxe))]);
    step(&mut env, &[Act::Make(Item::DiamondPickaxe), Act::Noop]);
    assert_eq!(world(&mut env).agents[0].count(Item::DiamondPickaxe), 0);
    step(
        &mut env,
        &[
            Act::Make(Item::DiamondPickaxe),
            Act::Make(Item::DiamondPickaxe),
        ],
    );
    let w = world(&mut env);
    for a in &w.agents {
        assert_eq!(a.count(Item::DiamondPickaxe), 1);
        assert!(a.has(Achievement::CoordDiamondPickaxe));
    }
    assert_eq!(w.agents[0].count(Item::Diamond), 0);
    assert_eq!(w.agents[1].count(Item::Wood), 0);
}

#[test]
fn specialists_always_succeed_and_others_with_one_minus_alpha() {
    let mut pairs = two_agents();
    pairs.push(("roles", json!(["warrior", "miner"])));
    let mut env = arena(&pairs, &[(10, 11), (12, 11)]);
    set(&mut env, 11, 12, Block::Table, Tag::NONE);
    let roles = [Role::Warrior, Role::Miner];
    // The spec tells deciders each agent's role, in the configured order.
    let told: Vec<_> = env.spec().agents.iter().map(|a| a.role.clone()).collect();
    assert_eq!(told, [Some("warrior".into()), Some("miner".into())]);
    let trials = 2000;
    let mut made = [0u32; 2];
    for _ in 0..trials {
        for a in &mut world(&mut env).agents {
            a.inventory = [0; Item::COUNT];
            a.add(Item::Wood, 1);
        }
        refresh(&mut env);
        step(
            &mut env,
            &[Act::Make(Item::WoodPickaxe), Act::Make(Item::WoodPickaxe)],
        );
        for (i, a) in world(&mut env).agents.iter().enumerate() {
            assert_eq!(a.role, roles[i]);
            made[i] += u32::from(a.count(Item::WoodPickaxe));
        }
    }
    assert_eq!(made[1], trials, "the miner always succeeds");
    let rate = f64::from(made[0]) / f64::from(trials);
    let sd = (0.4 * 0.6 / f64::from(trials)).sqrt();
    assert!((rate - 0.4).abs() < 4.0 * sd, "non-specialist rate {rate}");
    let c = world(&mut env).counters;
    assert_eq!(c.role_attempts, trials);
    assert_eq!(c.role_failures, trials - made[0]);
}

#[test]
fn anyone_makes_a_wood_sword_but_other_swords_stay_the_warriors() {
    // α = 1: a non-specialist never succeeds at a role-gated action.
    let pairs = [
        ("agents", json!(2)),
        ("alpha", json!(1.0)),
        ("roles", json!(["miner", "forager"])),
    ];
    let mut env = arena(&pairs, &[(10, 11), (12, 11)]);
    set(&mut env, 11, 12, Block::Table, Tag::NONE);
    for a in &mut world(&mut env).agents {
        a.add(Item::Wood, 2);
        a.add(Item::Stone, 1);
    }
    let swords = [Act::Make(Item::WoodSword), Act::Make(Item::WoodSword)];
    let out = step(&mut env, &swords);
    for (i, a) in world(&mut env).agents.iter().enumerate() {
        assert_eq!(a.count(Item::WoodSword), 1);
        assert!(a.has(Achievement::MakeWoodSword));
        assert_eq!(out.rewards[i], 1.0);
    }
    assert_eq!(world(&mut env).counters.role_attempts, 0);
    step(
        &mut env,
        &[Act::Make(Item::StoneSword), Act::Make(Item::StoneSword)],
    );
    let w = world(&mut env);
    assert!(w.agents.iter().all(|a| a.count(Item::StoneSword) == 0));
    assert_eq!((w.counters.role_attempts, w.counters.role_failures), (2, 2));
}

#[test]
fn foragers_drink_and_eat_beyond_nine() {
    let pairs = [
        ("agents", json!(2)),
        ("roles", json!(["forager", "warrior"])),
        ("alpha", json!(0.0)),
    ];
    let mut env = arena(&pairs, &[(10, 11), (12, 11)]);
    set(&mut env, 10, 10, Block::Water, Tag::NONE);
    set(&mut env, 12, 10, Block::Water, Tag::NONE);
    face(&mut env, 0, Dir::North);
    face(&mut env, 1, Dir::North);
    for _ in 0..4 {
        step(&mut env, &[Act::Do, Act::Do]);
    }
    let w = world(&mut env);
    assert_eq!((w.agents[0].drink, w.agents[1].drink), (11, 9));
    let text = |env: &CoordWorld, i| env.observe(i, ObsRequest::ALL).text.unwrap();
    assert!(
        text(&env, 0).contains("- drink: 11/11"),
        "{}",
        text(&env, 0)
    );
    assert!(text(&env, 1).contains("- drink: 9/9"));
}

#[test]
fn scaled_base_difficulty_starts_agents_with_fewer_resources() {
    for (scaled, needs) in [(false, 9), (true, 6)] {
        let s = settings(&[
            ("preset", json!("hard")),
            ("scale_base_difficulty", json!(scaled)),
        ]);
        let mut env = CoordWorld::from_settings(&s).unwrap();
        env.reset(3).unwrap();
        for a in &world(&mut env).agents {
            assert_eq!(
                (a.health, a.food, a.drink, a.energy),
                (9, needs, needs, needs)
            );
        }
    }
}
