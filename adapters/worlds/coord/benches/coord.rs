//! Coordination-world throughput in ALEM scoring mode: environment steps per second
//! with 3 agents on one thread (random actions), the cost of world generation, of one text and one symbolic
//! observation, and of a snapshot and a restore. Prints the step rate against the
//! 200,000 steps/s goal and the other costs in environment steps (and snapshot plus
//! restore against a reset) measured in the same run.

use criterion::Criterion;
use mosaic_coord::CoordWorld;
use mosaic_core::rng::seeded;
use mosaic_core::{Action, Environment, ObsRequest, Settings, Snapshot, Transition};
use rand::Rng as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

const GOAL_STEPS_PER_S: f64 = 200_000.0;
const AGENTS: usize = 3;

fn env() -> CoordWorld {
    let mut settings = Settings::new();
    settings.insert("agents".into(), AGENTS.into());
    settings.insert("preset".into(), "medium".into());
    settings.insert("scoring".into(), "alem".into());
    match CoordWorld::from_settings(&settings) {
        Ok(env) => env,
        Err(e) => panic!("default settings rejected: {e}"),
    }
}

/// Runs `steps` environment steps with uniformly random actions, resetting (untimed)
/// when an episode ends; returns the time spent stepping.
fn timed_steps(env: &mut CoordWorld, steps: u64, seed: &mut u64, with_masks: bool) -> Duration {
    run(env, steps, seed, with_masks).0
}

/// [`timed_steps`], also returning the number of episodes (resets) used.
fn run(env: &mut CoordWorld, steps: u64, seed: &mut u64, with_masks: bool) -> (Duration, u64) {
    let n = env.spec().action_labels.len() as u32;
    let mut rng = seeded(*seed);
    let mut out = Transition::default();
    let mut actions = vec![None; AGENTS];
    let mut spent = Duration::ZERO;
    let mut done = 0;
    let mut episodes = 0;
    while done < steps {
        episodes += 1;
        *seed += 1;
        let _ = env.reset(*seed);
        let start = Instant::now();
        while done < steps && !env.acting().is_empty() {
            for (agent, slot) in actions.iter_mut().enumerate() {
                let action = if with_masks {
                    let obs = env.observe(agent, ObsRequest::MASK_ONLY);
                    let legal: Vec<Action> = obs.legal_actions().collect();
                    legal[rng.random_range(0..legal.len())]
                } else {
                    Action(rng.random_range(0..n))
                };
                *slot = Some(action);
            }
            if env.step(&actions, &mut out).is_err() {
                break;
            }
            black_box(&out);
            done += 1;
        }
        spent += start.elapsed();
    }
    (spent, episodes)
}

/// A world some way into an episode, for observation costs.
fn midgame() -> CoordWorld {
    let mut env = env();
    let mut seed = 11;
    // Random walking (noop and moves) until an episode lasts 50 steps.
    loop {
        seed += 1;
        let _ = env.reset(seed);
        let mut rng = seeded(seed);
        let mut out = Transition::default();
        let mut steps = 0;
        while steps < 50 && !env.acting().is_empty() {
            let actions: Vec<_> = (0..AGENTS)
                .map(|_| Some(Action(rng.random_range(0..5))))
                .collect();
            let _ = env.step(&actions, &mut out);
            steps += 1;
        }
        if steps == 50 {
            return env;
        }
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("coord");
    let mut env = env();
    let mut seed = 0;
    group.bench_function("step_3_agents_random", |b| {
        b.iter_custom(|iters| timed_steps(&mut env, iters, &mut seed, false))
    });
    group.bench_function("step_3_agents_random_legal", |b| {
        b.iter_custom(|iters| timed_steps(&mut env, iters, &mut seed, true))
    });
    group.bench_function("reset_worldgen_64x64", |b| {
        let mut s = 0;
        b.iter(|| {
            s += 1;
            black_box(env.reset(s))
        })
    });
    let world = midgame();
    let text = ObsRequest {
        text: true,
        ..ObsRequest::MASK_ONLY
    };
    let symbolic = ObsRequest::SYMBOLIC;
    group.bench_function("text_observation", |b| {
        b.iter(|| black_box(world.observe(0, text)))
    });
    group.bench_function("symbolic_observation", |b| {
        b.iter(|| black_box(world.observe(0, symbolic)))
    });
    let snapshot = saved(&world);
    group.bench_function("snapshot", |b| b.iter(|| black_box(world.snapshot())));
    let mut restored = self::env();
    group.bench_function("restore", |b| {
        b.iter(|| black_box(restored.restore(&snapshot)))
    });
    group.finish();

    // A plain timed run for the figures that go in the report.
    let steps = 2_000_000;
    let (spent, episodes) = run(&mut env, steps, &mut seed, false);
    let rate = steps as f64 / spent.as_secs_f64();
    let resets = 200;
    let start = Instant::now();
    for s in 0..resets {
        let _ = env.reset(1_000_000 + s);
    }
    let reset_s = start.elapsed().as_secs_f64() / resets as f64;
    let with_resets = steps as f64 / (spent.as_secs_f64() + episodes as f64 * reset_s);
    let legal_steps = 500_000;
    let legal_rate =
        legal_steps as f64 / timed_steps(&mut env, legal_steps, &mut seed, true).as_secs_f64();
    let per_obs = |want: ObsRequest| {
        let n = 20_000;
        let start = Instant::now();
        for _ in 0..n {
            black_box(world.observe(0, want));
        }
        start.elapsed().as_secs_f64() / f64::from(n)
    };
    let (text_s, symbolic_s) = (per_obs(text), per_obs(symbolic));
    let rounds = 2_000;
    let start = Instant::now();
    for _ in 0..rounds {
        black_box(world.snapshot());
    }
    let snapshot_s = start.elapsed().as_secs_f64() / f64::from(rounds);
    let start = Instant::now();
    for _ in 0..rounds {
        if restored.restore(&snapshot).is_err() {
            panic!("a fresh snapshot was refused");
        }
    }
    let restore_s = start.elapsed().as_secs_f64() / f64::from(rounds);
    println!(
        "coord-world, 3 agents, ALEM scoring, one thread: {rate:.0} steps/s with random actions = {:.2}x the {GOAL_STEPS_PER_S:.0} goal; {legal_rate:.0} steps/s with a legal-mask observation per agent and step = {:.2}x",
        rate / GOAL_STEPS_PER_S,
        legal_rate / GOAL_STEPS_PER_S,
    );
    println!(
        "world generation: {:.0} us per reset; random-action episodes last {:.0} steps on average, so with every reset counted: {with_resets:.0} steps/s = {:.2}x the goal",
        reset_s * 1e6,
        steps as f64 / episodes as f64,
        with_resets / GOAL_STEPS_PER_S,
    );
    println!(
        "one text observation: {:.1} us = {:.0} environment steps; one symbolic observation: {:.2} us = {:.1} steps",
        text_s * 1e6,
        text_s * rate,
        symbolic_s * 1e6,
        symbolic_s * rate,
    );
    println!(
        "snapshot: {:.1} us, restore: {:.1} us ({} bytes at step {}); together {:.0} environment steps = {:.2}x one reset (world generation)",
        snapshot_s * 1e6,
        restore_s * 1e6,
        snapshot.0.len(),
        world.steps(),
        (snapshot_s + restore_s) * rate,
        (snapshot_s + restore_s) / reset_s,
    );
}

/// The snapshot of `world`, which has an episode running.
fn saved(world: &CoordWorld) -> Snapshot {
    match world.snapshot() {
        Some(snapshot) => snapshot,
        None => panic!("a running world gave no snapshot"),
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
