//! Native game speed: random-play steps per second and the cost of one observation.
//!
//! `cargo bench -p mosaic-adapters --bench games`
//!
//! Criterion measures random play (mask-only observations, as a random agent asks, and
//! with the symbolic view every step) and single observations (mask only, symbolic, text,
//! frame) of `gridworld`, `connect-four` and `tic-tac-toe`. A summary at the end reports,
//! from the same run, each text view's cost as a multiple of a mask-only observation and,
//! when `MOSAIC_BENCH_PYTHON` names a Python interpreter with `minigrid` and `pettingzoo`
//! installed, the speed-up over the Python reference environments
//! (MiniGrid-DoorKey-5x5-v0, MiniGrid-GoToObject-6x6-N2-v0, connect_four_v3,
//! tictactoe_v3) under the same random play.

use criterion::{Criterion, Throughput, criterion_main};
use mosaic_core::baseline::Random;
use mosaic_core::{AgentContext, Environment, ObsRequest, Policy, Transition};
use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

/// The environments measured, by registry name and settings.
const GAMES: [(&str, &str, &str); 4] = [
    (
        "gridworld doorkey 5x5",
        "gridworld",
        r#"{"task":"doorkey"}"#,
    ),
    ("gridworld goto 6x6", "gridworld", r#"{"task":"goto"}"#),
    ("connect-four", "connect-four", "{}"),
    ("tic-tac-toe", "tic-tac-toe", "{}"),
];

/// Steps per measured batch.
const BATCH: u64 = 1_000;

fn make(name: &str, settings: &str) -> Box<dyn Environment> {
    let settings: serde_json::Value =
        serde_json::from_str(settings).expect("bench settings are JSON");
    let settings = settings.as_object().cloned().unwrap_or_default();
    mosaic_adapters::native_envs()
        .make(name, &settings)
        .expect("registered environment")
}

/// Random play that resets (with the next seed) whenever an episode ends.
struct RandomPlay {
    env: Box<dyn Environment>,
    players: Vec<Random>,
    actions: Vec<Option<mosaic_core::Action>>,
    out: Transition,
    seed: u64,
    want: ObsRequest,
}

impl RandomPlay {
    fn new(name: &str, settings: &str, want: ObsRequest) -> Self {
        let env = make(name, settings);
        let agents = env.spec().agents.len();
        let mut play = Self {
            env,
            players: (0..agents).map(|_| Random::default()).collect(),
            actions: vec![None; agents],
            out: Transition::default(),
            seed: 0,
            want,
        };
        play.reset();
        play
    }

    fn reset(&mut self) {
        self.seed += 1;
        self.env.reset(self.seed).expect("reset");
        let spec = self.env.spec();
        for (i, player) in self.players.iter_mut().enumerate() {
            let ctx = AgentContext::new(
                self.seed,
                i,
                spec.agents[i].id.clone(),
                spec.action_labels.len(),
            );
            player.reset(&ctx);
        }
    }

    /// Takes `steps` environment steps.
    fn run(&mut self, steps: u64) {
        let mut taken = 0;
        while taken < steps {
            let acting = self.env.acting();
            if acting.is_empty() {
                self.reset();
                continue;
            }
            self.actions.fill(None);
            for agent in acting {
                let obs = self.env.observe(agent, self.want);
                self.actions[agent] = Some(self.players[agent].decide(&obs).action);
            }
            self.env
                .step(&self.actions, &mut self.out)
                .expect("legal random action");
            taken += 1;
        }
    }
}

const TEXT: ObsRequest = ObsRequest {
    symbolic: false,
    text: true,
    frame: false,
};
const FRAME: ObsRequest = ObsRequest {
    symbolic: false,
    text: false,
    frame: true,
};

fn random_play(c: &mut Criterion) {
    let mut group = c.benchmark_group("random_play");
    group.throughput(Throughput::Elements(BATCH));
    for (label, name, settings) in GAMES {
        for (variant, want) in [
            ("mask only", ObsRequest::MASK_ONLY),
            ("symbolic", ObsRequest::SYMBOLIC),
        ] {
            let mut play = RandomPlay::new(name, settings, want);
            group.bench_function(format!("{label} ({variant})"), |b| {
                b.iter(|| play.run(BATCH))
            });
        }
    }
    group.finish();
}

/// An environment a few random steps into an episode, and the agent to move.
fn mid_game(name: &str, settings: &str) -> (Box<dyn Environment>, usize) {
    let mut play = RandomPlay::new(name, settings, ObsRequest::MASK_ONLY);
    play.run(4);
    let agent = play.env.acting().first().copied().unwrap_or(0);
    (play.env, agent)
}

fn observation(c: &mut Criterion) {
    let mut group = c.benchmark_group("observation");
    for (label, name, settings) in GAMES {
        let (env, agent) = mid_game(name, settings);
        for (variant, want) in [
            ("mask only", ObsRequest::MASK_ONLY),
            ("symbolic", ObsRequest::SYMBOLIC),
            ("text", TEXT),
            ("frame", FRAME),
        ] {
            group.bench_function(format!("{label} ({variant})"), |b| {
                b.iter(|| black_box(env.observe(agent, want)))
            });
        }
    }
    group.finish();
}

/// Mean seconds per call of `f`, timed over about `budget`.
fn time_per_call(budget: Duration, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed() < budget {
        for _ in 0..64 {
            f();
        }
        calls += 64;
    }
    start.elapsed().as_secs_f64() / calls as f64
}

/// The Python reference's random-play speed, measured by the interpreter named in
/// `MOSAIC_BENCH_PYTHON`: steps per second per game, or why it was not measured.
fn python_reference(seconds: f64) -> Result<serde_json::Value, String> {
    let python = std::env::var("MOSAIC_BENCH_PYTHON").map_err(|_| {
        "set MOSAIC_BENCH_PYTHON to a Python with minigrid and pettingzoo".to_owned()
    })?;
    let output = Command::new(&python)
        .arg("-c")
        .arg(PYTHON_REFERENCE)
        .arg(seconds.to_string())
        .output()
        .map_err(|e| format!("cannot run {python}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{python} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    serde_json::from_slice(&output.stdout).map_err(|e| format!("{python} printed no JSON: {e}"))
}

/// Random play in the Python reference environments, same loop as [`RandomPlay`] with
/// the observations the Python APIs always compute: prints steps/s per game as JSON.
const PYTHON_REFERENCE: &str = r#"
import json, sys, time
import gymnasium as gym
import minigrid  # registers the MiniGrid environments
from pettingzoo.classic import connect_four_v3, tictactoe_v3

seconds = float(sys.argv[1])
results = {}

def gym_speed(env_id):
    env = gym.make(env_id)
    env.reset(seed=0)
    env.action_space.seed(0)
    steps, seed, start = 0, 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        if terminated or truncated:
            seed += 1
            env.reset(seed=seed)
    return steps / (time.perf_counter() - start)

def aec_speed(module):
    env = module.env()
    env.reset(seed=0)
    steps, seed, start = 0, 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        obs, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            seed += 1
            env.reset(seed=seed)
            continue
        env.step(env.action_space(env.agent_selection).sample(obs["action_mask"]))
        steps += 1
    return steps / (time.perf_counter() - start)

results["gridworld doorkey 5x5"] = gym_speed("MiniGrid-DoorKey-5x5-v0")
results["gridworld goto 6x6"] = gym_speed("MiniGrid-GoToObject-6x6-N2-v0")
results["connect-four"] = aec_speed(connect_four_v3)
results["tic-tac-toe"] = aec_speed(tictactoe_v3)
print(json.dumps(results))
"#;

/// Ratios against baselines measured now: a text view against a mask-only observation of
/// the same state, and native random play against the Python reference.
fn summary(_: &mut Criterion) {
    let quick = std::env::args().any(|a| a == "--test");
    let budget = Duration::from_millis(if quick { 20 } else { 1_000 });
    println!("\ngames summary (ratios against baselines measured in this run)");
    let mut native = Vec::new();
    for (label, name, settings) in GAMES {
        let (env, agent) = mid_game(name, settings);
        let mask = time_per_call(budget, || {
            black_box(env.observe(agent, ObsRequest::MASK_ONLY));
        });
        let text = time_per_call(budget, || {
            black_box(env.observe(agent, TEXT));
        });
        let mut raw = RandomPlay::new(name, settings, ObsRequest::MASK_ONLY);
        let raw_rate = 1.0 / time_per_call(budget, || raw.run(1));
        let mut symbolic = RandomPlay::new(name, settings, ObsRequest::SYMBOLIC);
        let symbolic_rate = 1.0 / time_per_call(budget, || symbolic.run(1));
        println!(
            "  {label:<22} random play {raw_rate:>12.0} steps/s (mask only), {symbolic_rate:>12.0} steps/s (symbolic); \
             text view {:>7.2} us = {:>5.1}x a mask-only observation ({:.3} us)",
            text * 1e6,
            text / mask,
            mask * 1e6
        );
        native.push((label, symbolic_rate));
    }
    if quick {
        return;
    }
    match python_reference(budget.as_secs_f64()) {
        Ok(reference) => {
            for (label, rate) in native {
                if let Some(python) = reference[label].as_f64() {
                    println!(
                        "  {label:<22} Python reference {python:>10.0} steps/s; native with symbolic views is {:>7.1}x faster",
                        rate / python
                    );
                }
            }
        }
        Err(why) => println!("  Python reference not measured: {why}"),
    }
}

/// Criterion's generated entry points (kept private).
mod groups {
    use super::{observation, random_play, summary};
    criterion::criterion_group!(benches, random_play, observation, summary);
}

criterion_main!(groups::benches);
