//! Giving, friendly fire, reviving, bleeding out and joint hits on mobs.

use super::*;

#[test]
fn request_and_give_work_at_any_distance_while_active() {
    let mut env = arena(&two_agents(), &[(5, 5), (50, 50)]);
    let set_ = *env.action_set();
    let give = set_.index_of(Act::Give(1));
    world(&mut env).agents[0].add(Item::Wood, 2);
    assert!(!env.observe(0, ObsRequest::MASK_ONLY).legal[give]);
    step(&mut env, &[Act::Noop, Act::Request(Resource::Wood)]);
    assert!(env.observe(0, ObsRequest::MASK_ONLY).legal[give]);
    let text = text_of(&env, 0);
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
