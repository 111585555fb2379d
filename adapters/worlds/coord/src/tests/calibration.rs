//! ALEM's calibration settings (App. J.1): one agent alone, a team without role pressure
//! or coordination tasks, a team with soft specialisation only; all on the same map.

use super::scoring::run_team;
use super::*;

#[test]
fn a_single_agent_plays_the_base_game() {
    let solo = [
        ("agents", json!(1)),
        ("specialisation", json!(false)),
        ("scoring", json!("alem")),
    ];
    for seed in [3, 4] {
        let env = run_team("scripted", &solo, seed, 1500);
        let m = env.metrics();
        assert_eq!(env.spec().agents.len(), 1);
        assert_eq!(m["coordination_sites"], json!(0));
        assert_eq!(m["sync_successes"], json!(0));
        assert_eq!(m["role_attempts"], json!(0));
        // Nothing of the coordination category to earn; ALEM's scale stays ALEM's.
        assert_eq!(m["coord_reachable_max"], json!(0.0));
        assert_eq!(m["coord_max"], json!(159.0));
        assert_eq!(m["coord_pct"], json!(0.0));
        assert_eq!(m["base_max"], json!(217.0));
        let base = m["base_pct"].as_f64().unwrap();
        assert!(
            base > 0.0,
            "the scripted agent earns base achievements: {m:?}"
        );
        // The agent's text says it plays alone, with no role gate.
        let text = text_of(&env, 0);
        assert!(text.contains("(Agent 0 of 1). No specialisation"), "{text}");
        assert!(!text.contains("Teammates:"), "{text}");
    }
    // One agent cannot take part in coordination tasks.
    let refused = CoordWorld::from_settings(&settings(&[
        ("agents", json!(1)),
        ("coordination_tasks", json!(true)),
    ]))
    .unwrap_err();
    assert_eq!(refused.path, "coordination_tasks");
}

#[test]
fn specialisation_and_coordination_tasks_turn_off_independently_of_alpha() {
    let plain = [
        ("preset", json!("hard")),
        ("specialisation", json!(false)),
        ("coordination_tasks", json!(false)),
    ];
    let soft_only = [
        ("preset", json!("hard")),
        ("coordination_tasks", json!(false)),
    ];
    let mut gated = 0;
    for seed in [5, 6, 7] {
        let m = run_team("random", &plain, seed, 400).metrics();
        assert_eq!(m["role_attempts"], json!(0), "seed {seed}");
        assert_eq!(m["coordination_sites"], json!(0));
        assert_eq!(m["coord_max"], json!(0.0));
        assert_eq!(m["coord_pct"], json!(0.0));
        let m = run_team("random", &soft_only, seed, 400).metrics();
        assert_eq!(m["coordination_sites"], json!(0));
        gated += m["role_failures"].as_u64().unwrap();
    }
    // At α = 0.9 with specialisation, non-specialists fail most role actions.
    assert!(gated > 0);
    // Without coordination tasks the achievement list has no coordination achievement.
    let config = Config::from_settings(&settings(&plain)).unwrap();
    assert!(achievable_coordination(&config).is_empty());
    let list = CoordWorld::new(config).spec().descriptions[ACHIEVEMENTS_DESCRIPTION].clone();
    assert!(
        list.starts_with("Collect Wood\n") && !list.contains("Coord"),
        "{list}"
    );
}
