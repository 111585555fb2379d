//! Actor overhead: the same soccer episodes (4 random agents) once through the bare
//! environment and policies, once through sessions and actors with full recording
//! (JSONL + run store). Prints the overhead per agent decision, measured in the same run.
//!
//! `cargo bench --bench sessions [-- EPISODES]` (goal: ≤ 2 µs per decision).

#[path = "support/soccer.rs"]
mod soccer;

use mosaic::prelude::*;
use mosaic::run::RunOptions;
use mosaic_core::Transition;
use mosaic_core::baseline::Random;
use mosaic_recorder::Durability;
use soccer::MAX_STEPS;
use std::time::{Duration, Instant};

/// Steps and decisions of `episodes` episodes played without actors or recording.
fn bare(episodes: u32) -> (Duration, u64) {
    let registry = mosaic::experiment::default_envs();
    let mut env = registry
        .make("soccer-2v2", &Default::default())
        .expect("soccer is registered");
    let agents = env.spec().agents.clone();
    let mut policies: Vec<Random> = agents.iter().map(|_| Random::default()).collect();
    let mut transition = Transition::default();
    let mut decisions = 0u64;
    let started = Instant::now();
    for episode in 0..episodes {
        let seed = 1000 + u64::from(episode);
        env.reset(seed).expect("reset");
        for (i, (policy, agent)) in policies.iter_mut().zip(&agents).enumerate() {
            policy.reset(&AgentContext::new(seed, i, agent.id.clone(), 8));
        }
        while env.steps() < MAX_STEPS {
            let acting = env.acting();
            if acting.is_empty() {
                break;
            }
            let mut actions = vec![None; agents.len()];
            for agent in acting {
                let obs = env.observe(agent, ObsRequest::MASK_ONLY);
                actions[agent] = Some(policies[agent].decide(&obs).action);
                decisions += 1;
            }
            env.step(&actions, &mut transition).expect("step");
            if transition.all_done() {
                break;
            }
        }
    }
    (started.elapsed(), decisions)
}

/// The same episodes through sessions and actors, recorded into a run directory.
fn actors(episodes: u32, durability: Durability, out: &std::path::Path) -> (Duration, u64) {
    let experiment = Experiment::builder("overhead")
        .episodes(episodes)
        .seeds(SeedPlan::Procedural { base: 1000 })
        .max_steps(MAX_STEPS)
        .operator(Operator::new("pitch", "soccer-2v2").everyone("random"))
        .build()
        .expect("valid experiment");
    let started = Instant::now();
    let outcome = experiment
        .run(&RunOptions {
            out: out.to_owned(),
            run_id: Some(format!("{durability:?}")),
            durability,
            ..RunOptions::default()
        })
        .expect("run");
    (started.elapsed(), outcome.tally.decisions)
}

/// The same episodes through sessions and actors with no subscriber: the actor cost alone.
fn actors_unrecorded(episodes: u32) -> (Duration, u64) {
    soccer::unrecorded(episodes, Default::default())
}

fn main() {
    let episodes: u32 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().expect("temp dir");
    // Warm up allocator, page cache and code.
    bare(5);
    let (bare_time, bare_decisions) = bare(episodes);
    let per_bare = bare_time.as_secs_f64() * 1e6 / bare_decisions as f64;
    let (time, decisions) = actors_unrecorded(episodes);
    assert_eq!(
        decisions, bare_decisions,
        "both paths play the same episodes"
    );
    let per_actor = time.as_secs_f64() * 1e6 / decisions as f64;
    println!(
        "{episodes} episodes, {decisions} decisions | bare {per_bare:.3} µs/decision | \
         sessions+actors, no recording {per_actor:.3} µs/decision | overhead {:.3} µs/decision \
         (goal ≤ 2)",
        per_actor - per_bare
    );
    for durability in [Durability::Flush, Durability::Sync] {
        let out = dir.path().join(format!("{durability:?}"));
        let (time, decisions) = actors(episodes, durability, &out);
        assert_eq!(
            decisions, bare_decisions,
            "both paths play the same episodes"
        );
        let per_actor = time.as_secs_f64() * 1e6 / decisions as f64;
        println!(
            "{episodes} episodes, {decisions} decisions | bare {per_bare:.3} µs/decision | \
             sessions+actors+recording ({durability:?}) {per_actor:.3} µs/decision | \
             overhead {:.3} µs/decision (goal ≤ 2) | ratio {:.1}x",
            per_actor - per_bare,
            per_actor / per_bare
        );
    }
}
