//! Fault injection with real processes and real signals: Python environment and policy
//! workers are killed (SIGKILL) or frozen (SIGSTOP) at random steps, or never start. The
//! sessions restart them, rebuild their state, retry the failed step, and the final records
//! equal a clean run's (ignoring timestamps, durations and restart events).

// Shared with the adapters tests; this test uses only part of it.
#[allow(dead_code)]
#[path = "../adapters/tests/support/python.rs"]
mod python;

#[path = "../actors/tests/common/collect.rs"]
mod collect;

use actix::prelude::*;
use collect::{Collected, collector, stripped};
use mosaic::Experiment;
use mosaic_actors::StepEvent;
use mosaic_actors::runner::Runner;
use mosaic_actors::session::Subscribers;
use mosaic_core::record::EpisodeRecord;
use mosaic_core::{ExperimentSpec, RunId};
use rand::Rng;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const EPISODES: u32 = 10;
/// The environment variable naming the test a worker belongs to.
const TAG: &str = "MOSAIC_FAULT_TEST";

/// MiniGrid DoorKey in a Python environment worker, its agent a Python policy worker. The
/// workers carry `tag` in their environment, so each test strikes only its own.
fn experiment(
    tag: &str,
    supervision: serde_json::Value,
    extra_operator: Option<serde_json::Value>,
) -> ExperimentSpec {
    let py = python::python_env();
    let pythonpath = py.package_dir.to_string_lossy().into_owned();
    let env = serde_json::json!({"PYTHONPATH": pythonpath, TAG: tag});
    let mut operators = vec![serde_json::json!({
        "id": "doorkey",
        "env": "gymnasium:MiniGrid-DoorKey-5x5-v0",
        "env_settings": {"python": py.python, "env": env, "heartbeat_ms": 200},
        "agents": {"*": {
            "kind": "worker",
            "command": [py.python, "-m", "mosaic_worker", "policy", "random"],
            "env": env,
            "heartbeat_ms": 200
        }}
    })];
    operators.extend(extra_operator);
    serde_json::from_value(serde_json::json!({
        "name": "faults",
        "episodes": EPISODES,
        "max_steps": 40,
        "seeds": {"plan": "procedural", "base": 300},
        "supervision": supervision,
        "operators": operators,
    }))
    .expect("a valid experiment")
}

/// What to do to a worker, and when.
#[derive(Clone, Copy, Debug)]
enum Fault {
    Kill,
    Stop,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Target {
    Env,
    Policy,
}

/// Live worker processes of this test process started for test `tag`.
fn workers(tag: &str, target: Target) -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`; comm may hold spaces, so split after the last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() == Some(&"Z") || fields.get(1).and_then(|p| p.parse().ok()) != Some(me) {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let is_target = match target {
            Target::Env => cmdline.contains("mosaic_worker") && cmdline.contains("gymnasium"),
            Target::Policy => cmdline.contains("mosaic_worker") && cmdline.contains("policy"),
        };
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let tagged = environ
            .split(|b| *b == 0)
            .any(|var| var == format!("{TAG}={tag}").as_bytes());
        if is_target && tagged {
            found.push(pid);
        }
    }
    found
}

fn signal(pid: i32, fault: Fault) {
    let signal = match fault {
        Fault::Kill => nix::sys::signal::Signal::SIGKILL,
        Fault::Stop => nix::sys::signal::Signal::SIGSTOP,
    };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal)
        .unwrap_or_else(|e| panic!("{signal} to {pid}: {e}"));
}

/// Strikes one worker per episode at a planned step.
struct Striker {
    tag: &'static str,
    /// Per episode: (step, target).
    plan: Vec<(u32, Target)>,
    fault: Fault,
    struck: Arc<Mutex<Vec<(u32, Target, Instant)>>>,
}

impl Actor for Striker {
    type Context = Context<Self>;
}

impl Handler<StepEvent> for Striker {
    type Result = ();
    fn handle(&mut self, msg: StepEvent, _: &mut Context<Self>) {
        let Some(record) = msg.records.first() else {
            return;
        };
        let episode = record.episode_index;
        let Some(&(step, target)) = self.plan.get(episode as usize) else {
            return;
        };
        let mut struck = self.struck.lock().unwrap();
        if record.step_index != step || struck.iter().any(|(e, _, _)| *e == episode) {
            return;
        }
        if let Some(pid) = workers(self.tag, target).first() {
            signal(*pid, self.fault);
            struck.push((episode, target, Instant::now()));
        }
    }
}

struct Outcome {
    collected: Collected,
    episodes: Vec<EpisodeRecord>,
    result: Result<(), String>,
}

async fn run(spec: ExperimentSpec, striker: Option<Striker>) -> Outcome {
    let experiment = Experiment::from_spec(spec.clone());
    let runner = Runner::new(
        spec,
        RunId::from("faults"),
        Arc::new(experiment.envs().clone()),
        Arc::new(experiment.kinds().clone()),
    );
    let (collected, mut subscribers): (Collected, Subscribers) = collector();
    if let Some(striker) = striker {
        subscribers.steps.push(striker.start().recipient());
    }
    let result = runner
        .run(None, subscribers, |_| {})
        .await
        .map(|_| ())
        .map_err(|e| e.to_string());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let episodes = collected.episodes.lock().unwrap().clone();
    Outcome {
        collected,
        episodes,
        result,
    }
}

fn assert_same_records(faulty: &Outcome, clean: &Outcome) {
    assert!(faulty.result.is_ok(), "{:?}", faulty.result);
    let steps = |o: &Outcome| stripped(&o.collected.steps.lock().unwrap());
    let (now, then) = (steps(faulty), steps(clean));
    let errors: Vec<_> = faulty
        .episodes
        .iter()
        .filter_map(|e| e.error.clone())
        .collect();
    assert_eq!(
        now.len(),
        then.len(),
        "step record counts differ; errors: {errors:?}"
    );
    if let Some((a, b)) = now.iter().zip(&then).find(|(a, b)| a != b) {
        panic!("step records differ from the clean run:\n{a}\n{b}");
    }
    assert_eq!(stripped(&faulty.episodes), stripped(&clean.episodes));
}

/// A seeded plan: one strike per episode at a random step, alternating targets.
fn plan(seed: u64, targets: &[Target]) -> Vec<(u32, Target)> {
    let mut rng = mosaic_core::rng::seeded(seed);
    (0..EPISODES as usize)
        .map(|e| (rng.random_range(2..30), targets[e % targets.len()]))
        .collect()
}

#[actix::test]
async fn killed_env_and_policy_workers_are_restarted_and_the_records_equal_a_clean_run() {
    let clean = run(experiment("kill", serde_json::json!({}), None), None).await;
    assert!(clean.result.is_ok(), "{:?}", clean.result);
    for (interval, seed) in [(0, 1), (3_600_000, 2)] {
        let struck = Arc::new(Mutex::new(Vec::new()));
        let striker = Striker {
            tag: "kill",
            plan: plan(seed, &[Target::Env, Target::Policy]),
            fault: Fault::Kill,
            struck: struck.clone(),
        };
        let faulty = run(
            experiment(
                "kill",
                // Ten strikes within seconds: allow them (the default is 3 a minute).
                serde_json::json!({"checkpoint_interval_ms": interval, "max_restarts": 50}),
                None,
            ),
            Some(striker),
        )
        .await;
        assert_same_records(&faulty, &clean);
        let struck = struck.lock().unwrap().clone();
        assert!(
            struck.len() >= 8,
            "only {} of {EPISODES} strikes landed",
            struck.len()
        );
        let restarts: Vec<_> = faulty
            .episodes
            .iter()
            .flat_map(|e| e.restarts.clone())
            .collect();
        assert!(restarts.len() >= struck.len(), "{restarts:?}");
        for restart in &restarts {
            assert!(restart.recovered, "{restart:?}");
            assert!(restart.diverged.is_none(), "{restart:?}");
            assert!(
                ["SIGKILL", "Broken pipe", "closed its output"]
                    .iter()
                    .any(|sign| restart.failure.contains(sign)),
                "{restart:?}"
            );
        }
        assert!(restarts.iter().any(|r| r.child == "env"));
        assert!(restarts.iter().any(|r| r.child == "agent"));
    }
}

#[actix::test]
async fn a_frozen_worker_is_declared_dead_by_its_heartbeat_and_replaced() {
    let clean = run(experiment("stop", serde_json::json!({}), None), None).await;
    let struck = Arc::new(Mutex::new(Vec::new()));
    let mut plan = plan(3, &[Target::Env, Target::Policy]);
    plan.truncate(2);
    let striker = Striker {
        tag: "stop",
        plan,
        fault: Fault::Stop,
        struck: struck.clone(),
    };
    let faulty = run(
        experiment("stop", serde_json::json!({}), None),
        Some(striker),
    )
    .await;
    assert_same_records(&faulty, &clean);
    let restarts: Vec<_> = faulty
        .episodes
        .iter()
        .flat_map(|e| e.restarts.clone())
        .collect();
    assert_eq!(struck.lock().unwrap().len(), 2);
    assert_eq!(restarts.len(), 2, "{restarts:?}");
    for restart in &restarts {
        assert!(
            restart.recovered && restart.failure.contains("silent"),
            "{restart:?}"
        );
    }
    // Frozen processes are gone: the replaced workers' process groups were killed.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for target in [Target::Env, Target::Policy] {
        for pid in workers("stop", target) {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            assert!(
                !state.contains(") T "),
                "stopped worker {pid} left behind: {state}"
            );
        }
    }
}

#[actix::test]
async fn a_worker_that_never_starts_escalates_and_the_run_continues_or_stops() {
    let py = python::python_env();
    let broken = |supervision: serde_json::Value| {
        experiment(
            "start",
            supervision,
            Some(serde_json::json!({
                "id": "broken",
                "env": "soccer-2v2",
                "agents": {"*": {"kind": "random"}, "green_0": {
                    "kind": "worker",
                    "command": [py.python, "-c", "import sys; sys.exit(3)"]
                }}
            })),
        )
    };
    let continued = run(broken(serde_json::json!({"max_restarts": 2})), None).await;
    assert!(continued.result.is_ok(), "{:?}", continued.result);
    let (failed, ran): (Vec<_>, Vec<_>) = continued
        .episodes
        .iter()
        .partition(|e| e.operator_id == "broken");
    assert_eq!(failed.len(), EPISODES as usize);
    assert_eq!(ran.len(), EPISODES as usize);
    let error = failed[0].error.as_deref().unwrap_or_default();
    assert!(
        error.contains("could not start")
            && error.contains("gave up after 3 attempts")
            && error.contains("closed its output"),
        "{error}"
    );
    assert!(ran.iter().all(|e| e.error.is_none()));

    let stopped = run(
        broken(serde_json::json!({"max_restarts": 1, "on_escalation": "stop"})),
        None,
    )
    .await;
    let error = stopped.result.expect_err("the run stops");
    assert!(
        error.contains("broken") && error.contains("stopping"),
        "{error}"
    );
}
