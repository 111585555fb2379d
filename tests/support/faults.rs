//! Striking worker processes with real signals during a run: which processes belong to
//! a run (found through `/proc` by a tag in their environment), a step subscriber that
//! signals one at a planned step, and the DoorKey experiment with Python env and policy
//! workers that the fault tests and the recovery benchmark share. Expects the crate root to
//! declare the `python` and `collect` support modules.

#![allow(dead_code)]

use actix::prelude::*;
use mosaic::Experiment;
use mosaic_actors::StepEvent;
use mosaic_actors::runner::{Runner, UnitPlan};
use mosaic_actors::session::Subscribers;
use mosaic_core::record::EpisodeRecord;
use mosaic_core::{ExperimentSpec, RunId};
use mosaic_test_kit::collect::{Collected, collector};
use mosaic_test_kit::python;
use mosaic_test_kit::records::stripped;
use rand::Rng;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) const EPISODES: u32 = 12;
/// The environment variable naming the test a worker belongs to.
pub(crate) const TAG: &str = "MOSAIC_FAULT_TEST";

/// The Python environment families the docs advertise, as the fault tests run them: a
/// Gymnasium MiniGrid env, PettingZoo classic AEC games and a parallel MPE env.
pub(crate) const FAMILIES: [&str; 5] = [
    DOORKEY,
    "pettingzoo:classic/chess_v6",
    "pettingzoo:classic/connect_four_v3",
    "pettingzoo:classic/tictactoe_v3",
    "pettingzoo:mpe2/simple_spread_v3",
];

const DOORKEY: &str = "gymnasium:MiniGrid-DoorKey-5x5-v0";

/// MiniGrid DoorKey in a Python environment worker, its agent a Python policy worker. The
/// workers carry `tag` in their environment, so each test strikes only its own.
pub(crate) fn experiment(
    tag: &str,
    supervision: serde_json::Value,
    extra_operator: Option<serde_json::Value>,
) -> ExperimentSpec {
    experiment_on(DOORKEY, tag, supervision, extra_operator)
}

/// [`experiment`] on the environment `env` (one of [`FAMILIES`]), every agent a Python
/// policy worker.
pub(crate) fn experiment_on(
    env: &str,
    tag: &str,
    supervision: serde_json::Value,
    extra_operator: Option<serde_json::Value>,
) -> ExperimentSpec {
    let py = python::python_env();
    let tagged = serde_json::json!({ TAG: tag });
    // `chess_v6` for `pettingzoo:classic/chess_v6` (ids have no `-`).
    let id = env
        .rsplit([':', '/'])
        .next()
        .unwrap_or(env)
        .replace('-', "_");
    let mut operators = vec![serde_json::json!({
        "id": id,
        "env": env,
        "env_settings": {"python": py.python, "env": tagged, "heartbeat_ms": 200, "heartbeat_timeout_ms": 600},
        "agents": {"*": {
            "kind": "worker",
            "command": [py.python, "-m", "mosaic_worker", "policy", "random"],
            "env": tagged,
            "heartbeat_ms": 200,
            "heartbeat_timeout_ms": 600
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
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Fault {
    Kill,
    Stop,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Target {
    Env,
    Policy,
}

/// Live worker processes of this test process started for test `tag`.
pub(crate) fn workers(tag: &str, target: Target) -> Vec<i32> {
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
            Target::Env => {
                cmdline.contains("mosaic_worker")
                    && (cmdline.contains("gymnasium") || cmdline.contains("pettingzoo"))
            }
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

pub(crate) fn signal(pid: i32, fault: Fault) {
    let signal = match fault {
        Fault::Kill => nix::sys::signal::Signal::SIGKILL,
        Fault::Stop => nix::sys::signal::Signal::SIGSTOP,
    };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal)
        .unwrap_or_else(|e| panic!("{signal} to {pid}: {e}"));
}

/// Strikes one worker per episode at a planned step.
pub(crate) struct Striker {
    tag: &'static str,
    /// Per episode: (step, target).
    plan: Vec<(u32, Target)>,
    fault: Fault,
    log: Strikes,
}

/// What a [`Striker`] did and saw.
#[derive(Clone, Default)]
pub(crate) struct Strikes {
    /// (episode, target, when) of every signal sent.
    pub struck: Arc<Mutex<Vec<(u32, Target, Instant)>>>,
    /// (episode, step, when) of every step event received.
    pub steps: Arc<Mutex<Vec<(u32, u32, Instant)>>>,
}

impl Striker {
    /// Strikes a `target` worker of test `tag` with `fault` at each planned step.
    pub(crate) fn new(
        tag: &'static str,
        plan: Vec<(u32, Target)>,
        fault: Fault,
    ) -> (Self, Strikes) {
        let log = Strikes::default();
        (
            Self {
                tag,
                plan,
                fault,
                log: log.clone(),
            },
            log,
        )
    }
}

impl Actor for Striker {
    type Context = Context<Self>;
}

impl Handler<StepEvent> for Striker {
    type Result = ();
    fn handle(&mut self, msg: StepEvent, _: &mut Context<Self>) {
        let now = Instant::now();
        for step in msg.steps() {
            let record = &step[0];
            let episode = record.episode_index;
            self.log
                .steps
                .lock()
                .unwrap()
                .push((episode, record.step_index, now));
            let Some(&(planned, target)) = self.plan.get(episode as usize) else {
                continue;
            };
            let mut struck = self.log.struck.lock().unwrap();
            if record.step_index != planned || struck.iter().any(|(e, _, _)| *e == episode) {
                continue;
            }
            if let Some(pid) = workers(self.tag, target).first() {
                signal(*pid, self.fault);
                struck.push((episode, target, Instant::now()));
            }
        }
    }
}

pub(crate) struct Outcome {
    pub collected: Collected,
    pub episodes: Vec<EpisodeRecord>,
    pub result: Result<(), String>,
}

pub(crate) async fn run(spec: ExperimentSpec, striker: Option<Striker>) -> Outcome {
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
        .run(UnitPlan::All, subscribers, |_| {})
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

pub(crate) fn assert_same_records(faulty: &Outcome, clean: &Outcome) {
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

/// A seeded plan: one strike per episode at a random step, alternating targets. The strike
/// may land an episode later: the worker is then replaced at the next use.
/// The last episode is spared: a subscriber hears of steps in batches, up to the end of their
/// episode, so a strike planned there could land after the run's last use of the worker.
pub(crate) fn plan(seed: u64, targets: &[Target]) -> Vec<(u32, Target)> {
    let mut rng = mosaic_core::rng::seeded(seed);
    (0..EPISODES as usize - 1)
        .map(|e| (rng.random_range(2..30), targets[e % targets.len()]))
        .collect()
}
