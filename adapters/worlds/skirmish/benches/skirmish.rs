//! Speed of `skirmish`: 5v5 play with symbolic observations, and the multi-hop entity
//! memory of a 10v10 battle.
//!
//! Besides criterion's figures, `cargo bench -p mosaic-skirmish` prints same-run figures
//! against the goals: at least 300,000 environment steps per second for 5v5 with symbolic
//! observations of every acting agent (one thread), and at most 5 µs per step for the
//! entity memory of a 10v10 battle with `max_hops = 3` (both teams' relays).

use criterion::{Criterion, Throughput};
use mosaic_core::entity_memory::EntityMemory;
use mosaic_core::{Environment, ObsRequest};
use mosaic_skirmish::{Battle, Sighting};
use std::hint::black_box;
use std::time::Duration;

mod support;
use support::{Play, seconds_per_call};

const STEPS_GOAL: f64 = 300_000.0;
const PROPAGATION_GOAL_US: f64 = 5.0;

/// One step's input to a team's entity memory: who is linked, who sees what.
struct Frame {
    links: Vec<(usize, usize)>,
    sightings: Vec<(usize, usize, Sighting)>,
}

/// The relay inputs of both teams over the steps of real 10v10 episodes, replayed into
/// the memories exactly as the world feeds them.
struct Relay {
    memories: [EntityMemory<Sighting>; 2],
    frames: Vec<[Frame; 2]>,
    next: usize,
}

/// The inputs the world gives team `team`'s memory in the state `battle`.
fn inputs(battle: &Battle, team: usize) -> Frame {
    let members = battle.members(team);
    let offset = members.start;
    let mut frame = Frame {
        links: Vec::new(),
        sightings: Vec::new(),
    };
    for i in members.clone() {
        let a = &battle.units[i];
        if !a.alive() {
            continue;
        }
        for k in i + 1..members.end {
            let b = &battle.units[k];
            let sight = a.kind.stats().sight_range.min(b.kind.stats().sight_range);
            let (dx, dy) = (a.pos[0] - b.pos[0], a.pos[1] - b.pos[1]);
            if b.alive() && dx * dx + dy * dy < sight * sight {
                frame.links.push((i - offset, k - offset));
            }
        }
        let seen = (0..battle.units.len()).filter(|j| *j == i || battle.visible(i) & (1 << j) != 0);
        for j in seen {
            let u = &battle.units[j];
            let sighting = Sighting {
                pos: u.pos,
                health: u.health,
                shield: u.shield,
            };
            frame.sightings.push((i - offset, j, sighting));
        }
    }
    frame
}

impl Relay {
    fn new() -> Self {
        let mut play = Play::new("protoss_10_vs_10", 3, ObsRequest::MASK_ONLY);
        let mut frames = Vec::new();
        while frames.len() < 2_000 {
            let battle = play.env.battle().expect("running");
            frames.push([inputs(battle, 0), inputs(battle, 1)]);
            play.step();
        }
        let battle = play.env.battle().expect("running");
        Self {
            memories: battle.memory.clone(),
            frames,
            next: 0,
        }
    }

    /// One step of both teams' relays.
    fn step(&mut self) {
        let frame = &self.frames[self.next];
        self.next = (self.next + 1) % self.frames.len();
        for (memory, input) in self.memories.iter_mut().zip(frame) {
            memory.begin_step();
            for &(a, b) in &input.links {
                memory.connect(a, b);
            }
            for &(agent, entity, sighting) in &input.sightings {
                memory.sight(agent, entity, sighting);
            }
            memory.propagate();
        }
        black_box(&self.memories);
    }
}

/// "12345 (wall) / 23456 (on CPU)" per second for a call taking `seconds`.
fn per_second((wall, cpu): (f64, Option<f64>)) -> String {
    match cpu {
        Some(cpu) => format!(
            "{:.0} wall-clock, {:.0} per CPU-second",
            1.0 / wall,
            1.0 / cpu
        ),
        None => format!("{:.0}", 1.0 / wall),
    }
}

fn criterion_benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("skirmish");
    group.throughput(Throughput::Elements(1));
    let mut symbolic = Play::new("protoss_5_vs_5", 3, ObsRequest::SYMBOLIC);
    group.bench_function("step_5v5_symbolic_obs", |b| b.iter(|| symbolic.step()));
    let mut masks = Play::new("protoss_5_vs_5", 3, ObsRequest::MASK_ONLY);
    group.bench_function("step_5v5_mask_only", |b| b.iter(|| masks.step()));
    let mut relay = Relay::new();
    group.bench_function("entity_memory_10v10_hops3", |b| b.iter(|| relay.step()));
    let text = Play::new("protoss_5_vs_5", 3, ObsRequest::MASK_ONLY);
    group.bench_function("text_observation", |b| {
        b.iter(|| {
            black_box(text.env.observe(
                0,
                ObsRequest {
                    text: true,
                    ..ObsRequest::MASK_ONLY
                },
            ))
        })
    });
    group.bench_function("render_and_png", |b| {
        b.iter(|| black_box(text.env.render().map(|f| f.to_png())))
    });
    group.finish();
}

fn same_run_figures() {
    let budget = Duration::from_secs(3);
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    let mut symbolic = Play::new("protoss_5_vs_5", 3, ObsRequest::SYMBOLIC);
    let step = seconds_per_call(budget, || symbolic.step());
    let mut masks = Play::new("protoss_5_vs_5", 3, ObsRequest::MASK_ONLY);
    let mask_step = seconds_per_call(budget, || masks.step());
    let mut local = Play::new("protoss_5_vs_5", 0, ObsRequest::SYMBOLIC);
    let local_step = seconds_per_call(budget, || local.step());
    let mut relay = Relay::new();
    let propagation = seconds_per_call(budget, || relay.step());
    let mut big = Play::new("protoss_10_vs_10", 3, ObsRequest::SYMBOLIC);
    let big_step = seconds_per_call(budget, || big.step());
    // The goals are judged on CPU time when known: it does not count waiting for a core.
    let best = |(wall, cpu): (f64, Option<f64>)| cpu.unwrap_or(wall);
    let steps_per_s = 1.0 / best(step);
    println!("\nskirmish same-run figures (one thread)");
    println!(
        "  5v5 steps/s, symbolic obs of every agent + random legal actions: {}\n    = {:.2}x the {STEPS_GOAL:.0} goal ({})",
        per_second(step),
        steps_per_s / STEPS_GOAL,
        verdict(steps_per_s >= STEPS_GOAL)
    );
    println!(
        "    with masks only: {}; symbolic with max_hops = 0: {}",
        per_second(mask_step),
        per_second(local_step)
    );
    let us = best(propagation) * 1e6;
    println!(
        "  10v10 entity memory, max_hops = 3, both teams: {:.2} us/step wall-clock, {us:.2} on CPU\n    = {:.2}x the {PROPAGATION_GOAL_US} us budget ({})",
        propagation.0 * 1e6,
        us / PROPAGATION_GOAL_US,
        verdict(us <= PROPAGATION_GOAL_US)
    );
    println!(
        "  10v10 steps/s with symbolic obs: {}",
        per_second(big_step)
    );
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    criterion_benches(&mut criterion);
    criterion.final_summary();
    // `cargo bench` passes `--bench`; `cargo test --benches` does not and only smoke-tests.
    if std::env::args().any(|a| a == "--bench") {
        same_run_figures();
    }
}
