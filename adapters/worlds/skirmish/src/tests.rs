//! Rule and environment tests of `skirmish`.

use super::*;
use crate::battle::Unit;
use crate::observe::layout as at;
use mosaic_core::baseline::Random;
use mosaic_core::canvas::MARK;
use mosaic_core::{AgentContext, Paradigm};

fn settings(pairs: &[(&str, serde_json::Value)]) -> Settings {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

/// A configuration with an explicit pool and team sizes, every other setting default.
fn custom(types: &[&str], teams: [usize; 2], extra: &[(&str, serde_json::Value)]) -> Config {
    let mut raw = settings(&[
        ("unit_types", serde_json::json!(types)),
        ("blue_units", teams[0].into()),
        ("red_units", teams[1].into()),
    ]);
    raw.extend(settings(extra));
    Config::from_settings(&raw).unwrap()
}

/// An environment reset, then staged with `units` (kind, team, position) in agent order.
fn staged(config: Config, units: &[(UnitType, usize, [f32; 2])]) -> Skirmish {
    let mut env = Skirmish::new(config).unwrap();
    env.reset(1).unwrap();
    let units = units
        .iter()
        .map(|(kind, team, pos)| Unit::fresh(*kind, *team, *pos))
        .collect();
    env.battle.as_mut().unwrap().arrange(units);
    env
}

fn battle(env: &Skirmish) -> &Battle {
    env.battle().unwrap()
}

fn unit(env: &Skirmish, i: usize) -> Unit {
    battle(env).units[i]
}

fn act(env: &mut Skirmish, actions: &[u32]) -> Transition {
    let actions: Vec<_> = actions.iter().map(|a| Some(Action(*a))).collect();
    let mut out = Transition::default();
    env.step(&actions, &mut out).unwrap();
    out
}

fn stop_all(env: &Skirmish) -> Vec<u32> {
    vec![actions::STOP; env.config().units()]
}

fn symbolic(env: &Skirmish, agent: usize) -> Vec<f32> {
    env.observe(agent, ObsRequest::SYMBOLIC)
        .symbolic
        .unwrap()
        .data
}

fn text(env: &Skirmish, agent: usize) -> String {
    env.observe(
        agent,
        ObsRequest {
            text: true,
            ..ObsRequest::MASK_ONLY
        },
    )
    .text
    .unwrap()
}

fn target(k: u32) -> u32 {
    actions::TARGET + k
}

/// Plays an episode with one policy per agent; returns every agent's return.
fn play(env: &mut Skirmish, policies: &mut [Box<dyn Policy>], seed: u64) -> Vec<f32> {
    env.reset(seed).unwrap();
    let n = env.spec().agents.len();
    for (agent, policy) in policies.iter_mut().enumerate() {
        let id = env.spec().agents[agent].id.clone();
        policy.reset(&AgentContext::new(
            seed,
            agent,
            id,
            env.spec().action_labels.len(),
        ));
    }
    let mut returns = vec![0.0; n];
    let mut out = Transition::default();
    while !env.acting().is_empty() {
        let acting = env.acting();
        let mut actions = vec![None; n];
        for agent in acting {
            let obs = env.observe(agent, policies[agent].wants());
            let decision = policies[agent].decide(&obs);
            assert!(
                obs.is_legal(decision.action),
                "illegal {:?}",
                decision.action
            );
            actions[agent] = Some(decision.action);
        }
        env.step(&actions, &mut out).unwrap();
        for (r, x) in returns.iter_mut().zip(&out.rewards) {
            *r += x;
        }
    }
    returns
}

fn scripted(config: &Config, strategy: Strategy) -> Vec<Box<dyn Policy>> {
    (0..config.units())
        .map(|_| Box::new(ScriptedSkirmish::new(config.clone(), strategy)) as Box<dyn Policy>)
        .collect()
}

#[test]
fn spec_describes_both_teams_as_simultaneous_agents() {
    let env = Skirmish::from_settings(&settings(&[("scenario", "terran_5_vs_6".into())])).unwrap();
    let spec = env.spec();
    assert_eq!(spec.name, "skirmish");
    assert_eq!(spec.stepping, Stepping::Simultaneous);
    assert_eq!(spec.teams(), vec!["blue", "red"]);
    assert_eq!(spec.agents[0].id, "blue_0");
    assert_eq!(spec.agents[10].id, "red_5");
    assert_eq!(spec.action_labels.len(), 6 + 6);
    assert_eq!(spec.action_label(Action(2)), "move_north");
    assert_eq!(spec.action_label(Action(11)), "target_5");
    assert_eq!(spec.default_action, Action(actions::STOP));
    assert_eq!(spec.max_steps, Some(200));
    let length = Layout::new(env.config(), 0).len();
    assert_eq!(spec.symbolic_shape, Some(vec![length]));
    assert_eq!(Layout::new(env.config(), 1).len(), length);
    assert!(env.acting().is_empty(), "nothing acts before reset");
}

#[test]
fn episodes_are_deterministic_per_seed() {
    let config = Config::from_settings(&settings(&[("scenario", "zerg_5_vs_6".into())])).unwrap();
    let run = |seed| {
        let mut env = Skirmish::new(config.clone()).unwrap();
        let mut policies = scripted(&config, Strategy::Heuristic);
        let returns = play(&mut env, &mut policies, seed);
        (returns, env.snapshot().unwrap(), env.steps())
    };
    let (a, b) = (run(11), run(11));
    assert_eq!(a, b);
    let c = run(12);
    assert_ne!(a.1, c.1, "another seed, another battle");
    // Compositions and starts vary with the seed.
    let mut starts = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let mut env = Skirmish::new(config.clone()).unwrap();
        env.reset(seed).unwrap();
        let types: Vec<_> = battle(&env).units.iter().map(|u| u.kind).collect();
        starts.insert(format!("{types:?}{:?}", battle(&env).units[0].pos));
    }
    assert_eq!(starts.len(), 20);
}

#[test]
fn snapshots_resume_exactly_and_refuse_strangers() {
    let config = Config::from_settings(&settings(&[
        ("scenario", "terran_5_vs_5".into()),
        ("extended_po", "both".into()),
    ]))
    .unwrap();
    let mut env = Skirmish::new(config.clone()).unwrap();
    let mut policies = scripted(&config, Strategy::FocusFire);
    let n = config.units();
    env.reset(5).unwrap();
    for (agent, p) in policies.iter_mut().enumerate() {
        p.reset(&AgentContext::new(
            5,
            agent,
            env.spec().agents[agent].id.clone(),
            11,
        ));
    }
    let drive = |env: &mut Skirmish, policies: &mut [Box<dyn Policy>], steps: usize| {
        let mut trace = Vec::new();
        for _ in 0..steps {
            if env.acting().is_empty() {
                break;
            }
            let mut actions = vec![None; n];
            for agent in env.acting() {
                let obs = env.observe(agent, ObsRequest::ALL);
                trace.push((obs.symbolic.clone(), obs.text.clone(), obs.legal.clone()));
                actions[agent] = Some(policies[agent].decide(&obs).action);
            }
            let mut out = Transition::default();
            env.step(&actions, &mut out).unwrap();
            trace.push((
                None,
                Some(format!("{:?}", out.rewards)),
                out.terminated.clone(),
            ));
        }
        trace
    };
    drive(&mut env, &mut policies, 8);
    let snapshot = env.snapshot().unwrap();
    let states: Vec<_> = policies.iter().map(|p| p.save_state().unwrap()).collect();
    let original = drive(&mut env, &mut policies, 40);

    let mut resumed = Skirmish::new(config.clone()).unwrap();
    resumed.restore(&snapshot).unwrap();
    let mut copies = scripted(&config, Strategy::FocusFire);
    for (agent, (p, state)) in copies.iter_mut().zip(&states).enumerate() {
        p.reset(&AgentContext::new(5, agent, format!("a{agent}"), 11));
        p.load_state(state).unwrap();
    }
    assert_eq!(drive(&mut resumed, &mut copies, 40), original);

    let other = Skirmish::from_settings(&settings(&[("scenario", "terran_5_vs_5".into())]));
    assert!(matches!(
        other.unwrap().restore(&snapshot),
        Err(EnvError::Restore(_))
    ));
    assert!(resumed.restore(&Snapshot(b"{}".to_vec())).is_err());
    let mut text = String::from_utf8(snapshot.0.clone()).unwrap();
    text = text.replacen("\"team\":0", "\"team\":7", 1);
    assert!(resumed.restore(&Snapshot(text.into_bytes())).is_err());
}

#[test]
fn enemies_are_visible_within_sight_only() {
    // blue_0 a stalker (sight 10); red_0 at 9.5, red_1 at 10.5.
    let config = custom(&["stalker", "zealot"], [1, 2], &[]);
    let env = staged(
        config,
        &[
            (UnitType::Stalker, 0, [5.0, 16.0]),
            (UnitType::Zealot, 1, [14.5, 16.0]),
            (UnitType::Zealot, 1, [5.0, 26.5]),
        ],
    );
    let layout = Layout::new(env.config(), 0);
    let obs = symbolic(&env, 0);
    let near = layout.enemy(0);
    assert_eq!(obs[near + at::VISIBLE], 1.0);
    assert!((obs[near + at::DISTANCE] - 0.95).abs() < 1e-5);
    assert!((obs[near + at::REL_X] - 0.95).abs() < 1e-5);
    assert_eq!(obs[near + at::TARGETABLE], 0.0, "9.5 away: out of range 6");
    assert_eq!(
        obs[near + at::UNIT + 1],
        1.0,
        "zealot is the pool's second type"
    );
    let far = layout.enemy(1);
    assert!(
        obs[far..far + layout.unit_block()]
            .iter()
            .all(|v| *v == 0.0)
    );
    let text = text(&env, 0);
    assert!(text.contains("Enemy #0 (zealot)"), "{text}");
    assert!(!text.contains("Enemy #1"), "{text}");
    assert!(text.contains("direction East"), "{text}");
    // The zealots (sight 9) cannot see the stalker at 9.5 and 10.5.
    assert_eq!(battle(&env).visible(1), 0);
}

#[test]
fn extended_visibility_keeps_an_enemy_to_its_first_spotter() {
    let config = |po: &str, hops: u32| {
        custom(
            &["stalker", "zealot"],
            [2, 1],
            &[("extended_po", po.into()), ("max_hops", hops.into())],
        )
    };
    // Both stalkers see the zealot, 5.1 away: in range of both.
    let units = [
        (UnitType::Stalker, 0, [10.0, 10.0]),
        (UnitType::Stalker, 0, [12.0, 10.0]),
        (UnitType::Zealot, 1, [11.0, 15.0]),
    ];
    let plain = staged(config("none", 0), &units);
    assert_eq!(battle(&plain).visible(1) & 0b100, 0b100);
    assert!(plain.observe(1, ObsRequest::MASK_ONLY).legal[target(0) as usize]);

    let mut extended = staged(config("blue", 0), &units);
    assert_eq!(battle(&extended).spotters[2], Some(0));
    assert_eq!(battle(&extended).visible(0) & 0b100, 0b100);
    assert_eq!(
        battle(&extended).visible(1) & 0b100,
        0,
        "not the first spotter"
    );
    assert!(!extended.observe(1, ObsRequest::MASK_ONLY).legal[target(0) as usize]);
    assert!(extended.observe(0, ObsRequest::MASK_ONLY).legal[target(0) as usize]);
    let layout = Layout::new(extended.config(), 0);
    assert_eq!(symbolic(&extended, 1)[layout.enemy(0) + at::VISIBLE], 0.0);
    // Red is not under extended partial observability: the zealot sees both stalkers.
    assert_eq!(battle(&extended).visible(2), 0b011);

    // When the spotter dies, the next unit to see the enemy spots it.
    extended.battle.as_mut().unwrap().units[0].health = 0.0;
    let stop = stop_all(&extended);
    act(&mut extended, &stop);
    assert_eq!(battle(&extended).spotters[2], Some(1));
    assert!(extended.observe(1, ObsRequest::MASK_ONLY).legal[target(0) as usize]);

    // With one hop of memory, the relayed sighting makes the attack legal again.
    let relayed = staged(config("blue", 1), &units);
    assert!(relayed.observe(1, ObsRequest::MASK_ONLY).legal[target(0) as usize]);
    let memory = layout.enemy_memory(0);
    let obs = symbolic(&relayed, 1);
    assert_eq!(obs[memory + at::KNOWN], 1.0);
    assert_eq!(obs[memory + at::MEM_HOPS], 1.0);
    assert_eq!(
        obs[layout.enemy(0) + at::VISIBLE],
        0.0,
        "still not in sight"
    );
}

#[test]
fn sightings_propagate_over_exactly_max_hops() {
    // A chain of four stalkers 9 apart (within each other's sight of 10, not 18 apart);
    // the zealot is 9 from blue_0 only.
    let units = [
        (UnitType::Stalker, 0, [2.0, 16.0]),
        (UnitType::Stalker, 0, [11.0, 16.0]),
        (UnitType::Stalker, 0, [20.0, 16.0]),
        (UnitType::Stalker, 0, [29.0, 16.0]),
        (UnitType::Zealot, 1, [2.0, 25.0]),
    ];
    for hops in 0..=4u32 {
        let config = custom(
            &["stalker", "zealot"],
            [4, 1],
            &[("extended_po", "blue".into()), ("max_hops", hops.into())],
        );
        let env = staged(config, &units);
        let layout = Layout::new(env.config(), 0);
        for agent in 0..4 {
            let known = symbolic(&env, agent)[layout.enemy_memory(0) + at::KNOWN] == 1.0;
            assert_eq!(
                known,
                agent as u32 <= hops,
                "agent {agent}, max_hops {hops}"
            );
            let recall = battle(&env).memory[0].recall(agent, 4);
            assert_eq!(
                recall.map(|r| (r.source, r.hops)),
                known.then_some((0, agent as u32))
            );
        }
        if hops >= 2 {
            let text = text(&env, 2);
            assert!(
                text.contains("Enemy #0 (zealot)") && text.contains("by Ally #0, 2 hops"),
                "{text}"
            );
        }
    }
    // The memory outlives the sighting for memory_max_age steps, then is dropped.
    let config = custom(
        &["stalker", "zealot"],
        [4, 1],
        &[("max_hops", 3.into()), ("memory_max_age", 2.into())],
    );
    let mut env = staged(config, &units);
    let mut moves = stop_all(&env);
    moves[4] = actions::NORTH;
    act(&mut env, &moves);
    assert!(
        battle(&env).visible(0) & (1 << 4) == 0,
        "the zealot walked out of sight"
    );
    assert_eq!(battle(&env).memory[0].recall(3, 4).map(|r| r.age), Some(1));
    act(&mut env, &moves);
    assert_eq!(battle(&env).memory[0].recall(3, 4).map(|r| r.age), Some(2));
    act(&mut env, &moves);
    assert!(battle(&env).memory[0].recall(3, 4).is_none());
}

#[test]
fn medivacs_heal_within_range_spending_energy() {
    let config = custom(&["marine", "medivac", "marauder"], [2, 1], &[]);
    let mut env = staged(
        config,
        &[
            (UnitType::Marine, 0, [5.0, 5.0]),
            (UnitType::Medivac, 0, [6.0, 5.0]),
            (UnitType::Marauder, 1, [27.0, 27.0]),
        ],
    );
    env.battle.as_mut().unwrap().units[0].health = 20.0;
    env.battle.as_mut().unwrap().refresh();
    let legal = env.observe(1, ObsRequest::MASK_ONLY).legal;
    assert!(legal[target(0) as usize], "heal the marine");
    assert!(!legal[target(1) as usize], "not itself");
    act(&mut env, &[actions::STOP, target(0), actions::STOP]);
    // 12.6 health per second for half a second; 1 energy per 3 health, 0.7875/s back.
    assert!(
        (unit(&env, 0).health - 26.3).abs() < 1e-3,
        "{:?}",
        unit(&env, 0)
    );
    assert!((unit(&env, 1).energy - (50.0 - 2.1 + 0.39375)).abs() < 1e-3);
    assert!((battle(&env).stats[0].healing - 6.3).abs() < 1e-3);
    for _ in 0..6 {
        act(&mut env, &[actions::STOP, target(0), actions::STOP]);
    }
    assert_eq!(unit(&env, 0).health, 45.0, "never above the maximum");
    // Out of range (4), nothing happens.
    env.battle.as_mut().unwrap().units[0].health = 30.0;
    env.battle.as_mut().unwrap().units[1].pos = [10.0, 5.0];
    env.battle.as_mut().unwrap().refresh();
    assert!(!env.observe(1, ObsRequest::MASK_ONLY).legal[target(0) as usize]);
    act(&mut env, &[actions::STOP, target(0), actions::STOP]);
    assert_eq!(unit(&env, 0).health, 30.0);
    // Marauders cannot shoot flyers; medivacs are flyers.
    env.battle.as_mut().unwrap().units[2].pos = [10.5, 5.0];
    env.battle.as_mut().unwrap().refresh();
    let legal = env.observe(2, ObsRequest::MASK_ONLY).legal;
    assert!(
        !legal[target(1) as usize] && legal[target(0) as usize],
        "{legal:?}"
    );
    let text = text(&env, 1);
    assert!(
        text.contains("energy") && text.contains("heal range 4"),
        "{text}"
    );
}

#[test]
fn the_colossus_lance_hits_across_the_line_of_fire() {
    let config = custom(&["colossus", "zealot"], [1, 3], &[]);
    let mut env = staged(
        config,
        &[
            (UnitType::Colossus, 0, [10.0, 10.0]),
            (UnitType::Zealot, 1, [16.0, 10.0]),
            (UnitType::Zealot, 1, [16.0, 11.0]),
            (UnitType::Zealot, 1, [17.5, 10.0]),
        ],
    );
    act(
        &mut env,
        &[target(0), actions::STOP, actions::STOP, actions::STOP],
    );
    // Two hits of 10 + 5 (zealots are light) on each zealot the lance touches, shield
    // first: 50 - 30 = 20; the zealot behind the target is untouched.
    for (zealot, shield) in [(1, 20.0), (2, 20.0), (3, 50.0)] {
        let u = unit(&env, zealot);
        assert_eq!((u.shield, u.health), (shield, 100.0), "zealot {zealot}");
    }
    assert_eq!(battle(&env).stats[0].damage_dealt, 60.0);
}

#[test]
fn banelings_explode_on_everything_around() {
    let config = custom(&["baneling", "zergling"], [1, 3], &[]);
    let mut env = staged(
        config,
        &[
            (UnitType::Baneling, 0, [10.0, 10.0]),
            (UnitType::Zergling, 1, [11.5, 10.0]),
            (UnitType::Zergling, 1, [10.0, 12.4]),
            (UnitType::Zergling, 1, [13.5, 10.0]),
        ],
    );
    let out = act(
        &mut env,
        &[target(0), actions::STOP, actions::STOP, actions::STOP],
    );
    // 16 + 19 against light zerglings (35 health): both inside the blast die.
    assert!(!unit(&env, 0).alive(), "the baneling dies exploding");
    assert!(!unit(&env, 1).alive() && !unit(&env, 2).alive());
    assert_eq!(unit(&env, 3).health, 35.0);
    let deaths = out.events.iter().filter(|e| e.kind == "death").count();
    assert_eq!(deaths, 3);
}

#[test]
fn shields_absorb_first_armour_reduces_health_and_shields_regenerate() {
    let config = custom(&["stalker", "zealot", "marine", "medivac"], [2, 2], &[]);
    let mut env = staged(
        config,
        &[
            (UnitType::Stalker, 0, [10.0, 10.0]),
            (UnitType::Marine, 0, [20.0, 20.0]),
            (UnitType::Zealot, 1, [15.0, 10.0]),
            (UnitType::Medivac, 1, [24.0, 20.0]),
        ],
    );
    act(
        &mut env,
        &[target(0), target(1), actions::STOP, actions::STOP],
    );
    let zealot = unit(&env, 2);
    assert_eq!(
        (zealot.shield, zealot.health),
        (37.0, 100.0),
        "13 off the shield"
    );
    // The marine's 9 against the medivac's armour 1: 8 per shot.
    assert_eq!(unit(&env, 3).health, 150.0 - 8.0);

    let mut env = staged(
        custom(&["stalker", "zealot"], [1, 1], &[]),
        &[
            (UnitType::Stalker, 0, [3.0, 3.0]),
            (UnitType::Zealot, 1, [28.0, 28.0]),
        ],
    );
    env.battle.as_mut().unwrap().units[1].shield = 10.0;
    env.battle.as_mut().unwrap().units[1].health = 60.0;
    for _ in 0..13 {
        act(&mut env, &[actions::STOP, actions::STOP]);
    }
    assert_eq!(unit(&env, 1).shield, 10.0, "6.5 s: not yet");
    for _ in 0..3 {
        act(&mut env, &[actions::STOP, actions::STOP]);
    }
    let shield = unit(&env, 1).shield;
    // Regeneration from tick 112 (7 s) to 128: 17 ticks of 2.8 / 16.
    assert!(
        (shield - (10.0 + 17.0 * 2.8 / 16.0)).abs() < 1e-4,
        "{shield}"
    );
    assert_eq!(unit(&env, 1).health, 60.0, "health does not regenerate");
}

#[test]
fn shaped_returns_never_exceed_twenty_and_a_win_earns_exactly_twenty() {
    let mut wins = 0;
    for scenario in ["protoss_5_vs_5", "terran_5_vs_6", "zerg_5_vs_5"] {
        let config = Config::from_settings(&settings(&[("scenario", scenario.into())])).unwrap();
        let mut env = Skirmish::new(config.clone()).unwrap();
        for seed in 0..6 {
            let mut policies = scripted(&config, Strategy::FocusFire);
            for p in policies.iter_mut().take(config.teams[0]) {
                *p = Box::new(Random::default());
            }
            let returns = play(&mut env, &mut policies, seed);
            let b = battle(&env);
            for team in 0..2 {
                let r = returns[b.offset(team)];
                assert!(r <= MAX_SHAPED_RETURN + 1e-3, "{scenario} seed {seed}: {r}");
                if b.ending == Some(Ending::Won(team)) {
                    wins += 1;
                    assert!(
                        (r - MAX_SHAPED_RETURN).abs() < 1e-3,
                        "{scenario}: won with {r}"
                    );
                }
                for i in b.members(team) {
                    assert_eq!(returns[i], r, "one reward per team, dead or alive");
                }
            }
        }
    }
    assert!(wins > 0);
}

#[test]
fn sparse_rewards_are_plus_and_minus_one() {
    let config = custom(
        &["marine", "zergling"],
        [1, 1],
        &[("reward", "sparse".into())],
    );
    let mut env = staged(
        config,
        &[
            (UnitType::Marine, 0, [10.0, 10.0]),
            (UnitType::Marine, 1, [14.0, 10.0]),
        ],
    );
    env.battle.as_mut().unwrap().units[1].health = 5.0;
    let out = act(&mut env, &[target(0), actions::STOP]);
    assert_eq!(out.rewards, vec![1.0, -1.0]);
    assert_eq!(out.terminated, vec![true, true]);
    assert_eq!(env.outcome(), Some(vec![Outcome::Win, Outcome::Loss]));
    assert!(env.acting().is_empty());
    assert!(matches!(
        env.step(&[None, None], &mut Transition::default()),
        Err(EnvError::NotRunning)
    ));
    let metrics = env.metrics();
    assert_eq!(metrics["won_blue"], 1);
    assert_eq!(metrics["dead_red"], 1);
    assert_eq!(metrics["damage_dealt_blue"], 5.0);
}

#[test]
fn time_out_truncates_as_a_draw() {
    let config = custom(&["marine", "zergling"], [1, 1], &[("max_steps", 3.into())]);
    let mut env = staged(
        config,
        &[
            (UnitType::Marine, 0, [2.0, 2.0]),
            (UnitType::Marine, 1, [30.0, 30.0]),
        ],
    );
    for _ in 0..2 {
        let out = act(&mut env, &[actions::STOP, actions::STOP]);
        assert!(!out.all_done());
    }
    let out = act(&mut env, &[actions::STOP, actions::STOP]);
    assert_eq!((out.terminated[0], out.truncated[0]), (false, true));
    assert_eq!(env.outcome(), Some(vec![Outcome::Draw, Outcome::Draw]));
}

#[test]
fn legal_masks_follow_smac() {
    let config = custom(&["marine", "zergling"], [2, 1], &[]);
    let mut env = staged(
        config,
        &[
            (UnitType::Marine, 0, [0.5, 16.0]),
            (UnitType::Marine, 0, [16.0, 31.5]),
            (UnitType::Zergling, 1, [4.0, 16.0]),
        ],
    );
    let legal = env.observe(0, ObsRequest::MASK_ONLY).legal;
    assert_eq!(legal.len(), 8);
    assert!(!legal[actions::NOOP as usize] && legal[actions::STOP as usize]);
    assert!(!legal[actions::WEST as usize], "at the west edge");
    assert!(legal[actions::EAST as usize] && legal[target(0) as usize]);
    assert!(!legal[target(1) as usize], "no second enemy");
    assert!(!env.observe(1, ObsRequest::MASK_ONLY).legal[actions::NORTH as usize]);
    let view = text(&env, 0);
    assert!(
        view.contains("Can move West: no") && view.contains("Can move East: yes"),
        "{view}"
    );
    assert!(view.contains("attack Enemy #0 (target_0)"), "{view}");
    env.battle.as_mut().unwrap().units[0].health = 0.0;
    let legal = env.observe(0, ObsRequest::MASK_ONLY).legal;
    assert_eq!(legal.iter().filter(|l| **l).count(), 1);
    assert!(legal[actions::NOOP as usize]);
    assert!(
        symbolic(&env, 0).iter().all(|v| *v == 0.0),
        "dead agents see nothing"
    );
    assert!(text(&env, 0).contains("Your unit is dead"));
    let out_of_range = env.step(&[Some(Action(99)), None, None], &mut Transition::default());
    assert!(matches!(
        out_of_range,
        Err(EnvError::InvalidAction { agent: 0, .. })
    ));
}

#[test]
fn moves_push_and_stay_on_the_map() {
    let config = custom(&["zergling", "marine"], [2, 1], &[]);
    let mut env = staged(
        config,
        &[
            (UnitType::Zergling, 0, [10.0, 10.0]),
            (UnitType::Zergling, 0, [10.2, 10.0]),
            (UnitType::Marine, 1, [31.0, 1.0]),
        ],
    );
    act(&mut env, &[actions::NORTH, actions::STOP, actions::EAST]);
    let (a, b) = (unit(&env, 0), unit(&env, 1));
    let gap = ((a.pos[0] - b.pos[0]).powi(2) + (a.pos[1] - b.pos[1]).powi(2)).sqrt();
    assert!(gap >= 0.7, "overlapping zerglings are pushed apart: {gap}");
    assert!(a.pos[1] > 11.0, "moved north about 4.13 x 0.5");
    assert_eq!(unit(&env, 2).pos[0], 32.0, "clamped at the edge");
    assert!(unit(&env, 2).alive(), "edges do not kill by default");
}

#[test]
fn where_edges_kill_moves_towards_them_stay_open_and_kill() {
    let config = custom(&["marine"], [1, 1], &[("walls_kill", true.into())]);
    let mut env = staged(
        config,
        &[
            (UnitType::Marine, 0, [0.5, 16.0]),
            (UnitType::Marine, 1, [28.0, 16.0]),
        ],
    );
    let legal = env.observe(0, ObsRequest::MASK_ONLY).legal;
    assert!(legal[actions::WEST as usize], "SMAX leaves every move open");
    act(&mut env, &[actions::WEST, actions::STOP]);
    assert!(!unit(&env, 0).alive(), "the unit walked into the edge");
    assert_eq!(env.outcome(), Some(vec![Outcome::Loss, Outcome::Win]));
}

#[test]
fn the_heuristic_beats_a_random_team() {
    let config = Config::default();
    let mut env = Skirmish::new(config.clone()).unwrap();
    let mut red_wins = 0;
    for seed in 0..10 {
        let mut policies = scripted(&config, Strategy::Heuristic);
        for p in policies.iter_mut().take(5) {
            *p = Box::new(Random::default());
        }
        play(&mut env, &mut policies, seed);
        red_wins += u32::from(battle(&env).ending == Some(Ending::Won(1)));
    }
    assert!(red_wins >= 8, "heuristic won {red_wins} of 10");
}

#[test]
fn scripted_strategies_act_legally_and_save_state() {
    for strategy in [Strategy::Heuristic, Strategy::FocusFire, Strategy::Kiting] {
        for scenario in ["protoss_5_vs_6", "terran_10_vs_11", "zerg_5_vs_5"] {
            let config =
                Config::from_settings(&settings(&[("scenario", scenario.into())])).unwrap();
            let mut env = Skirmish::new(config.clone()).unwrap();
            let mut policies = scripted(&config, strategy);
            play(&mut env, &mut policies, 3);
            assert!(battle(&env).is_over());
        }
    }
    let env = settings(&[("scenario", "zerg_5_vs_5".into())]);
    let slot = settings(&[("strategy", "kiting".into())]);
    let player = (KIND.scripted.unwrap())(&env, &slot).unwrap();
    assert_eq!(player.paradigm(), Paradigm::Scripted);
    assert!((KIND.scripted.unwrap())(&env, &settings(&[("strategy", "bold".into())])).is_err());
    let mut p = ScriptedSkirmish::new(Config::default(), Strategy::Heuristic);
    assert!(p.load_state(&serde_json::json!("nonsense")).is_err());
}

#[test]
fn a_marked_unit_is_ringed_and_drawn_above_a_teammate_it_overlaps() {
    let config = custom(&["stalker", "zealot"], [2, 1], &[]);
    let env = staged(
        config,
        &[
            (UnitType::Stalker, 0, [10.0, 10.0]),
            (UnitType::Zealot, 0, [10.0, 10.0]),
            (UnitType::Zealot, 1, [28.0, 28.0]),
        ],
    );
    let plain = env.render().unwrap();
    assert_eq!(env.render_marked(&[]).unwrap(), plain);
    let marked = env.render_marked(&[0]).unwrap();
    let px = |f: &Frame, x: f32, y: f32| {
        let (px, py) = ((x * 12.0) as usize, ((32.0 - y) * 12.0) as usize);
        let i = (py * f.width as usize + px) * 3;
        [f.rgb[i], f.rgb[i + 1], f.rgb[i + 2]]
    };
    // The units' cores: a stalker's and a zealot's colour.
    let core = (10.05, 10.05);
    assert_eq!(
        px(&plain, core.0, core.1),
        [250, 140, 30],
        "unmarked: the zealot on top"
    );
    assert_eq!(
        px(&marked, core.0, core.1),
        [250, 200, 60],
        "marked: the stalker on top"
    );
    // The ring: beyond the bodies (radius 0.625 units + 1.5 pixels), within 4.5 pixels.
    let ring = (10.05 + 0.625 + 3.0 / 12.0, 10.05);
    assert_eq!(px(&marked, ring.0, ring.1), MARK);
    assert_ne!(px(&plain, ring.0, ring.1), MARK);
    let beyond = (10.05 + 0.625 + 6.0 / 12.0, 10.05);
    assert_ne!(px(&marked, beyond.0, beyond.1), MARK);
    assert!(!plain.rgb.chunks(3).any(|p| p == MARK));
}

#[test]
fn frames_show_the_battlefield_and_the_agent_view() {
    let config = custom(
        &["stalker", "zealot"],
        [2, 1],
        &[("extended_po", "blue".into())],
    );
    let env = staged(
        config,
        &[
            (UnitType::Stalker, 0, [4.0, 4.0]),
            (UnitType::Stalker, 0, [12.0, 4.0]),
            (UnitType::Zealot, 1, [28.0, 28.0]),
        ],
    );
    let frame = env.render().unwrap();
    frame.validate().unwrap();
    assert_eq!((frame.width, frame.height), (384, 384));
    let px = |f: &Frame, x: f32, y: f32| {
        let (px, py) = ((x * 12.0) as usize, ((32.0 - y) * 12.0) as usize);
        let i = (py * f.width as usize + px) * 3;
        [f.rgb[i], f.rgb[i + 1], f.rgb[i + 2]]
    };
    // Off the grid lines (every 4 units).
    let (zealot, ground) = ((28.2, 28.2), (26.2, 26.2));
    assert_ne!(
        px(&frame, zealot.0, zealot.1),
        px(&frame, ground.0, ground.1),
        "the zealot is drawn"
    );
    let view = env.observe(
        0,
        ObsRequest {
            frame: true,
            ..ObsRequest::MASK_ONLY
        },
    );
    let view = view.frame.unwrap();
    assert_eq!(
        px(&view, zealot.0, zealot.1),
        px(&view, ground.0, ground.1),
        "unseen: not drawn"
    );
    assert!(
        px(&view, ground.0, ground.1)[1] < px(&frame, ground.0, ground.1)[1],
        "fog outside sight"
    );
}

#[test]
fn metrics_and_registry_entry() {
    let make = KIND.make;
    let mut env = make(&settings(&[("scenario", "protoss_10_vs_11".into())])).unwrap();
    env.reset(2).unwrap();
    assert_eq!(env.acting().len(), 21);
    let keys: Vec<_> = env.metrics().keys().cloned().collect();
    for key in [
        "won_blue",
        "dead_red",
        "damage_dealt_blue",
        "healing_red",
        "relayed_per_step_blue",
    ] {
        assert!(keys.iter().any(|k| k == key), "{key} in {keys:?}");
    }
    assert!(make(&settings(&[("scenario", "protoss_3_vs_3".into())])).is_err());
    assert!(KIND.settings.iter().any(|s| s.starts_with("max_hops = 3")));
}

#[test]
fn relays_let_focus_fire_fight_under_extended_partial_observability() {
    // COMPASS's ablation: under extended partial observability only the first spotter
    // sees an enemy; the memory's relays make it known (and attackable) to the others.
    let wins = |hops: u32| {
        let config = Config::from_settings(&settings(&[
            ("extended_po", "blue".into()),
            ("max_hops", hops.into()),
        ]))
        .unwrap();
        let mut env = Skirmish::new(config.clone()).unwrap();
        let mut won = 0;
        for seed in 0..12 {
            let mut policies = scripted(&config, Strategy::Heuristic);
            for p in policies.iter_mut().take(5) {
                *p = Box::new(ScriptedSkirmish::new(config.clone(), Strategy::FocusFire));
            }
            play(&mut env, &mut policies, seed);
            won += u32::from(battle(&env).ending == Some(Ending::Won(0)));
        }
        (
            won,
            env.metrics()["relayed_per_step_blue"].as_f64().unwrap(),
        )
    };
    let (with_relays, relayed) = wins(3);
    let (alone, none) = wins(0);
    assert!(
        with_relays >= 6 && alone <= 1,
        "3 hops won {with_relays}, 0 hops {alone}"
    );
    assert!(relayed > 0.0 && none == 0.0);
}
