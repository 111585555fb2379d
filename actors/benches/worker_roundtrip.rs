//! Decisions per second from a Python policy worker through the `worker` decider actor,
//! against a raw pipe ping-pong with a Python echo process measured in the same run (the
//! floor any protocol over pipes pays). Goals: >= 20,000 round trips/s and >= 50% of the
//! ping-pong rate.
//!
//! Both are latency-bound (two process wake-ups per round trip), so their rates depend on
//! where the processes run more than on the work they do: on one CPU a round trip is two
//! context switches; across two CPUs it is two cross-CPU wake-ups, which on a virtual machine
//! whose idle CPUs halt cost tens of microseconds each; left to the scheduler, each batch
//! lands on either. Each placement is therefore measured on its own, with the Rust side and
//! the Python children pinned (`one-cpu`: all on one CPU; `two-cpus`: Rust on one, Python on
//! another; `unpinned`: the scheduler's choice). The ratio is taken from interleaved rounds
//! (a batch of ping-pongs, then a batch of decisions, and again), each round under the same
//! load, and reported as the median and range over rounds; criterion's own timings come
//! first.

// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

// Shared with the external workers' tests; the bench uses part of it.
use mosaic_test_kit::python;

use actix::Recipient;
use criterion::{Criterion, criterion_group, criterion_main};
use mosaic_actors::worker::{WorkerPolicy, WorkerSettings};
use mosaic_actors::{BeginEpisode, Decide};
use mosaic_core::{Action, AgentContext, AgentSpec, EnvSpec, ObsRequest, Observation, Stepping};
use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;
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
            role: None,
        }],
        action_labels: (0..7).map(|i| i.to_string()).collect(),
        default_action: Action(0),
        stepping: Stepping::Single,
        max_steps: None,
        symbolic_shape: None,
        offers: ObsRequest::MASK_ONLY,
        descriptions: Default::default(),
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

/// Where the measured processes run.
#[derive(Clone, Copy)]
enum Placement {
    OneCpu,
    TwoCpus,
    Unpinned,
}

impl Placement {
    const ALL: [Placement; 3] = [Placement::OneCpu, Placement::TwoCpus, Placement::Unpinned];

    fn name(self) -> &'static str {
        match self {
            Placement::OneCpu => "one-cpu",
            Placement::TwoCpus => "two-cpus",
            Placement::Unpinned => "unpinned",
        }
    }

    /// The CPUs of the measuring thread and of the Python children, out of those this
    /// process may use; `None` when the placement needs more CPUs than there are.
    fn cpus(self, allowed: &[usize]) -> Option<(Vec<usize>, Vec<usize>)> {
        match (self, allowed) {
            (Placement::OneCpu, [first, ..]) => Some((vec![*first], vec![*first])),
            (Placement::TwoCpus, [first, second, ..]) => Some((vec![*first], vec![*second])),
            (Placement::Unpinned, [_, ..]) => Some((allowed.to_vec(), allowed.to_vec())),
            _ => None,
        }
    }
}

/// The CPUs this thread may run on.
fn allowed_cpus() -> Vec<usize> {
    let set = sched_getaffinity(Pid::from_raw(0)).expect("the CPUs this process may use");
    (0..CpuSet::count())
        .filter(|&cpu| set.is_set(cpu).unwrap_or(false))
        .collect()
}

/// Moves this thread (and what it spawns from now on) to `cpus`.
fn pin(cpus: &[usize]) {
    let mut set = CpuSet::new();
    for &cpu in cpus {
        set.set(cpu).expect("a CPU index within the set");
    }
    sched_setaffinity(Pid::from_raw(0), &set).expect("pinning the measuring thread");
}

/// The Python policy worker behind its operator actor.
struct Worker {
    decide: Recipient<Decide>,
    obs: Arc<Observation>,
}

impl Worker {
    fn start(system: &actix_rt::SystemRunner, python: &python::PythonEnv) -> Self {
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
        Self { decide, obs }
    }

    /// `n` decisions, asked from a task on the arbiter as a session actor asks them (the
    /// `block_on` future itself is polled outside the arbiter's task queue, which would add
    /// a poll of the driver per message that sessions never pay).
    fn decisions(&self, system: &actix_rt::SystemRunner, n: u64) -> Duration {
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
        system
            .block_on(async { actix_rt::spawn(measure).await })
            .expect("the measuring task")
    }
}

/// A ping-pong and a worker whose Python processes run where a placement puts them.
struct Pair {
    placement: Placement,
    own: Vec<usize>,
    pingpong: PingPong,
    worker: Worker,
}

impl Pair {
    fn start(
        placement: Placement,
        allowed: &[usize],
        system: &actix_rt::SystemRunner,
        python: &python::PythonEnv,
    ) -> Option<Self> {
        let Some((own, children)) = placement.cpus(allowed) else {
            eprintln!(
                "worker_roundtrip/{}: skipped, {} CPU(s) available",
                placement.name(),
                allowed.len()
            );
            return None;
        };
        // Children inherit the CPUs of the thread that spawns them.
        pin(&children);
        let pingpong = PingPong::start(&python.python);
        let worker = Worker::start(system, python);
        pin(&own);
        Some(Self {
            placement,
            own,
            pingpong,
            worker,
        })
    }

    /// The median and range over interleaved rounds of decisions/s and of their share of
    /// the ping-pong's rate, as one line.
    fn interleaved(&mut self, system: &actix_rt::SystemRunner) -> String {
        pin(&self.own);
        let mut rounds: Vec<(f64, f64)> = (0..ROUNDS)
            .map(|_| {
                let pipe = per_second(BATCH, self.pingpong.round_trips(BATCH));
                let decisions = per_second(BATCH, self.worker.decisions(system, BATCH));
                (decisions / pipe, decisions)
            })
            .collect();
        rounds.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut rates: Vec<f64> = rounds.iter().map(|r| r.1).collect();
        rates.sort_by(f64::total_cmp);
        let median = |v: &[f64]| v[v.len() / 2];
        let ratios: Vec<f64> = rounds.iter().map(|r| 100.0 * r.0).collect();
        format!(
            "worker_roundtrip/{}: {ROUNDS} interleaved rounds of {BATCH}: Python policy worker {:.0} decisions/s (median; {:.0}..{:.0}), {:.1}% of the raw pipe ping-pong (median; {:.1}..{:.1}%) (goals: >= 20000/s, >= 50%)",
            self.placement.name(),
            median(&rates),
            rates[0],
            rates[rates.len() - 1],
            median(&ratios),
            ratios[0],
            ratios[ratios.len() - 1],
        )
    }

    fn stop(self) {
        drop(self.pingpong.to_echo);
        let mut echo = self.pingpong.echo;
        let _ = echo.wait();
    }
}

fn per_second(n: u64, time: Duration) -> f64 {
    n as f64 / time.as_secs_f64().max(1e-9)
}

fn roundtrips(c: &mut Criterion) {
    let py = python::python_env();
    let allowed = allowed_cpus();
    let system = actix_rt::System::new();
    let mut pairs: Vec<Pair> = Placement::ALL
        .into_iter()
        .filter_map(|placement| Pair::start(placement, &allowed, &system, py))
        .collect();

    for pair in &mut pairs {
        pin(&pair.own);
        let mut group = c.benchmark_group(format!("worker_roundtrip/{}", pair.placement.name()));
        group.measurement_time(Duration::from_secs(3));
        group.bench_function("raw_pipe_pingpong", |b| {
            b.iter_custom(|iters| pair.pingpong.round_trips(iters))
        });
        group.bench_function("python_policy_worker_decide", |b| {
            b.iter_custom(|iters| pair.worker.decisions(&system, iters))
        });
        group.finish();
    }
    let lines: Vec<String> = pairs.iter_mut().map(|p| p.interleaved(&system)).collect();
    for line in lines {
        eprintln!("{line}");
    }
    pin(&allowed);
    pairs.into_iter().for_each(Pair::stop);
}

criterion_group!(benches, roundtrips);
criterion_main!(benches);
