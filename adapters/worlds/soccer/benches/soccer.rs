//! Speed of `soccer-2v2`: raw random play and pitch rendering.
//!
//! Besides criterion's figures, `cargo bench -p mosaic-soccer --bench soccer` prints same-run ratios:
//! random steps per second against the 1,000,000 steps/s goal and against the cost of
//! drawing the actions alone, and render + PNG time against the 200 µs goal.

use criterion::{Criterion, Throughput};
use mosaic_core::baseline::Random;
use mosaic_core::rng::{Rng, seeded};
use mosaic_core::{Action, AgentContext, Environment, ObsRequest, Policy, Transition};
use mosaic_soccer::{Soccer, SoccerSettings};
use rand::Rng as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

const STEPS_GOAL: f64 = 1_000_000.0;
const FRAME_GOAL_US: f64 = 200.0;

/// Random play: every acting agent draws uniformly among its legal actions, read once per
/// episode (they never change in this game); a new episode starts when one ends.
struct RandomPlay {
    env: Soccer,
    rng: Rng,
    legal: Vec<u32>,
    actions: Vec<Option<Action>>,
    out: Transition,
    episode: u64,
}

impl RandomPlay {
    fn new() -> Self {
        let mut play = Self {
            env: Soccer::new(SoccerSettings::default()).expect("default settings are valid"),
            rng: seeded(1),
            legal: Vec::new(),
            actions: vec![None; 4],
            out: Transition::default(),
            episode: 0,
        };
        play.new_episode();
        play
    }

    fn new_episode(&mut self) {
        self.episode += 1;
        self.env.reset(self.episode).expect("reset never fails");
        let mask = self.env.observe(0, ObsRequest::MASK_ONLY);
        self.legal = mask.legal_actions().map(|a| a.0).collect();
    }

    fn step(&mut self) {
        for action in &mut self.actions {
            *action = Some(Action(
                self.legal[self.rng.random_range(0..self.legal.len())],
            ));
        }
        self.env
            .step(&self.actions, &mut self.out)
            .expect("running");
        if self.out.all_done() {
            self.new_episode();
        }
    }

    /// The same draws without the environment: the harness's own cost.
    fn draw_only(&mut self) {
        for action in &mut self.actions {
            *action = Some(Action(
                self.legal[self.rng.random_range(0..self.legal.len())],
            ));
        }
        black_box(&self.actions);
    }
}

/// Random play the way the framework runs it: per step, a mask-only observation and a
/// `baseline::Random` decision per agent.
struct PolicyPlay {
    env: Soccer,
    policies: Vec<Random>,
    actions: Vec<Option<Action>>,
    out: Transition,
    episode: u64,
}

impl PolicyPlay {
    fn new() -> Self {
        let mut play = Self {
            env: Soccer::new(SoccerSettings::default()).expect("default settings are valid"),
            policies: (0..4).map(|_| Random::default()).collect(),
            actions: vec![None; 4],
            out: Transition::default(),
            episode: 0,
        };
        play.new_episode();
        play
    }

    fn new_episode(&mut self) {
        self.episode += 1;
        self.env.reset(self.episode).expect("reset never fails");
        for (agent, policy) in self.policies.iter_mut().enumerate() {
            let id = self.env.spec().agents[agent].id.clone();
            policy.reset(&AgentContext::new(self.episode, agent, id, 8));
        }
    }

    fn step(&mut self) {
        for (agent, policy) in self.policies.iter_mut().enumerate() {
            let obs = self.env.observe(agent, ObsRequest::MASK_ONLY);
            self.actions[agent] = Some(policy.decide(&obs).action);
        }
        self.env
            .step(&self.actions, &mut self.out)
            .expect("running");
        if self.out.all_done() {
            self.new_episode();
        }
    }
}

/// Mean seconds per call of `f` over about `budget`.
fn seconds_per_call(budget: Duration, mut f: impl FnMut()) -> f64 {
    for _ in 0..1_000 {
        f();
    }
    let mut calls = 0u64;
    let start = Instant::now();
    while start.elapsed() < budget {
        for _ in 0..1_000 {
            f();
        }
        calls += 1_000;
    }
    start.elapsed().as_secs_f64() / calls as f64
}

fn criterion_benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("soccer");
    group.throughput(Throughput::Elements(1));
    let mut play = RandomPlay::new();
    group.bench_function("step_4_random_agents", |b| b.iter(|| play.step()));
    group.bench_function("draw_4_random_actions_only", |b| {
        b.iter(|| play.draw_only())
    });
    let mut policy_play = PolicyPlay::new();
    group.bench_function("step_with_mask_obs_and_random_policy", |b| {
        b.iter(|| policy_play.step())
    });
    let env = &play.env;
    group.bench_function("observe_symbolic_4_agents", |b| {
        b.iter(|| {
            for agent in 0..4 {
                black_box(env.observe(agent, ObsRequest::SYMBOLIC));
            }
        })
    });
    group.bench_function("render_pitch", |b| b.iter(|| black_box(env.render())));
    group.bench_function("render_pitch_and_png", |b| {
        b.iter(|| black_box(env.render().map(|f| f.to_png())))
    });
    group.finish();
}

fn same_run_ratios() {
    let budget = Duration::from_secs(2);
    let mut play = RandomPlay::new();
    let step = seconds_per_call(budget, || play.step());
    let draw = seconds_per_call(budget, || play.draw_only());
    let mut policy_play = PolicyPlay::new();
    let policy_step = seconds_per_call(budget, || policy_play.step());
    let env = &play.env;
    let render = seconds_per_call(budget, || {
        black_box(env.render());
    });
    let render_png = seconds_per_call(budget, || {
        black_box(env.render().map(|f| f.to_png()));
    });
    let steps_per_s = 1.0 / step;
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    println!("\nsoccer-2v2 same-run figures");
    println!(
        "  random steps/s (4 agents, 1 thread): {steps_per_s:.0} = {:.2}x the {STEPS_GOAL:.0} goal ({})",
        steps_per_s / STEPS_GOAL,
        verdict(steps_per_s >= STEPS_GOAL)
    );
    println!(
        "  one step costs {:.1}x drawing its 4 random actions ({:.1} ns vs {:.1} ns)",
        step / draw,
        step * 1e9,
        draw * 1e9
    );
    println!(
        "  with mask observations + baseline::Random: {:.0} steps/s ({:.2}x raw)",
        1.0 / policy_step,
        step / policy_step
    );
    let frame_us = render_png * 1e6;
    println!(
        "  render + PNG: {frame_us:.1} us = {:.2}x the {FRAME_GOAL_US:.0} us goal ({}); render alone {:.1} us ({:.0}% of it)",
        frame_us / FRAME_GOAL_US,
        verdict(frame_us <= FRAME_GOAL_US),
        render * 1e6,
        100.0 * render / render_png
    );
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    criterion_benches(&mut criterion);
    criterion.final_summary();
    // `cargo bench` passes `--bench`; `cargo test --benches` does not and only smoke-tests.
    if std::env::args().any(|a| a == "--bench") {
        same_run_ratios();
    }
}
