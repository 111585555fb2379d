//! MiniGrid DoorKey steps per second through the worker protocol with a frame every step
//! (the agent's RGB view), raw RGB and PNG encodings, against the same env without frames
//! measured in the same run. Goal: >= 500 steps/s with frames (MOSAIC: 10.8).

// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

// Shared with the external workers' tests; the bench uses part of it.
use mosaic_test_kit::python;
#[path = "../tests/support/registry.rs"]
mod registry;

use criterion::{Criterion, criterion_group, criterion_main};
use mosaic_core::{Action, Environment, ObsRequest, Transition};
use std::cell::Cell;
use std::time::{Duration, Instant};

fn make(frames: &str) -> Box<dyn Environment> {
    let py = python::python_env();
    let settings = serde_json::json!({ "python": py.python, "frames": frames });
    let serde_json::Value::Object(settings) = settings else {
        unreachable!()
    };
    registry::external_envs()
        .make("gymnasium:MiniGrid-DoorKey-5x5-v0", &settings)
        .expect("MiniGrid worker")
}

/// Steps `iters` times with a fixed action cycle, resetting when episodes end; reads the
/// observation modalities in `want` every step.
fn run(env: &mut dyn Environment, iters: u64, want: ObsRequest, seed: &Cell<u64>) -> Duration {
    let mut out = Transition::default();
    let start = Instant::now();
    for i in 0..iters {
        if env.acting().is_empty() {
            seed.set(seed.get() + 1);
            env.reset(seed.get()).unwrap();
        }
        let obs = env.observe(0, want);
        if want.frame {
            assert_eq!(obs.frame.as_deref().map(|f| f.width), Some(160));
        }
        env.step(&[Some(Action((i % 3) as u32))], &mut out).unwrap();
    }
    start.elapsed()
}

fn steps(c: &mut Criterion) {
    let mut group = c.benchmark_group("minigrid_steps");
    group.measurement_time(Duration::from_secs(6));
    let frame = ObsRequest {
        frame: true,
        ..ObsRequest::MASK_ONLY
    };
    let mut rates = Vec::new();
    for (label, frames, want) in [
        ("no_frames", "rgb", ObsRequest::MASK_ONLY),
        ("frames_rgb", "rgb", frame),
        ("frames_png", "png", frame),
    ] {
        let mut env = make(frames);
        let seed = Cell::new(0);
        let total = Cell::new((0u64, Duration::ZERO));
        group.bench_function(label, |b| {
            b.iter_custom(|iters| {
                let time = run(env.as_mut(), iters, want, &seed);
                let (n, t) = total.get();
                total.set((n + iters, t + time));
                time
            })
        });
        let (n, t) = total.get();
        rates.push((label, n as f64 / t.as_secs_f64().max(1e-9)));
    }
    group.finish();
    let base = rates[0].1;
    for (label, rate) in &rates {
        eprintln!(
            "minigrid_steps/{label}: {rate:.0} steps/s ({:.1}% of no_frames; goal with frames >= 500, MOSAIC 10.8)",
            100.0 * rate / base
        );
    }
}

criterion_group!(benches, steps);
criterion_main!(benches);
