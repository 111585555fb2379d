//! Whole-team play: ALEM scoring, diagnostics and the scripted team.

use super::*;

/// A team of `kind` agents (scripted or random; three unless `pairs` say otherwise) on
/// the easy preset plus `pairs`, played for up to `steps` steps.
pub(super) fn run_team(kind: &str, pairs: &[(&str, Value)], seed: u64, steps: u32) -> CoordWorld {
    let mut all = vec![("preset", json!("easy"))];
    all.extend(pairs.iter().cloned());
    let mut env = CoordWorld::from_settings(&settings(&all)).unwrap();
    env.reset(seed).unwrap();
    let n = env.config().agents;
    let labels = env.spec().action_labels.len();
    let mut policies: Vec<Box<dyn mosaic_core::Policy>> = (0..n)
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
            labels,
        ));
    }
    let mut t = Transition::default();
    for _ in 0..steps {
        let acting = env.acting();
        if acting.is_empty() {
            break;
        }
        let mut actions = vec![None; n];
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
