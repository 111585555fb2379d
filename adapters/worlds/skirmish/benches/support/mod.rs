//! Random play as the framework runs it, and timing by the wall clock and on the CPU:
//! shared by the criterion bench and the `skirmish_speed` example (which includes this
//! file by path, so both measure the very same loop).

use mosaic_core::rng::{Rng, seeded};
use mosaic_core::{Action, Environment, ObsRequest, Settings, Transition};
use mosaic_skirmish::Skirmish;
use rand::Rng as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// The preset `scenario` with `max_hops`.
pub(crate) fn env(scenario: &str, max_hops: u32) -> Skirmish {
    let mut settings = Settings::new();
    settings.insert("scenario".into(), scenario.into());
    settings.insert("max_hops".into(), max_hops.into());
    Skirmish::from_settings(&settings).expect("a preset")
}

/// Play as the framework runs it: per step, the symbolic observation of every acting
/// agent, a uniformly random legal action read from its mask, then the step; a new
/// episode starts when one ends.
pub(crate) struct Play {
    /// The world played.
    pub env: Skirmish,
    rng: Rng,
    actions: Vec<Option<Action>>,
    out: Transition,
    episode: u64,
    want: ObsRequest,
}

impl Play {
    /// Play of the preset `scenario` with `max_hops`.
    pub(crate) fn new(scenario: &str, max_hops: u32, want: ObsRequest) -> Self {
        Self::of(env(scenario, max_hops), want)
    }

    /// Play of `env`, reading `want` of every acting agent each step.
    pub(crate) fn of(env: Skirmish, want: ObsRequest) -> Self {
        let n = env.spec().agents.len();
        let mut play = Self {
            env,
            rng: seeded(1),
            actions: vec![None; n],
            out: Transition::default(),
            episode: 0,
            want,
        };
        play.new_episode();
        play
    }

    fn new_episode(&mut self) {
        self.episode += 1;
        self.env.reset(self.episode).expect("reset never fails");
    }

    /// One step: observe, pick, step; a new episode when one ends.
    pub(crate) fn step(&mut self) {
        self.actions.fill(None);
        for agent in self.env.acting() {
            let obs = self.env.observe(agent, self.want);
            black_box(&obs.symbolic);
            let legal = obs.legal.iter().filter(|l| **l).count();
            let pick = self.rng.random_range(0..legal);
            self.actions[agent] = obs.legal_actions().nth(pick);
        }
        self.env
            .step(&self.actions, &mut self.out)
            .expect("running");
        if self.out.all_done() {
            self.new_episode();
        }
    }
}

/// Nanoseconds this thread has spent on a CPU (Linux's schedstat), if readable: on a
/// shared machine the wall clock also counts time spent waiting for a core.
fn cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Mean seconds per call of `f` over about `budget`: by the wall clock, and on the CPU
/// (when the system says).
pub(crate) fn seconds_per_call(budget: Duration, mut f: impl FnMut()) -> (f64, Option<f64>) {
    for _ in 0..1_000 {
        f();
    }
    let mut calls = 0u64;
    let cpu_start = cpu_ns();
    let start = Instant::now();
    while start.elapsed() < budget {
        for _ in 0..1_000 {
            f();
        }
        calls += 1_000;
    }
    let wall = start.elapsed().as_secs_f64() / calls as f64;
    let cpu = cpu_start
        .zip(cpu_ns())
        .map(|(a, b)| (b - a) as f64 * 1e-9 / calls as f64);
    (wall, cpu)
}
