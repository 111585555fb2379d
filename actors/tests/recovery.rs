//! Fault recovery inside sessions: panicking deciders and environments are restarted,
//! brought back to their state before the failed step, and the episode's records equal a
//! clean run's.

mod common;

use common::collect::{collector, stripped};
use mosaic_actors::decider::{DeciderHandle, DeciderKind, DeciderRegistry};
use mosaic_actors::runner::{RunError, Runner, UnitPlan};
use mosaic_actors::session::ResumePoint;
use mosaic_core::baseline::Random;
use mosaic_core::experiment::{SpecError, parse_settings};
use mosaic_core::record::{EpisodeCheckpoint, EpisodeRecord, StepRecord};
use mosaic_core::{
    AgentContext, Decision, EnvError, EnvSpec, Environment, ExperimentSpec, ObsRequest,
    Observation, Paradigm, Policy, RunId, Settings, Snapshot, Transition,
};
use mosaic_core::{EnvKind, EnvRegistry};
use mosaic_recorder::Unit;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Instances started so far, per test key (tests run in parallel in one process).
static STARTS: Mutex<Option<HashMap<String, u32>>> = Mutex::new(None);

fn count_start(key: &str) -> u32 {
    let mut starts = STARTS.lock().unwrap();
    let counter = starts
        .get_or_insert_with(HashMap::new)
        .entry(key.to_owned())
        .or_default();
    *counter += 1;
    *counter
}

/// soccer-2v2 whose first `panics` instances panic when asked to take step `at`.
struct FlakyEnv {
    inner: Box<dyn Environment>,
    panic_at: Option<u32>,
    snapshots: bool,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FlakySettings {
    key: String,
    at: u32,
    panics: u32,
    #[serde(default = "yes")]
    snapshots: bool,
    /// Instances (counted from 1) whose constructor panics.
    #[serde(default)]
    panicking_constructors: Vec<u32>,
}

fn yes() -> bool {
    true
}

fn make_flaky(settings: &Settings) -> Result<Box<dyn Environment>, SpecError> {
    let flaky: FlakySettings = parse_settings(settings)?;
    let instance = count_start(&format!("env:{}", flaky.key));
    if flaky.panicking_constructors.contains(&instance) {
        panic!("injected panic constructing environment instance {instance}");
    }
    Ok(Box::new(FlakyEnv {
        inner: mosaic_adapters::native_envs().make("soccer-2v2", &Settings::new())?,
        panic_at: (instance <= flaky.panics).then_some(flaky.at),
        snapshots: flaky.snapshots,
    }))
}

impl Environment for FlakyEnv {
    fn spec(&self) -> &EnvSpec {
        self.inner.spec()
    }
    fn reset(&mut self, seed: u64) -> Result<(), EnvError> {
        self.inner.reset(seed)
    }
    fn acting(&self) -> Vec<usize> {
        self.inner.acting()
    }
    fn observe(&self, agent: usize, want: ObsRequest) -> Observation {
        self.inner.observe(agent, want)
    }
    fn step(
        &mut self,
        actions: &[Option<mosaic_core::Action>],
        out: &mut Transition,
    ) -> Result<(), EnvError> {
        if self.panic_at == Some(self.inner.steps()) {
            panic!("injected environment panic at step {}", self.inner.steps());
        }
        self.inner.step(actions, out)
    }
    fn steps(&self) -> u32 {
        self.inner.steps()
    }
    fn outcome(&self) -> Option<Vec<mosaic_core::Outcome>> {
        self.inner.outcome()
    }
    fn metrics(&self) -> serde_json::Map<String, serde_json::Value> {
        self.inner.metrics()
    }
    fn snapshot(&self) -> Option<Snapshot> {
        self.snapshots.then(|| self.inner.snapshot()).flatten()
    }
    fn restore(&mut self, snapshot: &Snapshot) -> Result<(), EnvError> {
        self.inner.restore(snapshot)
    }
}

/// The random baseline, except that the first `panics` instances panic at step `at`, or
/// when loading a state (`on_load`).
struct FlakyPolicy {
    random: Random,
    panic_at: Option<u32>,
    panic_on_load: bool,
}

impl Policy for FlakyPolicy {
    fn paradigm(&self) -> Paradigm {
        Paradigm::Random
    }
    fn reset(&mut self, ctx: &AgentContext) {
        self.random.reset(ctx);
    }
    fn decide(&mut self, obs: &Observation) -> Decision {
        if self.panic_at == Some(obs.step) {
            panic!("injected operator panic at step {}", obs.step);
        }
        self.random.decide(obs)
    }
    fn save_state(&self) -> Option<serde_json::Value> {
        self.random.save_state()
    }
    fn load_state(&mut self, state: &serde_json::Value) -> Result<(), String> {
        if self.panic_on_load {
            panic!("injected operator panic while loading a state");
        }
        self.random.load_state(state)
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FlakyPolicySettings {
    key: String,
    at: u32,
    panics: u32,
    /// Never start: every start fails.
    #[serde(default)]
    never_starts: bool,
    /// Panic when loading a state rather than at step `at`.
    #[serde(default)]
    on_load: bool,
    /// Instances (counted from 1) whose constructor panics.
    #[serde(default)]
    panicking_constructors: Vec<u32>,
}

fn registries() -> (Arc<EnvRegistry>, Arc<DeciderRegistry>) {
    let mut envs = mosaic_adapters::native_envs();
    envs.register(EnvKind {
        name: "flaky-soccer",
        summary: "soccer-2v2 that panics on purpose",
        settings: &[],
        make: make_flaky,
        scripted: None,
    });
    let mut kinds = DeciderRegistry::baselines();
    kinds.register(DeciderKind {
        name: "flaky",
        summary: "random, panicking on purpose",
        settings: &[],
        spawn: Arc::new(|cx| {
            let settings: FlakyPolicySettings = parse_settings(&cx.slot.settings)?;
            if settings.never_starts {
                return Err(SpecError::start_failure("", "injected start failure"));
            }
            let instance = count_start(&format!("op:{}", settings.key));
            if settings.panicking_constructors.contains(&instance) {
                panic!("injected panic constructing operator instance {instance}");
            }
            Ok(DeciderHandle::start_policy(
                "flaky",
                Box::new(FlakyPolicy {
                    random: Random::default(),
                    panic_at: (instance <= settings.panics && !settings.on_load)
                        .then_some(settings.at),
                    panic_on_load: instance <= settings.panics && settings.on_load,
                }),
            ))
        }),
    });
    (Arc::new(envs), Arc::new(kinds))
}

/// Soccer with `green_0` driven by `green_0` (a slot spec), the rest random, 3 episodes.
fn experiment(
    env: serde_json::Value,
    green_0: serde_json::Value,
    supervision: serde_json::Value,
) -> ExperimentSpec {
    let mut spec = serde_json::json!({
        "name": "faults",
        "episodes": 3,
        "max_steps": 40,
        "seeds": {"plan": "procedural", "base": 7},
        "supervision": supervision,
        "operators": [{"id": "op", "agents": {"*": {"kind": "random"}, "green_0": green_0}}]
    });
    spec["operators"][0]["env"] = env["env"].clone();
    if let Some(settings) = env.get("env_settings") {
        spec["operators"][0]["env_settings"] = settings.clone();
    }
    serde_json::from_value(spec).unwrap()
}

struct Outcome {
    steps: Vec<String>,
    episodes: Vec<String>,
    raw: Vec<mosaic_core::record::EpisodeRecord>,
    result: Result<(), RunError>,
}

async fn run(spec: ExperimentSpec) -> Outcome {
    let (envs, kinds) = registries();
    let runner = Runner::new(spec, RunId::from("r"), envs, kinds);
    let (collected, subscribers) = collector();
    let result = runner
        .run(UnitPlan::All, subscribers, |_| {})
        .await
        .map(|_| ());
    // Let the collector drain its mailbox.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let steps = collected.steps.lock().unwrap().clone();
    let raw = collected.episodes.lock().unwrap().clone();
    Outcome {
        steps: stripped(&steps),
        episodes: stripped(&raw),
        raw,
        result,
    }
}

fn clean() -> ExperimentSpec {
    experiment(
        serde_json::json!({"env": "soccer-2v2"}),
        serde_json::json!({"kind": "random"}),
        serde_json::json!({}),
    )
}

/// The faulty run's records equal the clean run's, up to the names of the stand-ins.
fn assert_same(faulty: &Outcome, clean: &Outcome) {
    assert!(faulty.result.is_ok(), "{:?}", faulty.result);
    let renamed = |lines: &[String]| -> Vec<String> {
        let mut lines: Vec<String> = lines
            .iter()
            .map(|l| {
                l.replace(r#""kind":"flaky""#, r#""kind":"random""#)
                    .replace("flaky-soccer", "soccer-2v2")
            })
            .collect();
        lines.sort();
        lines
    };
    let steps = renamed(&faulty.steps);
    assert_eq!(steps.len(), clean.steps.len());
    if let Some((now, then)) = steps.iter().zip(&clean.steps).find(|(a, b)| a != b) {
        panic!("step records differ from the clean run:\n{now}\n{then}");
    }
    assert!(
        renamed(&faulty.episodes) == clean.episodes,
        "episode records differ from the clean run"
    );
}

#[actix::test]
async fn a_panicking_operator_is_restored_and_the_records_equal_a_clean_run() {
    let clean = run(clean()).await;
    for (key, interval, strategy) in [
        ("op-every-step", 0, "one_for_one"),
        ("op-replay", 3_600_000, "one_for_one"),
        ("op-all", 0, "one_for_all"),
        ("op-rest", 3_600_000, "rest_for_one"),
    ] {
        let faulty = run(experiment(
            serde_json::json!({"env": "soccer-2v2"}),
            serde_json::json!({"kind": "flaky", "key": key, "at": 17, "panics": 2}),
            serde_json::json!({"checkpoint_interval_ms": interval, "strategy": strategy}),
        ))
        .await;
        assert_same(&faulty, &clean);
        let restarts: Vec<_> = faulty.raw.iter().flat_map(|e| e.restarts.clone()).collect();
        assert_eq!(restarts.len(), 2, "{key}: {restarts:?}");
        for restart in &restarts {
            assert!(
                restart.recovered && restart.diverged.is_none(),
                "{key}: {restart:?}"
            );
            assert_eq!(restart.child, "green_0");
            assert_eq!(restart.step_index, 17);
            assert!(
                restart.failure.contains("mailbox closed"),
                "{}",
                restart.failure
            );
        }
        let how = &restarts[0].recovery;
        if interval == 0 {
            assert!(
                how.contains("checkpoint restored, replayed 0 decisions"),
                "{how}"
            );
        } else {
            assert!(
                how.contains("episode begun, replayed 17 decisions"),
                "{how}"
            );
        }
        if strategy == "one_for_all" {
            assert!(
                how.contains("env: snapshot at step 17, replayed 0 steps")
                    && how.contains("blue_1:"),
                "{how}"
            );
        }
    }
}

#[actix::test]
async fn a_panicking_environment_is_rebuilt_from_a_snapshot_or_by_replay() {
    let clean = run(clean()).await;
    for (key, snapshots, interval) in [
        ("env-snap", true, 0),
        ("env-replay", false, 0),
        ("env-old-snap", true, 3_600_000),
    ] {
        let faulty = run(experiment(
            serde_json::json!({"env": "flaky-soccer", "env_settings": {"key": key, "at": 23, "panics": 1, "snapshots": snapshots}}),
            serde_json::json!({"kind": "random"}),
            serde_json::json!({"checkpoint_interval_ms": interval}),
        ))
        .await;
        assert_same(&faulty, &clean);
        let restarts: Vec<_> = faulty.raw.iter().flat_map(|e| e.restarts.clone()).collect();
        assert_eq!(restarts.len(), 1, "{key}: {restarts:?}");
        let how = &restarts[0].recovery;
        let expected = if snapshots && interval == 0 {
            "env: snapshot at step 23, replayed 0 steps"
        } else {
            "env: reset from the seed, replayed 23 steps"
        };
        assert!(how.contains(expected), "{key}: {how}");
        assert!(restarts[0].diverged.is_none());
    }
}

/// A constructor registered by a user that panics is a failure to start, not the end of
/// the session or its lane: tried again within the restart limits, when the session starts
/// its children and when it restarts one.
#[actix::test]
async fn a_panicking_constructor_is_a_start_failure_and_tried_again() {
    let clean = run(clean()).await;
    for (case, env, green_0) in [
        (
            "env at the start",
            serde_json::json!({"key": "ctor-env-start", "at": 0, "panics": 0, "panicking_constructors": [1]}),
            serde_json::json!({"kind": "random"}),
        ),
        (
            "env at a restart",
            serde_json::json!({"key": "ctor-env-restart", "at": 23, "panics": 1, "panicking_constructors": [2]}),
            serde_json::json!({"kind": "random"}),
        ),
        (
            "operator at the start",
            serde_json::json!({"key": "ctor-op-start", "at": 0, "panics": 0}),
            serde_json::json!({"kind": "flaky", "key": "ctor-op-start", "at": 0, "panics": 0, "panicking_constructors": [1]}),
        ),
        (
            "operator at a restart",
            serde_json::json!({"key": "ctor-op-restart", "at": 0, "panics": 0}),
            serde_json::json!({"kind": "flaky", "key": "ctor-op-restart", "at": 17, "panics": 2, "panicking_constructors": [2]}),
        ),
    ] {
        let faulty = run(experiment(
            serde_json::json!({"env": "flaky-soccer", "env_settings": env}),
            green_0,
            serde_json::json!({}),
        ))
        .await;
        assert_same(&faulty, &clean);
        assert!(
            faulty.raw.iter().all(|e| e.error.is_none()),
            "{case}: {:?}",
            faulty.raw
        );
        let restarts: Vec<_> = faulty.raw.iter().flat_map(|e| e.restarts.clone()).collect();
        assert!(restarts.iter().all(|r| r.recovered), "{case}: {restarts:?}");
    }
}

/// The records of a clean run of `runner`'s experiment.
struct Clean {
    steps: Vec<StepRecord>,
    episodes: Vec<EpisodeRecord>,
    checkpoints: Vec<EpisodeCheckpoint>,
}

async fn run_clean(runner: &Runner) -> Clean {
    let (collected, subscribers) = collector();
    runner
        .run(UnitPlan::All, subscribers, |_| {})
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    Clean {
        steps: collected.steps.lock().unwrap().clone(),
        episodes: collected.episodes.lock().unwrap().clone(),
        checkpoints: collected.checkpoints.lock().unwrap().clone(),
    }
}

/// Resumes episode 1 with `runner` from `checkpoint` (and the clean run's steps before
/// it), as `mosaic resume` would; checks that its steps from there on and its roll-up
/// equal the clean run's (`case` names the attempt in failures). Answers the roll-up.
async fn resume_episode_1(
    runner: Runner,
    checkpoint: &EpisodeCheckpoint,
    clean: &Clean,
    case: &str,
) -> Arc<EpisodeRecord> {
    let at = checkpoint.step_index;
    let of_episode = |r: &&StepRecord| r.episode_index == 1;
    let unit = Unit::new("op", 1);
    let point = ResumePoint {
        checkpoint: checkpoint.clone(),
        records: clean
            .steps
            .iter()
            .filter(of_episode)
            .filter(|r| r.step_index < at)
            .cloned()
            .collect(),
    };
    let (after, subscribers) = collector();
    let mut records = Vec::new();
    runner
        .resuming(HashMap::from([(unit.clone(), point)]))
        .unwrap()
        .run(UnitPlan::Only(vec![unit]), subscribers, |r| {
            records.push(Arc::new(r.clone()))
        })
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let expected: Vec<_> = clean
        .steps
        .iter()
        .filter(of_episode)
        .filter(|r| r.step_index >= at)
        .cloned()
        .collect();
    let (now, then) = (stripped(&after.steps.lock().unwrap()), stripped(&expected));
    assert_eq!(now.len(), then.len(), "steps from {at} ({case})");
    if let Some((now, then)) = now.iter().zip(&then).find(|(a, b)| a != b) {
        panic!("resumed at {at} ({case}):\n{now}\n{then}");
    }
    let roll_up = records.remove(0);
    let clean_episode = clean
        .episodes
        .iter()
        .find(|e| e.episode_index == 1)
        .unwrap();
    assert_eq!(
        stripped(&[(*roll_up).clone()]),
        stripped(std::slice::from_ref(clean_episode)),
        "roll-up resumed at {at} ({case})"
    );
    roll_up
}

/// An episode continued from one of its checkpoints, as `mosaic resume` does after the
/// run's process died, ends with the records of the uninterrupted run: the environment
/// restored from its snapshot or replayed through the recorded actions, every operator's
/// state restored.
#[actix::test]
async fn an_episode_resumed_from_any_checkpoint_ends_as_the_uninterrupted_run() {
    for snapshots in [true, false] {
        let key = format!("resume-{snapshots}");
        let spec = experiment(
            serde_json::json!({"env": "flaky-soccer", "env_settings": {"key": key, "at": 0, "panics": 0, "snapshots": snapshots}}),
            serde_json::json!({"kind": "cycling"}),
            serde_json::json!({"checkpoint_interval_ms": 0}),
        );
        let (envs, kinds) = registries();
        let runner = Runner::new(spec, RunId::from("r"), envs, kinds);
        let clean = run_clean(&runner).await;
        let of_episode: Vec<_> = clean
            .checkpoints
            .iter()
            .filter(|c| c.episode_index == 1)
            .collect();
        assert_eq!(
            of_episode.len(),
            40,
            "one per step but the first: {snapshots}"
        );
        assert!(of_episode.iter().all(|c| c.env.is_some() == snapshots));

        for checkpoint in [of_episode[0], of_episode[16], of_episode[39]] {
            let at = checkpoint.step_index;
            let case = format!("snapshots: {snapshots}");
            let resumed = resume_episode_1(runner.clone(), checkpoint, &clean, &case).await;
            let restart = resumed.restarts.last().unwrap();
            let how = if snapshots {
                format!("env snapshot at step {at}, replayed 0 steps")
            } else {
                format!("env reset from the seed, replayed {at} steps")
            };
            assert_eq!(restart.child, "run");
            assert!(restart.recovery.contains(&how), "{}", restart.recovery);
        }
    }
}

/// Children that crash while an episode resumes (the environment during its replay, an
/// operator while loading its state) are restarted as in a step; the episode still ends
/// with the uninterrupted run's records.
#[actix::test]
async fn children_crashing_while_an_episode_resumes_are_restarted() {
    let spec = |key: &str, panics: u32| {
        experiment(
            serde_json::json!({"env": "flaky-soccer", "env_settings": {"key": key, "at": 10, "panics": panics, "snapshots": false}}),
            serde_json::json!({"kind": "flaky", "key": key, "at": 0, "panics": panics, "on_load": true}),
            serde_json::json!({"checkpoint_interval_ms": 0}),
        )
    };
    let (envs, kinds) = registries();
    let clean = Runner::new(
        spec("resume-crash-clean", 0),
        RunId::from("r"),
        envs.clone(),
        kinds.clone(),
    );
    let clean = run_clean(&clean).await;
    let checkpoint = clean
        .checkpoints
        .iter()
        .find(|c| c.episode_index == 1 && c.step_index == 30)
        .expect("a checkpoint at step 30");
    // The first environment panics replaying step 10; the first `flaky` operator panics
    // loading its state.
    let resumed = Runner::new(spec("resume-crash", 1), RunId::from("r"), envs, kinds);
    let record = resume_episode_1(resumed, checkpoint, &clean, "crashing children").await;

    let restarts: Vec<_> = record
        .restarts
        .iter()
        .map(|r| (r.child.as_str(), r.step_index, r.recovered))
        .collect();
    assert_eq!(
        restarts,
        [("env", 30, true), ("green_0", 30, true), ("run", 30, true)],
        "{:#?}",
        record.restarts
    );
    assert!(record.error.is_none(), "{:?}", record.error);
    assert!(record.restarts.iter().all(|r| r.diverged.is_none()));
}

#[actix::test]
async fn past_the_restart_limit_the_episode_fails_and_the_run_continues_or_stops() {
    let always = |key: &str, on: &str| {
        experiment(
            serde_json::json!({"env": "soccer-2v2"}),
            serde_json::json!({"kind": "flaky", "key": key, "at": 5, "panics": 1000}),
            serde_json::json!({"max_restarts": 2, "on_escalation": on}),
        )
    };
    let continued = run(always("esc-continue", "continue")).await;
    assert!(continued.result.is_ok(), "{:?}", continued.result);
    assert_eq!(continued.raw.len(), 3, "every episode is recorded");
    for episode in &continued.raw {
        let error = episode.error.as_deref().unwrap_or_default();
        assert!(
            error.contains("escalated") && error.contains("green_0 failed more than 2 times"),
            "{error}"
        );
        assert!(episode.restarts.iter().any(|r| !r.recovered));
    }
    for episode in &continued.raw {
        // Each episode starts with fresh children and fresh restart windows, so each one
        // runs up to its own failure instead of inheriting the exhausted window.
        assert_eq!(episode.steps, 5, "steps before the failure are kept");
        assert_eq!(
            episode.restarts.len(),
            3,
            "two restarts, then the escalation"
        );
    }

    let stopped = run(always("esc-stop", "stop")).await;
    let error = stopped.result.expect_err("the run stops").to_string();
    assert!(
        error.contains("stopping") && error.contains("episode 0"),
        "{error}"
    );
    assert_eq!(
        stopped.raw.len(),
        1,
        "the failed episode is recorded before stopping"
    );
}

/// An escalation ends its episode only: the next episode starts with fresh children and
/// fresh restart windows, and runs as in a clean run.
#[actix::test]
async fn after_an_escalation_the_next_episodes_start_afresh_and_equal_a_clean_run() {
    let clean = run(clean()).await;
    // Instances 1-3 panic at step 5: the first failure and both restarts of episode 0;
    // the fourth instance, started for episode 1, does not.
    let faulty = run(experiment(
        serde_json::json!({"env": "soccer-2v2"}),
        serde_json::json!({"kind": "flaky", "key": "esc-fresh", "at": 5, "panics": 3}),
        serde_json::json!({"max_restarts": 2}),
    ))
    .await;
    assert!(faulty.result.is_ok(), "{:?}", faulty.result);
    let mut episodes = faulty.raw.clone();
    episodes.sort_by_key(|e| e.episode_index);
    let error = episodes[0].error.as_deref().unwrap_or_default();
    assert!(error.contains("escalated"), "{error}");
    assert_eq!(episodes[0].steps, 5);
    let later = |lines: &[String]| -> Vec<String> {
        lines
            .iter()
            .filter(|l| !l.contains(r#""episode_index":0,"#))
            .map(|l| l.replace(r#""kind":"flaky""#, r#""kind":"random""#))
            .collect()
    };
    assert!(later(&faulty.episodes).len() == 2 && later(&faulty.steps).len() > 2);
    assert_eq!(
        later(&faulty.episodes),
        later(&clean.episodes),
        "episodes after the escalation equal the clean run's"
    );
    assert_eq!(later(&faulty.steps), later(&clean.steps));
}

/// `max_failed_episodes`: once a configuration has failed that many episodes, its other
/// episodes are recorded as not run, while the other configurations run in full.
#[actix::test]
async fn a_configuration_past_max_failed_episodes_stops_and_the_others_run() {
    let mut spec = experiment(
        serde_json::json!({"env": "soccer-2v2"}),
        serde_json::json!({"kind": "flaky", "key": "esc-hopeless", "at": 5, "panics": 1000}),
        serde_json::json!({"max_restarts": 1, "max_failed_episodes": 2}),
    );
    spec.episodes = 5;
    let mut healthy = clean().operators.remove(0);
    healthy.id = "healthy".into();
    spec.operators.push(healthy);
    let outcome = run(spec).await;
    assert!(outcome.result.is_ok(), "{:?}", outcome.result);
    let mut hopeless: Vec<_> = outcome
        .raw
        .iter()
        .filter(|e| e.operator_id == "op")
        .collect();
    hopeless.sort_by_key(|e| e.episode_index);
    assert_eq!(hopeless.len(), 5, "every unit is recorded");
    for episode in &hopeless[..2] {
        let error = episode.error.as_deref().unwrap_or_default();
        assert!(error.contains("escalated") && episode.steps == 5, "{error}");
    }
    for episode in &hopeless[2..] {
        let error = episode.error.as_deref().unwrap_or_default();
        assert!(
            error.contains("not run")
                && error.contains("max_failed_episodes")
                && episode.steps == 0,
            "{error}"
        );
    }
    let healthy: Vec<_> = outcome
        .raw
        .iter()
        .filter(|e| e.operator_id == "healthy")
        .collect();
    assert_eq!(healthy.len(), 5);
    assert!(healthy.iter().all(|e| e.error.is_none() && e.steps > 0));
}

/// An operator, or an environment worker, that never starts: tried again within the
/// restart limit, then that configuration's episodes are recorded as failed while the
/// others run (it is not a configuration error).
#[actix::test]
async fn a_child_that_never_starts_fails_its_episodes_and_the_others_run() {
    for (case, env, green_0) in [
        (
            "operator",
            serde_json::json!({"env": "soccer-2v2"}),
            serde_json::json!({"kind": "flaky", "key": "never", "at": 0, "panics": 0, "never_starts": true}),
        ),
        (
            "environment worker",
            serde_json::json!({"env": "worker", "env_settings": {"command": ["sh", "-c", "exit 3"]}}),
            serde_json::json!({"kind": "random"}),
        ),
    ] {
        let mut spec = experiment(env, green_0, serde_json::json!({"max_restarts": 2}));
        let mut healthy = experiment(
            serde_json::json!({"env": "soccer-2v2"}),
            serde_json::json!({"kind": "random"}),
            serde_json::json!({}),
        )
        .operators
        .remove(0);
        healthy.id = "healthy".into();
        spec.operators.push(healthy);
        let (envs, kinds) = registries();
        let runner = Runner::new(spec.clone(), RunId::from("r"), envs, kinds);
        runner
            .validate()
            .expect("a start failure is not a configuration error");
        let outcome = run(spec).await;
        assert!(outcome.result.is_ok(), "{case}: {:?}", outcome.result);
        let (failed, ran): (Vec<_>, Vec<_>) =
            outcome.raw.iter().partition(|e| e.operator_id == "op");
        assert_eq!((failed.len(), ran.len()), (3, 3), "{case}");
        for episode in failed {
            let error = episode.error.as_deref().unwrap_or_default();
            assert!(
                error.contains("could not start") && error.contains("gave up after 3 attempts"),
                "{case}: {error}"
            );
        }
        assert!(
            ran.iter().all(|e| e.error.is_none() && e.steps > 0),
            "{case}"
        );
    }
}

#[test]
fn start_counter_counts_per_key() {
    assert_eq!(count_start("unit-a"), 1);
    assert_eq!(count_start("unit-a"), 2);
    assert_eq!(count_start("unit-b"), 1);
}
