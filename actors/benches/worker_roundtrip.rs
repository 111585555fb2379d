//! Decisions per second from a Python policy worker through the `worker` operator actor,
//! against a raw pipe ping-pong with a Python echo process measured in the same run (the
//! floor any protocol over pipes pays). Goals: >= 20,000 round trips/s and >= 50% of the
//! ping-pong rate.

// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

// Shared with the adapters' tests; the bench uses part of it.
#[allow(dead_code)]
#[path = "../../adapters/tests/support/python.rs"]
mod python;

use criterion::{Criterion, criterion_group, criterion_main};
use mosaic_actors::worker::{WorkerPolicy, WorkerSettings};
use mosaic_actors::{BeginEpisode, Decide};
use mosaic_core::{Action, AgentContext, AgentSpec, EnvSpec, ObsRequest, Observation, Stepping};
use std::cell::Cell;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ECHO: &str = "import sys\nr, w = sys.stdin.buffer, sys.stdout.buffer\nfor line in r:\n    w.write(line)\n    w.flush()\n";
const LINE: &[u8] =
    b"{\"type\":\"decide\",\"id\":1,\"step\":0,\"observation\":{},\"legal\":[0,1,2,3,4,5,6]}\n";

fn spec() -> Arc<EnvSpec> {
    Arc::new(EnvSpec {
        name: "bench".into(),
        agents: vec![AgentSpec {
            id: "solo".into(),
            team: None,
        }],
        action_labels: (0..7).map(|i| i.to_string()).collect(),
        default_action: Action(0),
        stepping: Stepping::Single,
        max_steps: None,
        symbolic_shape: None,
        offers: ObsRequest::MASK_ONLY,
    })
}

/// Per-iteration time of each side, for the ratio printed at the end.
#[derive(Default)]
struct Rate {
    iters: Cell<u64>,
    time: Cell<Duration>,
}

impl Rate {
    fn add(&self, iters: u64, time: Duration) -> Duration {
        self.iters.set(self.iters.get() + iters);
        self.time.set(self.time.get() + time);
        time
    }

    fn per_second(&self) -> f64 {
        self.iters.get() as f64 / self.time.get().as_secs_f64().max(1e-9)
    }
}

fn roundtrips(c: &mut Criterion) {
    let py = python::python_env();
    let mut group = c.benchmark_group("worker_roundtrip");
    group.measurement_time(Duration::from_secs(5));

    let mut echo = Command::new(&py.python)
        .args(["-c", ECHO])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python echo");
    let mut to_echo = echo.stdin.take().expect("stdin");
    let mut from_echo = BufReader::new(echo.stdout.take().expect("stdout"));
    let pipe = Rate::default();
    let mut line = Vec::with_capacity(256);
    group.bench_function("raw_pipe_pingpong", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                to_echo.write_all(LINE).unwrap();
                to_echo.flush().unwrap();
                line.clear();
                from_echo.read_until(b'\n', &mut line).unwrap();
            }
            pipe.add(iters, start.elapsed())
        })
    });

    let system = actix_rt::System::new();
    let settings = WorkerSettings::new(py.mosaic_worker(&["policy", "random"]));
    let spec = spec();
    let worker = system.block_on(async {
        let worker = WorkerPolicy::spawn(&settings, "bench:solo").expect("policy worker");
        let ctx = AgentContext::new(1, 0, "solo".into(), 7);
        worker
            .begin
            .send(BeginEpisode {
                ctx,
                spec: spec.clone(),
            })
            .await
            .unwrap()
            .unwrap();
        worker
    });
    let obs = Arc::new(Observation::with_mask(0, vec![true; 7]));
    let actor = Rate::default();
    group.bench_function("python_policy_worker_decide", |b| {
        b.iter_custom(|iters| {
            system.block_on(async {
                let start = Instant::now();
                for step in 0..iters {
                    let decide = Decide {
                        obs: obs.clone(),
                        step: step as u32,
                        deadline: None,
                    };
                    let decision = worker.decide.send(decide).await.unwrap().unwrap();
                    assert!(decision.action.0 < 7);
                }
                actor.add(iters, start.elapsed())
            })
        })
    });
    group.finish();
    drop(to_echo);
    let _ = echo.wait();
    eprintln!(
        "worker_roundtrip: raw pipe ping-pong {:.0} rt/s, Python policy worker {:.0} decisions/s, ratio {:.1}% (goals: >= 20000/s, >= 50%)",
        pipe.per_second(),
        actor.per_second(),
        100.0 * actor.per_second() / pipe.per_second()
    );
}

criterion_group!(benches, roundtrips);
criterion_main!(benches);
