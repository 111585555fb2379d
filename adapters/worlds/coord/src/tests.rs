//! Mechanics tests on hand-built arenas and determinism tests on generated worlds.

use super::state::{CoordKind, Life, Mob, MobTag, Tag, World};
use super::*;
use mosaic_core::rng::seeded;
use mosaic_core::{Environment, ObsRequest, Transition};
use rand::Rng as _;
use serde_json::{Value, json};

fn settings(pairs: &[(&str, Value)]) -> Settings {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

/// A sand arena (no mob spawns on sand) with the agents at `positions`.
fn arena(pairs: &[(&str, Value)], positions: &[(i32, i32)]) -> CoordWorld {
    let mut env = CoordWorld::from_settings(&settings(pairs)).unwrap();
    env.reset(1).unwrap();
    let w = world(&mut env);
    w.blocks.fill(Block::Sand);
    w.tags.fill(Tag::NONE);
    w.mobs.clear();
    w.mob_at.fill(0);
    w.arrows.clear();
    w.plants.clear();
    for (a, (x, y)) in w.agents.iter_mut().zip(positions) {
        a.x = *x;
        a.y = *y;
    }
    env
}

fn world(env: &mut CoordWorld) -> &mut World {
    env.world.as_mut().unwrap()
}

fn set(env: &mut CoordWorld, x: i32, y: i32, block: Block, tag: Tag) {
    let w = world(env);
    let t = w.tile(x, y).unwrap();
    w.blocks[t] = block;
    w.tags[t] = tag;
}

fn face(env: &mut CoordWorld, agent: usize, dir: Dir) {
    world(env).agents[agent].facing = dir;
}

/// Full vitals, so that long tests never starve.
fn refresh(env: &mut CoordWorld) {
    for a in &mut world(env).agents {
        a.health = 9;
        a.food = 9;
        a.drink = 9;
        a.energy = 9;
    }
}

fn step(env: &mut CoordWorld, acts: &[Act]) -> Transition {
    let set = *env.action_set();
    let actions: Vec<_> = acts
        .iter()
        .map(|a| Some(mosaic_core::Action(set.index_of(*a) as u32)))
        .collect();
    let mut out = Transition::default();
    env.step(&actions, &mut out).unwrap();
    out
}

fn sync(soft: bool, required: u8) -> Tag {
    Tag {
        kind: CoordKind::Sync,
        soft,
        required,
        window: 0,
    }
}

fn handover(window: u8) -> Tag {
    Tag {
        kind: CoordKind::Handover,
        soft: false,
        required: 0,
        window,
    }
}

fn two_agents() -> Vec<(&'static str, Value)> {
    vec![("agents", json!(2)), ("alpha", json!(0.6))]
}

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

#[test]
fn request_and_give_work_at_any_distance_while_active() {
    let mut env = arena(&two_agents(), &[(5, 5), (50, 50)]);
    let set_ = *env.action_set();
    let give = set_.index_of(Act::Give(1));
    world(&mut env).agents[0].add(Item::Wood, 2);
    assert!(!env.observe(0, ObsRequest::MASK_ONLY).legal[give]);
    step(&mut env, &[Act::Noop, Act::Request(Resource::Wood)]);
    assert!(env.observe(0, ObsRequest::MASK_ONLY).legal[give]);
    let text = env
        .observe(
            0,
            ObsRequest {
                text: true,
                ..ObsRequest::MASK_ONLY
            },
        )
        .text
        .unwrap();
    assert!(text.contains("requests wood"), "{text}");
    let out = step(&mut env, &[Act::Give(1), Act::Noop]);
    assert!(out.events.iter().any(|e| e.kind == "trade"));
    let w = world(&mut env);
    assert_eq!(w.agents[0].count(Item::Wood), 1);
    assert_eq!(w.agents[1].count(Item::Wood), 1);
    assert_eq!(w.counters.trades, 1);
    // Giving to oneself is never legal; the request lapses after its 10 steps.
    assert!(!env.observe(1, ObsRequest::MASK_ONLY).legal[set_.index_of(Act::Give(1))]);
    for _ in 0..REQUEST_STEPS {
        step(&mut env, &[Act::Noop, Act::Noop]);
    }
    assert!(!env.observe(0, ObsRequest::MASK_ONLY).legal[give]);
}

#[test]
fn friendly_fire_downs_and_do_revives() {
    let mut env = arena(&two_agents(), &[(10, 11), (10, 10)]);
    face(&mut env, 0, Dir::North);
    // Agent 0 is a warrior: 2 damage with bare hands.
    assert_eq!(world(&mut env).agents[0].damage(), 2);
    let out = step(&mut env, &[Act::Do, Act::Noop]);
    assert!(out.events.iter().any(|e| e.kind == "friendly_fire"));
    assert_eq!(world(&mut env).agents[1].health, 7);
    assert!((out.rewards[1] + 0.2).abs() < 1e-6);
    for _ in 0..4 {
        step(&mut env, &[Act::Do, Act::Noop]);
    }
    let w = world(&mut env);
    assert!(matches!(w.agents[1].life, Life::Downed { .. }));
    assert_eq!(w.counters.friendly_fire, 5);
    assert_eq!(w.counters.downed, 1);
    // A downed agent can only wait.
    let legal = env.observe(1, ObsRequest::MASK_ONLY).legal;
    assert_eq!(legal.iter().filter(|x| **x).count(), 1);
    assert_eq!(env.acting(), vec![0, 1]);
    let out = step(&mut env, &[Act::Do, Act::Noop]);
    assert!(out.events.iter().any(|e| e.kind == "revive"));
    let w = world(&mut env);
    assert_eq!(w.agents[1].life, Life::Alive);
    assert_eq!(w.agents[1].health, state::REVIVE_HEALTH);
    assert_eq!(w.counters.revives, 1);
}

#[test]
fn unrevived_agents_bleed_out_and_the_episode_ends_when_nobody_is_up() {
    let mut env = arena(&two_agents(), &[(10, 11), (20, 20)]);
    world(&mut env).agents[1].health = 1;
    world(&mut env).agents[1].food = 0;
    world(&mut env).agents[1].recover = -15.5;
    let out = step(&mut env, &[Act::Noop, Act::Noop]);
    assert!(out.events.iter().any(|e| e.kind == "downed"));
    let mut last = out;
    for _ in 0..state::BLEED_OUT_STEPS {
        last = step(&mut env, &[Act::Noop, Act::Noop]);
    }
    assert!(last.terminated[1] && !last.terminated[0]);
    assert_eq!(world(&mut env).agents[1].life, Life::Dead);
    assert_eq!(env.acting(), vec![0]);
    // Walking into lava kills at once; then nobody is up and the episode is over.
    set(&mut env, 10, 12, Block::Lava, Tag::NONE);
    let out = step(&mut env, &[Act::Move(Dir::South), Act::Noop]);
    assert!(out.all_done());
    assert!(env.acting().is_empty());
    let mut t = Transition::default();
    assert!(env.step(&[None, None], &mut t).is_err());
}

#[test]
fn coordinated_mobs_take_joint_hits() {
    let mut env = arena(&two_agents(), &[(10, 11), (10, 9)]);
    face(&mut env, 0, Dir::North);
    face(&mut env, 1, Dir::South);
    let tag = MobTag {
        coordinated: true,
        soft: false,
        required: 2,
    };
    world(&mut env).add_mob(Mob {
        kind: MobKind::Zombie,
        x: 10,
        y: 10,
        health: 6,
        cooldown: 99,
        tag,
    });
    // Hard elite: a solo hit does nothing. (The zombie may not move: both sides and
    // the row are walled with water.)
    for (x, y) in [(9, 10), (11, 10)] {
        set(&mut env, x, y, Block::Water, Tag::NONE);
    }
    step(&mut env, &[Act::Do, Act::Noop]);
    assert_eq!(world(&mut env).mobs[0].health, 6);
    // Warrior 2 + miner... agent 1 is a forager: 1.
    step(&mut env, &[Act::Do, Act::Do]);
    assert_eq!(world(&mut env).mobs[0].health, 3);
    step(&mut env, &[Act::Do, Act::Do]);
    let w = world(&mut env);
    assert!(w.mobs.is_empty());
    for a in &w.agents {
        assert!(a.has(Achievement::DefeatZombie));
        assert!(a.has(Achievement::CoordEliteMeleeKill));
    }
    assert_eq!(w.counters.sync_successes, 2);
}

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

type Map = serde_json::Map<String, Value>;

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

/// A team of three `kind` agents (scripted or random) on the easy preset plus `pairs`,
/// played for up to `steps` steps.
fn run_team(kind: &str, pairs: &[(&str, Value)], seed: u64, steps: u32) -> CoordWorld {
    let mut all = vec![("preset", json!("easy"))];
    all.extend(pairs.iter().cloned());
    let mut env = CoordWorld::from_settings(&settings(&all)).unwrap();
    env.reset(seed).unwrap();
    let mut policies: Vec<Box<dyn mosaic_core::Policy>> = (0..3)
        .map(|_| -> Box<dyn mosaic_core::Policy> {
            if kind == "scripted" {
                Box::new(Scripted::from_settings(env.config(), &Settings::new()).unwrap())
            } else {
                Box::new(mosaic_core::baseline::Random::default())
            }
        })
        .collect();
    for (i, p) in policies.iter_mut().enumerate() {
        p.reset(&mosaic_core::AgentContext::new(
            seed,
            i,
            format!("agent_{i}"),
            36,
        ));
    }
    let mut t = Transition::default();
    for _ in 0..steps {
        let acting = env.acting();
        if acting.is_empty() {
            break;
        }
        let mut actions = vec![None; 3];
        for i in acting {
            let obs = env.observe(i, policies[i].wants());
            let decision = policies[i].decide(&obs);
            assert!(obs.is_legal(decision.action));
            actions[i] = Some(decision.action);
        }
        env.step(&actions, &mut t).unwrap();
    }
    env
}

fn team_run(kind: &str, seed: u64, steps: u32) -> Map {
    run_team(kind, &[], seed, steps).metrics()
}

#[test]
fn alem_scoring_weights_a_whole_team_joint_mining() {
    // ALEM and ALEM-Lite weigh alike and differ in the base maximum and the list.
    for (scale, base_max, listed) in [("alem", 217.0, 93), ("alem_lite", 38.0, 57)] {
        let pairs = [("agents", json!(3)), ("scoring", json!(scale))];
        let mut env = arena(&pairs, &[(10, 11), (10, 9), (9, 10)]);
        set(&mut env, 10, 10, Block::Iron, sync(false, 3));
        for (i, dir) in [Dir::North, Dir::South, Dir::East].into_iter().enumerate() {
            face(&mut env, i, dir);
            world(&mut env).agents[i].add(Item::StonePickaxe, 1);
        }
        let out = step(&mut env, &[Act::Do, Act::Do, Act::Do]);
        for (i, a) in world(&mut env).agents.iter().enumerate() {
            // collect_iron (basic, 1); coord_mine_iron_hard (advanced, 5) and
            // coord_3_agents_hard (very advanced, 8).
            assert_eq!((a.base_reward, a.coord_reward), (1.0, 13.0));
            assert_eq!(out.rewards[i], 14.0);
        }
        let m = env.metrics();
        assert_eq!(
            (m["base_max"].clone(), m["coord_max"].clone()),
            (json!(base_max), json!(159.0))
        );
        let close = |key: &str, want: f64| {
            let got = m[key].as_f64().unwrap();
            assert!((got - want).abs() < 1e-3, "{scale} {key}: {got} vs {want}");
        };
        close("base_pct", 100.0 / base_max);
        close("coord_pct", 100.0 * 13.0 / 159.0);
        close("total_pct", 100.0 * 14.0 / (base_max + 159.0));
        let text = env.observe(0, ObsRequest::ALL).text.unwrap();
        assert!(
            text.contains(&format!("Achievements: 3/{listed} (")),
            "{text}"
        );
    }
}

#[test]
fn alem_scoring_weights_a_scripted_episode_and_leaves_play_unchanged() {
    let compact = run_team("scripted", &[], 4, 2000);
    let alem = run_team("scripted", &[("scoring", json!("alem"))], 4, 2000);
    let (cw, aw) = (
        compact.world.as_ref().unwrap(),
        alem.world.as_ref().unwrap(),
    );
    assert_eq!(cw.step, aw.step);
    let mut heavier = false;
    for (c, a) in cw.agents.iter().zip(&aw.agents) {
        assert_eq!(
            (c.achievements, c.x, c.y, c.health),
            (a.achievements, a.x, a.y, a.health)
        );
        // ALEM's table, entry by entry, against the rewards the steps paid.
        let (mut base, mut coord) = (0.0, 0.0);
        for e in ALEM_ACHIEVEMENTS
            .iter()
            .filter(|e| e.world.is_some_and(|x| a.has(x)))
        {
            let w = f64::from(e.tier.reward());
            if e.coordination.is_some() {
                coord += w;
            } else {
                base += w;
            }
        }
        let health = 0.1 * f64::from(a.health - 9);
        assert!(
            (a.base_reward - (base + health)).abs() < 1e-6,
            "{} vs {base}",
            a.base_reward
        );
        assert!(
            (a.coord_reward - coord).abs() < 1e-6,
            "{} vs {coord}",
            a.coord_reward
        );
        heavier |= a.coord_reward > c.coord_reward;
    }
    assert!(heavier, "no coordination achievement weighed more than 1");
    let m = alem.metrics();
    let mean_base: f64 = aw.agents.iter().map(|a| a.base_reward).sum::<f64>() / 3.0;
    assert!((m["base_pct"].as_f64().unwrap() - 100.0 * mean_base / 217.0).abs() < 1e-3);
    assert_eq!(m["scoring"], json!("alem"));
    assert_eq!(compact.metrics()["scoring"], json!("compact"));
}

#[test]
fn diagnostics_cover_types_tiers_deaths_and_specialisation() {
    let mut env = arena(&[("agents", json!(3))], &[(10, 10), (20, 20), (30, 30)]);
    {
        let w = world(&mut env);
        // Agent 0 (warrior): its own sword and a forager's drink; agent 1 (forager): a
        // shelter built together, a whole-team hard joint action and a drink.
        w.agents[0].unlock(Achievement::MakeStoneSword);
        w.agents[0].unlock(Achievement::CollectDrink);
        w.agents[1].unlock(Achievement::CoordBuildShelter);
        w.agents[1].unlock(Achievement::CoordTeamHard);
        w.agents[1].unlock(Achievement::CollectDrink);
    }
    let m = env.metrics();
    assert_eq!(m["aligned_achievements"], json!(2));
    assert_eq!(m["cross_role_achievements"], json!(1));
    assert!((m["specialisation_ratio_pct"].as_f64().unwrap() - 200.0 / 3.0).abs() < 1e-3);
    // Compact scale, the team counts once: construction holds shelter and forge, hard
    // synchronous twelve achievements, soft seven.
    let close = |m: &Map, key: &str, want: f64| {
        let got = m[key].as_f64().unwrap();
        assert!((got - want).abs() < 1e-3, "{key}: {got} vs {want}");
    };
    close(&m, "coverage_construction_pct", 50.0);
    close(&m, "coverage_sync_hard_pct", 100.0 / 12.0);
    close(&m, "coverage_soft_pct", 0.0);
    close(&m, "coverage_handover_pct", 0.0);
    // Tiers (ALEM's list): basic 26, advanced 13 + 9, very advanced 9 + 12.
    close(&m, "tier_basic_pct", 100.0 * (2.0 + 1.0) / 26.0 / 3.0);
    close(&m, "tier_intermediate_pct", 0.0);
    close(&m, "tier_advanced_pct", 100.0 / 22.0 / 3.0);
    close(&m, "tier_very_advanced_pct", 100.0 / 21.0 / 3.0);

    // ALEM's scale: construction weighs shelter 5, forge 8 and beacon 8.
    let mut alem = arena(
        &[("agents", json!(3)), ("scoring", json!("alem"))],
        &[(10, 10), (20, 20), (30, 30)],
    );
    world(&mut alem).agents[1].unlock(Achievement::CoordBuildShelter);
    let m = alem.metrics();
    close(&m, "coverage_construction_pct", 100.0 * 5.0 / 21.0);
    assert_eq!(m["base_reachable_max"], json!(29.0));
    assert_eq!(m["coord_reachable_max"], json!(111.0));
    // Two agents, compact scale: no whole-team achievements among the soft ones.
    let mut pair = arena(&[("agents", json!(2))], &[(10, 10), (20, 20)]);
    world(&mut pair).agents[0].unlock(Achievement::Coord2AgentsSoft);
    close(&pair.metrics(), "coverage_soft_pct", 100.0 / 6.0);
}

#[test]
fn deaths_are_counted_by_what_downed_the_agent() {
    // Agent 3 stays up so that the episode goes on while the others bleed out.
    let positions = [(10, 10), (20, 20), (30, 30), (40, 40)];
    let mut env = arena(&[("agents", json!(4))], &positions);
    set(&mut env, 31, 30, Block::Lava, Tag::NONE);
    {
        let w = world(&mut env);
        // Agent 0 starves; agent 1 is fed but thirsty.
        w.agents[0].food = 0;
        w.agents[0].health = 1;
        w.agents[1].drink = 0;
        w.agents[1].health = 1;
    }
    let idle = [Act::Noop; 4];
    step(
        &mut env,
        &[Act::Noop, Act::Noop, Act::Move(Dir::East), Act::Noop],
    );
    let mut steps = 0;
    while world(&mut env).agents[..2].iter().any(|a| a.is_present()) {
        let w = world(&mut env);
        w.agents[1].food = 9;
        w.agents[3].food = 9;
        w.agents[3].drink = 9;
        w.agents[3].energy = 9;
        step(&mut env, &idle);
        steps += 1;
        assert!(steps < 300, "nobody bled out");
    }
    let m = env.metrics();
    let counts: Vec<_> = [
        "starvation",
        "dehydration",
        "exhaustion",
        "mob",
        "friendly_fire",
        "lava",
    ]
    .iter()
    .map(|cause| m[format!("deaths_{cause}").as_str()].clone())
    .collect();
    assert_eq!(
        counts,
        [json!(1), json!(1), json!(0), json!(0), json!(0), json!(1)]
    );
    assert_eq!(m["deaths"], json!(3));
}

#[test]
fn scripted_team_beats_random_and_coordinates() {
    let mut scripted_base = 0.0;
    let mut random_base = 0.0;
    let mut coordinated = 0;
    for seed in 0..3 {
        let s = team_run("scripted", seed, 1500);
        let r = team_run("random", seed, 1500);
        scripted_base += s["base_pct"].as_f64().unwrap();
        random_base += r["base_pct"].as_f64().unwrap();
        coordinated += s["sync_successes"].as_u64().unwrap() + s["handovers"].as_u64().unwrap();
    }
    assert!(
        scripted_base > random_base + 10.0,
        "scripted {scripted_base} vs random {random_base}"
    );
    assert!(coordinated > 0, "scripted teams never coordinated");
    assert_eq!(team_run("scripted", 5, 300), team_run("scripted", 5, 300));
}
