//! Speed of the RL stack: batched inference per decision (goal ≤ 5 µs for the 64-64 MLP,
//! a batch of 4 soccer-2v2 agents sharing one policy) and end-to-end PPO training
//! throughput on soccer-2v2 (goal ≥ 50,000 environment steps/s, collection plus updates).
//!
//! Run with `cargo bench -p mosaic-rl --bench rl`; besides criterion's figures it prints
//! µs per decision, training steps/s against the goals, and the time of one PPO update of
//! the benchmark's size through the plain-Rust MLP passes against candle's autograd (same
//! batch, same run).

mod soccer_training;

use criterion::{Criterion, Throughput};
use mosaic_core::rng::{Rng, seeded};
use mosaic_rl::Architecture;
use mosaic_rl::net::{ActorCritic, NetShape};
use mosaic_rl::policy::{Inference, decide_batch};
use mosaic_rl::train::PpoConfig;
use mosaic_rl::train::ppo::{self, Adam, Batch};
use mosaic_rl::train::rollout::Stream;
use rand::Rng as _;
use std::hint::black_box;
use std::time::Instant;

const DECISION_GOAL_US: f64 = 5.0;
const TRAINING_GOAL_STEPS_PER_S: f64 = 50_000.0;
/// Soccer's symbolic observation with the default 3×3 view.
const OBS_LEN: usize = 57;
const AGENTS: usize = 4;
/// The training benchmark's threads (worker threads, and the update's).
const THREADS: usize = 2;

fn decisions(c: &mut Criterion) {
    let shape = NetShape::new(vec![OBS_LEN], 8, Architecture::default());
    let net = Inference::new(&ActorCritic::new(shape, 1).expect("a valid network"))
        .expect("inference of a valid network");
    let obs: Vec<f32> = (0..OBS_LEN * AGENTS)
        .map(|i| (i % 7) as f32 * 0.3)
        .collect();
    let legal = vec![true; 8];
    let masks: Vec<&[bool]> = (0..AGENTS).map(|_| legal.as_slice()).collect();
    let mut rngs: Vec<Rng> = (0..AGENTS as u64).map(seeded).collect();
    let mut group = c.benchmark_group("rl");
    group.throughput(Throughput::Elements(AGENTS as u64));
    group.bench_function("mlp_batch4_decisions", |b| {
        b.iter(|| decide_batch(&net, black_box(&obs), &masks, Some(&mut rngs)).expect("decides"))
    });
    group.finish();
    let rounds = 20_000;
    let started = Instant::now();
    for _ in 0..rounds {
        black_box(decide_batch(&net, &obs, &masks, Some(&mut rngs)).expect("decides"));
    }
    let per_decision = started.elapsed().as_secs_f64() * 1e6 / (rounds * AGENTS) as f64;
    println!(
        "rl: {per_decision:.2} µs per decision (MLP 64-64, batch of {AGENTS}; goal ≤ {DECISION_GOAL_US} µs: {})",
        if per_decision <= DECISION_GOAL_US {
            "met"
        } else {
            "missed"
        }
    );
}

/// CPU seconds the process has used so far (user plus system, all threads), where Linux's
/// `/proc` tells: on a machine shared with other work, wall times alone mislead.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After the command name: state is field 3, utime 14 and stime 15, in 1/100 s.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |index: usize| fields.get(index)?.parse::<f64>().ok();
    Some((ticks(11)? + ticks(12)?) / 100.0)
}

/// `cpu_seconds` used since `start`, as text.
fn cpu_since(start: Option<f64>) -> String {
    match (start, cpu_seconds()) {
        (Some(start), Some(now)) => format!("{:.0} ms CPU", (now - start) * 1e3),
        _ => "CPU time unknown".into(),
    }
}

/// IPPO for the green team against random blues: 16 environments × 128 steps per update,
/// 8 updates, on two threads; three runs, since one lasts about a second.
fn training() {
    for _ in 0..3 {
        train_once();
    }
}

fn train_once() {
    let cpu = cpu_seconds();
    let run = soccer_training::train(Architecture::default(), THREADS);
    println!(
        "rl: training soccer-2v2 (IPPO, MLP 64-64): {:.0} environment steps/s (goal ≥ {TRAINING_GOAL_STEPS_PER_S}: {}); {} ms collecting, {} ms updating, {} in all",
        run.steps_per_s,
        if run.steps_per_s >= TRAINING_GOAL_STEPS_PER_S {
            "met"
        } else {
            "missed"
        },
        run.collect_ms,
        run.update_ms,
        cpu_since(cpu)
    );
}

/// One update's batch of the training benchmark: 16 environments × 128 steps × 2 learning
/// agents of random soccer-shaped transitions.
fn update_batch(shape: &NetShape) -> Batch {
    let mut rng = seeded(7);
    let mut batch = Batch::default();
    for _ in 0..32 {
        let steps = 128;
        let stream = Stream {
            obs: (0..steps * OBS_LEN)
                .map(|_| rng.random_range(0.0..1.0))
                .collect(),
            critic: (0..steps * OBS_LEN)
                .map(|_| rng.random_range(0.0..1.0))
                .collect(),
            masks: vec![0.0; steps * shape.actions],
            actions: (0..steps)
                .map(|_| rng.random_range(0..shape.actions as u32))
                .collect(),
            logps: (0..steps).map(|_| rng.random_range(-2.5..-1.5)).collect(),
            values: (0..steps).map(|_| rng.random_range(-0.5..0.5)).collect(),
            rewards: (0..steps)
                .map(|_| if rng.random_bool(0.02) { 1.0 } else { 0.0 })
                .collect(),
            dones: (0..steps).map(|_| rng.random_bool(0.01)).collect(),
            states: Vec::new(),
        };
        batch.push(&stream, shape, 0.99, 0.95);
    }
    batch
}

/// The PPO update of the training benchmark (4 epochs × 4 minibatches): plain-Rust MLP
/// passes against candle's autograd on the same batch.
fn updates(c: &mut Criterion) {
    let shape = NetShape::new(vec![OBS_LEN], 8, Architecture::default());
    let batch = update_batch(&shape);
    let config = PpoConfig::default();
    let net = ActorCritic::new(shape, 1).expect("a valid network");
    let mut adam = Adam::new(&net).expect("Adam state");
    let mut rng = seeded(3);
    let mut group = c.benchmark_group("rl");
    group.sample_size(10);
    group.throughput(Throughput::Elements(batch.len() as u64));
    group.bench_function("ppo_update_plain", |b| {
        b.iter(|| {
            ppo::update(&net, &mut adam, &batch, &config, 1e-4, &mut rng, THREADS).expect("updates")
        })
    });
    group.bench_function("ppo_update_autograd", |b| {
        b.iter(|| {
            ppo::update_autograd(&net, &mut adam, &batch, &config, 1e-4, &mut rng).expect("updates")
        })
    });
    group.finish();
    let time = |autograd: bool, rng: &mut Rng, adam: &mut Adam| {
        let started = Instant::now();
        let rounds = 5;
        for _ in 0..rounds {
            let losses = if autograd {
                ppo::update_autograd(&net, adam, &batch, &config, 1e-4, rng)
            } else {
                ppo::update(&net, adam, &batch, &config, 1e-4, rng, THREADS)
            };
            black_box(losses.expect("updates"));
        }
        started.elapsed().as_secs_f64() * 1e3 / f64::from(rounds)
    };
    // Interleaved, so that both see the same load.
    let (mut plain, mut autograd) = (0.0, 0.0);
    let (mut plain_cpu, mut autograd_cpu) = (0.0, 0.0);
    let cpu_of = |start: Option<f64>| Some(cpu_seconds()? - start?);
    for _ in 0..3 {
        let cpu = cpu_seconds();
        plain += time(false, &mut rng, &mut adam);
        plain_cpu += cpu_of(cpu).unwrap_or(f64::NAN);
        let cpu = cpu_seconds();
        autograd += time(true, &mut rng, &mut adam);
        autograd_cpu += cpu_of(cpu).unwrap_or(f64::NAN);
    }
    // `time` runs 5 updates per call.
    let per_update = |total: f64| total * 1e3 / 15.0;
    println!(
        "rl: one PPO update of {} transitions (4 epochs × 4 minibatches, MLP 64-64): {:.1} ms plain Rust ({:.1} ms CPU), {:.1} ms candle autograd ({:.1} ms CPU; {:.1}× faster)",
        batch.len(),
        plain / 3.0,
        per_update(plain_cpu),
        autograd / 3.0,
        per_update(autograd_cpu),
        autograd / plain
    );
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    decisions(&mut criterion);
    updates(&mut criterion);
    training();
    criterion.final_summary();
}
