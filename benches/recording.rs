//! Cost of recording: the same soccer run (4 random agents, 200-step limit, 2 episodes at a
//! time; 5,000 episodes ≈ 1,000,000 steps) once without recording, once recorded with each
//! durability and with each durability and a compressed step log (`steps.jsonl.zst`), and
//! the environment stepping alone. Prints wall times, the recording cost excluding
//! environment time, measured in the same run, the bytes each recorded run left in its
//! JSON-lines files and its store, and the bytes per step record of its step log.
//!
//! `cargo bench --bench recording [-- EPISODES]` (goal: recording cost ≤ 5 s per 1,000,000
//! steps).

use mosaic::prelude::*;
use mosaic::run::RunOptions;
use mosaic_actors::runner::{Runner, UnitPlan};
use mosaic_actors::session::Subscribers;
use mosaic_core::{RunId, Transition};
use mosaic_recorder::{Compression, Durability};
use rand::Rng as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

const MAX_STEPS: u32 = 200;
const SEED_BASE: u64 = 1000;

fn soccer_experiment(episodes: u32) -> Experiment {
    Experiment::builder("recording")
        .episodes(episodes)
        .seeds(SeedPlan::Procedural { base: SEED_BASE })
        .max_steps(MAX_STEPS)
        .parallelism(2)
        .operator(Operator::new("pitch", "soccer-2v2").everyone("random"))
        .build()
        .expect("valid experiment")
}

/// The environment alone: the same number of episodes stepped with uniformly random legal
/// actions, one at a time (no policies, actors or recording). Returns time and steps.
fn env_only(episodes: u32) -> (Duration, u64) {
    let mut env = mosaic::experiment::default_envs()
        .make("soccer-2v2", &Default::default())
        .expect("soccer is registered");
    let agents = env.spec().agents.len();
    let mut transition = Transition::default();
    let mut steps = 0u64;
    let started = Instant::now();
    for episode in 0..episodes {
        let seed = SEED_BASE + u64::from(episode);
        env.reset(seed).expect("reset");
        let mut random = mosaic_core::rng::seeded(seed);
        while env.steps() < MAX_STEPS {
            let acting = env.acting();
            if acting.is_empty() {
                break;
            }
            let mut actions = vec![None; agents];
            for agent in acting {
                let legal = env.observe(agent, ObsRequest::MASK_ONLY).legal;
                let choices: Vec<usize> = (0..legal.len()).filter(|i| legal[*i]).collect();
                actions[agent] = Some(Action(
                    choices[random.random_range(0..choices.len())] as u32,
                ));
            }
            env.step(&actions, &mut transition).expect("step");
            steps += 1;
            if transition.all_done() {
                break;
            }
        }
    }
    (started.elapsed(), steps)
}

/// The run through sessions and actors with no sink subscribed. Returns time and steps.
fn unrecorded(experiment: &Experiment) -> (Duration, u64) {
    let runner = Runner::new(
        experiment.spec().clone(),
        RunId::from("unrecorded"),
        Arc::new(experiment.envs().clone()),
        Arc::new(experiment.kinds().clone()),
    );
    let started = Instant::now();
    let tally = actix::System::new()
        .block_on(async move {
            runner
                .run(UnitPlan::All, Subscribers::default(), |_| {})
                .await
        })
        .expect("run");
    (started.elapsed(), tally.steps)
}

/// Bytes of the files under `path`.
fn bytes_under(path: &std::path::Path) -> u64 {
    std::fs::read_dir(path)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => bytes_under(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

/// What a recorded run left on disk, in bytes.
struct Written {
    jsonl: u64,
    steps_log: u64,
    store: u64,
}

/// The run recorded into a run directory with `durability`, its step log stored with
/// `steps_log`. Returns time, steps and the bytes written.
fn recorded(
    experiment: &Experiment,
    durability: Durability,
    steps_log: Compression,
) -> (Duration, u64, Written) {
    let dir = tempfile::tempdir().expect("temp dir");
    let started = Instant::now();
    let outcome = experiment
        .run(&RunOptions {
            out: dir.path().to_owned(),
            run_id: Some(format!("{durability:?}")),
            durability,
            steps_log,
            ..RunOptions::default()
        })
        .expect("run");
    let time = started.elapsed();
    let steps = outcome.tally.steps;
    let run = mosaic_recorder::RunDir::open(&outcome.dir).expect("run directory");
    let file = |path: std::path::PathBuf| std::fs::metadata(path).map_or(0, |m| m.len());
    let written = Written {
        jsonl: file(run.steps_path()) + file(run.episodes_path()),
        steps_log: file(run.steps_path()),
        store: bytes_under(&run.store_path()),
    };
    (time, steps, written)
}

fn main() {
    let episodes: u32 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5000);
    let experiment = soccer_experiment(episodes);
    // Warm up code, allocator and page cache.
    env_only(20);
    unrecorded(&soccer_experiment(20));
    let (env_time, env_steps) = env_only(episodes);
    let (bare_time, steps) = unrecorded(&experiment);
    println!(
        "{episodes} episodes, {steps} steps | env alone ({env_steps} steps) {:.2} s | \
         run without recording {:.2} s",
        env_time.as_secs_f64(),
        bare_time.as_secs_f64()
    );
    // Every agent is alive at every step start until the episode ends.
    let records = steps * 4;
    for steps_log in [Compression::None, Compression::Zstd] {
        for durability in [Durability::Flush, Durability::Sync] {
            let (time, recorded_steps, written) = recorded(&experiment, durability, steps_log);
            assert_eq!(recorded_steps, steps, "both runs play the same episodes");
            let cost = time.as_secs_f64() - bare_time.as_secs_f64();
            let per_million = cost * 1e6 / steps as f64;
            println!(
                "  recorded ({durability:?}, step log {steps_log:?}) {:.2} s | ratio to the run \
                 without recording {:.2}x | ratio to env alone {:.2}x | recording cost \
                 excluding env time {cost:.2} s ({per_million:.2} s per 1,000,000 steps; goal \
                 ≤ 5 s) | {:.0} step records/s | written: JSON lines {:.0} MB ({:.1} bytes \
                 per step record), store {:.0} MB",
                time.as_secs_f64(),
                time.as_secs_f64() / bare_time.as_secs_f64(),
                time.as_secs_f64() / env_time.as_secs_f64(),
                records as f64 / time.as_secs_f64(),
                written.jsonl as f64 / 1e6,
                written.steps_log as f64 / records as f64,
                written.store as f64 / 1e6,
            );
        }
    }
}
