//! Decisions per second from a Python policy worker through the `worker` operator actor,
//! against a raw pipe ping-pong with a Python echo process measured in the same run (the
//! floor any protocol over pipes pays). Goals: >= 20,000 round trips/s and >= 50% of the
//! ping-pong rate.
//!
//! Both are latency-bound (two process wake-ups per round trip), so on a shared machine their
//! rates swing with the load. The ratio is therefore taken from interleaved rounds (a batch
//! of ping-pongs, then a batch of decisions, and again), each round under the same load,
//! and reported as the median and range over rounds; criterion's own timings come first.

// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

// Shared with the adapters' tests; the bench uses part of it.
#[allow(dead_code)]
#[path = "../../adapters/tests/support/python.rs"]
mod python;

use actix::Recipient;
use criterion::{Criterion, criterion_group, criterion_main};
use mosaic_actors::worker::{WorkerPolicy, WorkerSettings};
use mosaic_actors::{BeginEpisode, Decide};
use mosaic_core::{Action, AgentContext, AgentSpec, EnvSpec, ObsRequest, Observation, Stepping};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ECHO: &str = "import sys\nr, w = sys.stdin.buffer, sys.stdout.buffer\nfor line in r:\n    w.write(line)\n    w.flush()\n";
const LINE: &[u8] =
    b"{\"type\":\"decide\",\"id\":1,\"step\":0,\"observation\":{},\"legal\":[0,1,2,3,4,5,6]}\n";
/// Interleaved rounds for the ratio, and round trips per batch.
const ROUNDS: usize = 21;
const BATCH: u64 = 3_000;

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

/// A Python process echoing lines over blocking pipes.
struct PingPong {
    echo: Child,
    to_echo: ChildStdin,
    from_echo: BufReader<ChildStdout>,
    line: Vec<u8>,
}

impl PingPong {
    fn start(python: &str) -> Self {
        let mut echo = Command::new(python)
            .args(["-c", ECHO])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python echo");
        let to_echo = echo.stdin.take().expect("stdin");
        let from_echo = BufReader::new(echo.stdout.take().expect("stdout"));
        Self {
            echo,
            to_echo,
            from_echo,
            line: Vec::with_capacity(256),
        }
    }

    fn round_trips(&mut self, n: u64) -> Duration {
        let start = Instant::now();
        for _ in 0..n {
            self.to_echo.write_all(LINE).unwrap();
            self.to_echo.flush().unwrap();
            self.line.clear();
            self.from_echo.read_until(b'\n', &mut self.line).unwrap();
        }
        start.elapsed()
    }
}

/// The Python policy worker behind its operator actor.
struct Worker {
    system: actix_rt::SystemRunner,
    decide: Recipient<Decide>,
    obs: Arc<Observation>,
}

impl Worker {
    fn start(python: &python::PythonEnv) -> Self {
        let system = actix_rt::System::new();
        let settings = WorkerSettings::new(python.mosaic_worker(&["policy", "random"]));
        let spec = spec();
        let decide = system.block_on(async {
            let worker = WorkerPolicy::spawn(&settings, "bench:solo").expect("policy worker");
            let ctx = AgentContext::new(1, 0, "solo".into(), 7);
            let begin = BeginEpisode { ctx, spec };
            worker.begin.send(begin).await.unwrap().unwrap();
            worker.decide
        });
        let obs = Arc::new(Observation::with_mask(0, vec![true; 7]));
        Self {
            system,
            decide,
            obs,
        }
    }

    /// `n` decisions, asked from a task on the arbiter as a session actor asks them (the
    /// `block_on` future itself is polled outside the arbiter's task queue, which would add
    /// a poll of the driver per message that sessions never pay).
    fn decisions(&self, n: u64) -> Duration {
        let (decide, obs) = (self.decide.clone(), self.obs.clone());
        let measure = async move {
            let start = Instant::now();
            for step in 0..n {
                let request = Decide {
                    obs: obs.clone(),
                    step: step as u32,
                    deadline: None,
                };
                let decision = decide.send(request).await.unwrap().unwrap();
                assert!(decision.action.0 < 7);
            }
            start.elapsed()
        };
        self.system
            .block_on(async { actix_rt::spawn(measure).await })
            .expect("the measuring task")
    }
}

fn per_second(n: u64, time: Duration) -> f64 {
    n as f64 / time.as_secs_f64().max(1e-9)
}

fn roundtrips(c: &mut Criterion) {
    let py = python::python_env();
    let mut pingpong = PingPong::start(&py.python);
    let worker = Worker::start(py);

    let mut group = c.benchmark_group("worker_roundtrip");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("raw_pipe_pingpong", |b| {
        b.iter_custom(|iters| pingpong.round_trips(iters))
    });
    group.bench_function("python_policy_worker_decide", |b| {
        b.iter_custom(|iters| worker.decisions(iters))
    });
    group.finish();

    let mut rounds: Vec<(f64, f64)> = (0..ROUNDS)
        .map(|_| {
            let pipe = per_second(BATCH, pingpong.round_trips(BATCH));
            let decisions = per_second(BATCH, worker.decisions(BATCH));
            (decisions / pipe, decisions)
        })
        .collect();
    rounds.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut rates: Vec<f64> = rounds.iter().map(|r| r.1).collect();
    rates.sort_by(f64::total_cmp);
    let median = |v: &[f64]| v[v.len() / 2];
    let ratios: Vec<f64> = rounds.iter().map(|r| 100.0 * r.0).collect();
    eprintln!(
        "worker_roundtrip: {ROUNDS} interleaved rounds of {BATCH}: Python policy worker {:.0} decisions/s (median; {:.0}..{:.0}), {:.1}% of the raw pipe ping-pong (median; {:.1}..{:.1}%) (goals: >= 20000/s, >= 50%)",
        median(&rates),
        rates[0],
        rates[rates.len() - 1],
        median(&ratios),
        ratios[0],
        ratios[ratios.len() - 1],
    );
    drop(pingpong.to_echo);
    let _ = pingpong.echo.wait();
}

criterion_group!(benches, roundtrips);
criterion_main!(benches);
