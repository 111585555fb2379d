//! Learning goals (benchmarks, not timed tests): PPO on the native DoorKey 5×5 reaches a
//! success rate ≥ 0.9 within 300,000 environment steps; a soccer-2v2 IPPO team beats random
//! ≥ 95% and the scripted team ≥ 50% of games.
//!
//! Run with `cargo bench -p mosaic-rl --bench learning` (several minutes); it prints each
//! figure against its goal. `MOSAIC_SOCCER_STEPS` sets the soccer budget (default 2M),
//! `MOSAIC_SOCCER_OPPONENT` the team trained against (`random`, the default, or
//! `scripted`).

use mosaic_core::experiment::SlotSpec;
use mosaic_core::{AgentContext, EnvRegistry, ObsRequest, Outcome, Policy, Settings, Transition};
use mosaic_rl::Checkpoint;
use mosaic_rl::policy::{Inference, RlPolicy};
use mosaic_rl::train::{TrainOptions, Trainer};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

const EVAL_EPISODES: u64 = 200;

fn options(dir: &Path, id: &str) -> TrainOptions {
    TrainOptions {
        dir: dir.join(id),
        run_id: id.into(),
        versions: Default::default(),
        progress: true,
    }
}

fn trained(policy: &Path, greedy: bool) -> Box<dyn Policy> {
    let checkpoint = Checkpoint::load(policy).expect("the trained checkpoint loads");
    let inference = Inference::new(&checkpoint.net).expect("inference of a trained network");
    Box::new(RlPolicy::new(Arc::new(inference), greedy))
}

/// Plays `EVAL_EPISODES` episodes on fresh seeds; answers each episode's outcome of agent 0
/// and its final rewards.
fn evaluate(
    envs: &EnvRegistry,
    env: &str,
    settings: &Settings,
    mut players: Vec<Box<dyn Policy>>,
) -> Vec<(Option<Outcome>, f32)> {
    let mut results = Vec::new();
    for episode in 0..EVAL_EPISODES {
        let seed = 1_000_000 + episode;
        let mut world = envs.make(env, settings).expect("the environment builds");
        world.reset(seed).expect("resets");
        let spec = world.spec().clone();
        for (agent, player) in players.iter_mut().enumerate() {
            let id = spec.agents[agent].id.clone();
            player.reset(&AgentContext::new(
                seed,
                agent,
                id,
                spec.action_labels.len(),
            ));
        }
        let mut out = Transition::new(spec.agents.len());
        let mut actions = vec![None; spec.agents.len()];
        let mut last_reward = 0.0;
        loop {
            let acting = world.acting();
            if acting.is_empty() {
                break;
            }
            actions.iter_mut().for_each(|a| *a = None);
            for agent in acting {
                let want = players[agent].wants().union(ObsRequest::SYMBOLIC);
                let obs = world.observe(agent, want);
                actions[agent] = Some(players[agent].decide(&obs).action);
            }
            world.step(&actions, &mut out).expect("steps");
            last_reward = out.rewards[0];
            if out.all_done() {
                break;
            }
        }
        let outcome = world.outcome().map(|o| o[0]);
        results.push((outcome, last_reward));
    }
    results
}

fn doorkey(dir: &Path) {
    let envs = mosaic_adapters::in_process_envs();
    let trainer = Trainer::builder("doorkey", "gridworld")
        .env_setting("task", "doorkey")
        .env_setting("size", 5)
        .learn("*")
        .seed(1)
        .total_steps(300_000)
        .parallel(16, 2)
        .rollout(128)
        .checkpoint_every(20)
        .build()
        .expect("a valid training spec");
    let started = Instant::now();
    let outcome = trainer
        .run(&options(dir, "doorkey"))
        .expect("training runs");
    let wall = started.elapsed().as_secs_f64();
    let results = evaluate(
        &envs,
        "gridworld",
        &trainer.spec().env_settings,
        vec![trained(&outcome.policies[0].1, false)],
    );
    let success = results.iter().filter(|(_, r)| *r > 0.0).count() as f64 / results.len() as f64;
    println!(
        "learning: DoorKey 5x5 after {} steps ({wall:.0} s, {:.0} steps/s): success {success:.3} (goal ≥ 0.9: {})",
        outcome.steps,
        outcome.steps_per_s,
        if success >= 0.9 { "met" } else { "missed" }
    );
}

fn soccer(dir: &Path) {
    let steps = std::env::var("MOSAIC_SOCCER_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000);
    let opponent = std::env::var("MOSAIC_SOCCER_OPPONENT").unwrap_or_else(|_| "random".into());
    let envs = mosaic_adapters::in_process_envs();
    let trainer = Trainer::builder("soccer", "soccer-2v2")
        .learn("green")
        .agent("*", SlotSpec::kind(opponent.as_str()))
        .seed(1)
        .total_steps(steps)
        .parallel(16, 2)
        .rollout(128)
        .checkpoint_every(20)
        .build()
        .expect("a valid training spec");
    let started = Instant::now();
    let outcome = trainer.run(&options(dir, "soccer")).expect("training runs");
    let wall = started.elapsed().as_secs_f64();
    let policy = &outcome.policies[0].1;
    let kind = envs.get("soccer-2v2").expect("soccer is native");
    let scripted = kind.scripted.expect("soccer has a scripted team");
    let settings = Settings::new();
    let against = |make: &dyn Fn() -> Box<dyn Policy>| {
        // The better of drawing from the policy and always taking its most likely action.
        [false, true]
            .map(|greedy| {
                let players = vec![
                    trained(policy, greedy),
                    trained(policy, greedy),
                    make(),
                    make(),
                ];
                let results = evaluate(&envs, "soccer-2v2", &settings, players);
                results
                    .iter()
                    .filter(|(o, _)| *o == Some(Outcome::Win))
                    .count() as f64
                    / results.len() as f64
            })
            .into_iter()
            .fold(0.0, f64::max)
    };
    let vs_random = against(&|| Box::new(mosaic_core::baseline::Random::default()));
    let vs_scripted =
        against(&|| scripted(&settings, &Settings::new()).expect("the scripted team builds"));
    println!(
        "learning: soccer-2v2 IPPO against {opponent} after {} steps ({wall:.0} s, {:.0} steps/s): wins {vs_random:.3} against random (goal ≥ 0.95: {}), {vs_scripted:.3} against scripted (goal ≥ 0.5: {})",
        outcome.steps,
        outcome.steps_per_s,
        if vs_random >= 0.95 { "met" } else { "missed" },
        if vs_scripted >= 0.5 { "met" } else { "missed" },
    );
}

fn main() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    doorkey(dir.path());
    soccer(dir.path());
}
