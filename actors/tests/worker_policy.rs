//! Policy workers in real child processes, driven through the `worker` decider kind in an
//! actix system: PettingZoo chess between a Rust random policy and a Python policy worker
//! (reproducible, only legal moves), MOSAIC action-selector workers, and every kind of
//! misbehaviour as a typed `DeciderError`.

// Shared with the external workers' tests; each uses part of it.
use mosaic_test_kit::python;
use mosaic_test_kit::python::ListeningWorker;

use mosaic_actors::decider::SessionResources;
use mosaic_actors::decider::{DeciderHandle, DeciderRegistry, SpawnContext};
use mosaic_actors::{BeginEpisode, Decide, DeciderError, LoadState, SaveState, StateError, worker};
use mosaic_core::baseline::Random;
use mosaic_core::{
    Action, AgentContext, AgentSpec, EnvSpec, Environment, ObsRequest, Observation, Paradigm,
    Policy, Settings, SlotSpec, Stepping, Transition,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn spawn_worker(
    spec: &Arc<EnvSpec>,
    agent: usize,
    settings: serde_json::Value,
) -> Result<DeciderHandle, String> {
    let mut registry = DeciderRegistry::baselines();
    worker::register(&mut registry);
    let serde_json::Value::Object(settings) = settings else {
        unreachable!("settings are an object")
    };
    let slot = SlotSpec {
        kind: "worker".into(),
        settings,
    };
    registry
        .spawn(&SpawnContext {
            env_name: &spec.name,
            env_settings: &Settings::new(),
            spec,
            agent,
            slot: &slot,
            scripted: None,
            session: &SessionResources::default(),
        })
        .map_err(|e| e.to_string())
}

fn python_policy(spec: &Arc<EnvSpec>, agent: usize) -> DeciderHandle {
    let py = python::python_env();
    spawn_worker(
        spec,
        agent,
        serde_json::json!({ "command": py.mosaic_worker(&["policy", "random"]) }),
    )
    .unwrap()
}

/// One chess game (at most `plies`): player_0 is Rust's random policy, player_1 the
/// Python worker. Returns every (agent, action, rewards) in order.
async fn chess_game(
    env: &mut dyn Environment,
    worker: &DeciderHandle,
    seed: u64,
    plies: u32,
) -> Vec<(usize, u32, Vec<f32>)> {
    let spec = Arc::new(env.spec().clone());
    env.reset(seed).unwrap();
    let ctx = |agent: usize| {
        AgentContext::new(
            seed,
            agent,
            spec.agents[agent].id.clone(),
            spec.action_labels.len(),
        )
    };
    let mut random = Random::default();
    random.reset(&ctx(0));
    worker
        .begin
        .send(BeginEpisode {
            ctx: ctx(1),
            spec: spec.clone(),
        })
        .await
        .unwrap()
        .unwrap();
    let mut out = Transition::default();
    let mut moves = Vec::new();
    while let [agent] = env.acting()[..] {
        if env.steps() >= plies {
            break;
        }
        let obs = env.observe(agent, worker.wants);
        let action = if agent == 0 {
            random.decide(&obs).action
        } else {
            let decide = Decide {
                obs: Arc::new(obs.clone()),
                step: env.steps(),
                deadline: Some(Instant::now() + Duration::from_secs(30)),
            };
            worker.decide.send(decide).await.unwrap().unwrap().action
        };
        assert!(
            obs.is_legal(action),
            "agent {agent} chose illegal move {action:?}"
        );
        let mut actions = vec![None, None];
        actions[agent] = Some(action);
        env.step(&actions, &mut out).unwrap();
        moves.push((agent, action.0, out.rewards.clone()));
    }
    moves
}

#[test]
fn chess_random_vs_python_policy_worker_is_reproducible() {
    let py = python::python_env();
    let settings = serde_json::json!({ "python": py.python });
    let serde_json::Value::Object(settings) = settings else {
        unreachable!()
    };
    actix_rt::System::new().block_on(async move {
        let mut games = Vec::new();
        for _ in 0..2 {
            let mut env = mosaic_adapters::native_envs()
                .make("pettingzoo:classic/chess_v6", &settings)
                .unwrap();
            let spec = Arc::new(env.spec().clone());
            assert_eq!(spec.stepping, Stepping::Sequential);
            let worker = python_policy(&spec, 1);
            assert_eq!(worker.paradigm, Paradigm::Random);
            let mut per_seed = Vec::new();
            for seed in [3, 4] {
                per_seed.push(chess_game(env.as_mut(), &worker, seed, 120).await);
            }
            games.push(per_seed);
        }
        assert_eq!(games[0], games[1], "same seeds, same games");
        assert_ne!(games[0][0], games[0][1], "different seeds, different games");
        assert!(games[0][0].len() > 20);
        assert!(games[0][0].iter().any(|(agent, ..)| *agent == 1));
    });
}

#[test]
fn a_listening_policy_worker_serves_two_deciders_at_once_and_plays_like_a_started_one() {
    let py = python::python_env();
    let settings = serde_json::json!({ "python": py.python });
    let serde_json::Value::Object(settings) = settings else {
        unreachable!()
    };
    let dir = tempfile::tempdir().unwrap();
    let token = "tok-policy-4e1d-never-shown";
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let mut listening = ListeningWorker::start(
        &["policy", "random", "--connections", "2"],
        Some(token),
        dir.path(),
    );
    actix_rt::System::new().block_on(async {
        let mut env = mosaic_adapters::native_envs()
            .make("pettingzoo:classic/chess_v6", &settings)
            .unwrap();
        let spec = Arc::new(env.spec().clone());
        let started = python_policy(&spec, 1);
        let mut expected = Vec::new();
        for seed in [3, 4] {
            expected.push(chess_game(env.as_mut(), &started, seed, 60).await);
        }
        // Both connections are open before either plays: the worker serves them at once.
        let first = connect_to(&spec, 1, &listening.address, &token_file).unwrap();
        let second = connect_to(&spec, 1, &listening.address, &token_file).unwrap();
        assert_eq!(first.paradigm, Paradigm::Random);
        let second_game = chess_game(env.as_mut(), &second, 4, 60).await;
        let first_game = chess_game(env.as_mut(), &first, 3, 60).await;
        assert_eq!(
            [first_game, second_game],
            [expected[0].clone(), expected[1].clone()],
            "the same seeds give the same games over a socket"
        );
    });
    // The system is gone, and the deciders with it: their connections closed, the worker
    // has served the two it was started for.
    assert!(
        listening.wait().is_some_and(|status| status.success()),
        "{}",
        listening.log()
    );
    assert!(!listening.log().contains(token));

    // A wrong token and a slot that names both ways of reaching a worker are refused with
    // errors naming what is wrong.
    let refused = ListeningWorker::start(&["policy", "random"], Some(token), dir.path());
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "guess").unwrap();
    let spec = toy_spec();
    let err = actix_rt::System::new()
        .block_on(async { connect_to(&spec, 0, &refused.address, &wrong) })
        .unwrap_err();
    assert!(
        err.contains(&refused.address) && err.contains("the token does not match"),
        "{err}"
    );
    assert!(
        err.starts_with("connect: toy:solo: "),
        "the error names the setting and the agent: {err}"
    );
    let both = spawn_worker(
        &spec,
        0,
        serde_json::json!({ "command": ["python3"], "connect": refused.address }),
    )
    .unwrap_err();
    assert!(
        both.starts_with("connect: ") && both.contains("not both"),
        "{both}"
    );
}

/// A `worker` slot of `agent` connecting to `address` with the token in `token_file`.
fn connect_to(
    spec: &Arc<EnvSpec>,
    agent: usize,
    address: &str,
    token_file: &std::path::Path,
) -> Result<DeciderHandle, String> {
    spawn_worker(
        spec,
        agent,
        serde_json::json!({
            "connect": address,
            "token_file": token_file,
            "start_timeout_ms": 30000,
        }),
    )
}

fn toy_spec() -> Arc<EnvSpec> {
    Arc::new(EnvSpec {
        name: "toy".into(),
        agents: vec![AgentSpec {
            id: "solo".into(),
            team: None,
            role: None,
        }],
        action_labels: vec!["a".into(), "b".into(), "c".into()],
        default_action: Action(0),
        stepping: Stepping::Single,
        max_steps: None,
        symbolic_shape: None,
        offers: ObsRequest::MASK_ONLY,
        descriptions: Default::default(),
    })
}

/// Spawns `faulty.py policy MODE`, begins an episode and asks for one decision: its action,
/// or the error of a live worker that failed the decision (`Failed`), or of a worker that
/// must be replaced (`Crashed`).
async fn faulty_decision(mode: &str, deadline: Duration) -> Result<Action, DeciderError> {
    let py = python::python_env();
    let spec = toy_spec();
    let worker = spawn_worker(
        &spec,
        0,
        serde_json::json!({
            "command": py.worker("faulty.py", &["policy", mode]),
            "timeout_ms": 1500,
            "heartbeat_ms": 200,
            "heartbeat_timeout_ms": 600,
            "grace_ms": 300,
        }),
    )
    .map_err(DeciderError::failed)?;
    let ctx = AgentContext::new(1, 0, "solo".into(), 3);
    worker
        .begin
        .send(BeginEpisode { ctx, spec })
        .await
        .map_err(DeciderError::Gone)??;
    let obs = Observation::with_mask(0, vec![true, true, false]);
    let started = Instant::now();
    let decision = worker
        .decide
        .send(Decide {
            obs: Arc::new(obs),
            step: 0,
            deadline: Some(Instant::now() + deadline),
        })
        .await
        .map_err(DeciderError::Gone)?;
    assert!(
        started.elapsed() < deadline + Duration::from_secs(2),
        "{mode}: {:?}",
        started.elapsed()
    );
    decision.map(|d| d.action)
}

/// The message of a `Failed` error (a live worker's failed decision).
fn failed(result: Result<Action, DeciderError>) -> String {
    match result {
        Err(error @ (DeciderError::Worker { .. } | DeciderError::Failed(_)))
            if !error.needs_restart() =>
        {
            error.to_string()
        }
        other => panic!("not a failed decision: {other:?}"),
    }
}

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    actix_rt::System::new().block_on(future)
}

#[test]
fn misbehaving_policy_workers_give_typed_errors() {
    let long = Duration::from_secs(20);
    // (mode, message, whether the worker must be replaced)
    let cases: &[(&str, &str, bool)] = &[
        ("garbage", "not JSON", false),
        (
            "non_object",
            "a JSON array where an object was expected",
            false,
        ),
        ("huge_line", "longer than the limit of 16777216 bytes", true),
        ("silent", "no `decide` reply within", false),
        ("silent_heartbeat", "silent for 600 ms", true),
        (
            "out_of_order",
            "out of order: awaited the reply to request 2, got `decision` for request 9",
            true,
        ),
        ("illegal_action", "illegal action 2 (legal: [0, 1])", false),
        ("stdout_closed", "closed its output", true),
    ];
    for (mode, expected, crashed) in cases {
        let err = run(faulty_decision(mode, long)).expect_err(mode);
        let DeciderError::Worker { worker, source } = &err else {
            panic!("{mode}: {err:?}")
        };
        assert_eq!(err.needs_restart(), *crashed, "{mode}: {err:?}");
        assert!(source.to_string().contains(expected), "{mode}: {source}");
        assert_eq!(worker, "toy:solo", "{mode}: the error names the worker");
    }
}

#[test]
fn a_killed_policy_worker_is_a_crash_naming_the_signal() {
    let py = python::python_env();
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let settings = serde_json::json!({
        "command": py.worker("faulty.py", &["policy", "silent"]),
        "env": { "FAULTY_PID_FILE": pid_file.display().to_string() },
    });
    let err = run(async {
        let spec = toy_spec();
        let worker = spawn_worker(&spec, 0, settings).unwrap();
        let ctx = AgentContext::new(1, 0, "solo".into(), 3);
        worker
            .begin
            .send(BeginEpisode { ctx, spec })
            .await
            .unwrap()
            .unwrap();
        let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().parse().unwrap();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let obs = Observation::with_mask(0, vec![true, true, false]);
        worker
            .decide
            .send(Decide {
                obs: Arc::new(obs),
                step: 0,
                deadline: None,
            })
            .await
            .unwrap()
    })
    .unwrap_err();
    assert!(err.needs_restart(), "not a crash: {err:?}");
    assert!(err.to_string().contains("SIGKILL"), "{err}");
}

#[test]
fn the_session_deadline_bounds_a_decision() {
    let started = Instant::now();
    let err = failed(run(faulty_decision("silent", Duration::from_millis(300))));
    assert!(
        err.contains("no `decide` reply within 300 ms") || err.contains("within 299 ms"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn handshake_failures_are_spawn_errors() {
    let err = failed(run(faulty_decision(
        "exit_in_handshake",
        Duration::from_secs(5),
    )));
    assert!(err.contains("middle of a frame"), "{err}");
    let err = failed(run(faulty_decision("wrong_major", Duration::from_secs(5))));
    assert!(
        err.contains("mosaic/2.0") && err.contains("mosaic/1"),
        "{err}"
    );
    let err = run(async {
        spawn_worker(
            &toy_spec(),
            0,
            serde_json::json!({ "command": ["/no/such/policy"] }),
        )
        .map(|_| ())
    })
    .unwrap_err();
    assert!(err.contains("/no/such/policy"), "{err}");
    let err = run(async {
        spawn_worker(&toy_spec(), 0, serde_json::json!({ "comand": ["x"] })).map(|_| ())
    })
    .unwrap_err();
    assert!(err.contains("comand"), "{err}");
    let err = run(async {
        spawn_worker(
            &toy_spec(),
            0,
            serde_json::json!({ "command": ["x"], "heartbeat_ms": 1000, "heartbeat_timeout_ms": 1500 }),
        )
        .map(|_| ())
    })
    .unwrap_err();
    assert!(err.contains("heartbeat_timeout_ms = 1500"), "{err}");
}

#[test]
fn unknown_message_types_are_skipped() {
    let decision = run(faulty_decision(
        "unknown_type_then_ok",
        Duration::from_secs(20),
    ));
    assert!(matches!(decision, Ok(Action(0))), "{decision:?}");
}

async fn begin(worker: &DeciderHandle, spec: &Arc<EnvSpec>, seed: u64) {
    let ctx = AgentContext::new(seed, 0, spec.agents[0].id.clone(), spec.action_labels.len());
    worker
        .begin
        .send(BeginEpisode {
            ctx,
            spec: spec.clone(),
        })
        .await
        .unwrap()
        .unwrap();
}

/// `n` decisions with every action legal, each with `deadline` (none when `None`).
async fn decisions(
    worker: &DeciderHandle,
    n: u32,
    deadline: Option<Duration>,
) -> Vec<Result<Action, DeciderError>> {
    let mut out = Vec::new();
    for step in 0..n {
        let decide = Decide {
            obs: Arc::new(Observation::with_mask(0, vec![true; 3])),
            step,
            deadline: deadline.map(|d| Instant::now() + d),
        };
        out.push(worker.decide.send(decide).await.unwrap().map(|d| d.action));
    }
    out
}

fn actions(results: Vec<Result<Action, DeciderError>>) -> Vec<Action> {
    results.into_iter().map(|r| r.unwrap()).collect()
}

/// Fault recovery of a policy worker: a checkpoint taken after some decisions, loaded into
/// a freshly started worker after `BeginEpisode` of the same episode, makes the fresh
/// worker continue exactly as the original does.
#[test]
fn a_restarted_python_policy_continues_from_its_checkpoint() {
    run(async {
        let spec = toy_spec();
        let original = python_policy(&spec, 0);
        let state = original
            .state
            .clone()
            .expect("policy workers take checkpoints");
        begin(&original, &spec, 11).await;
        let before = actions(decisions(&original, 7, None).await);
        let saved = state
            .save
            .send(SaveState)
            .await
            .unwrap()
            .unwrap()
            .expect("the Python random policy saves its RNG");
        let after = actions(decisions(&original, 40, None).await);

        let fresh = python_policy(&spec, 0);
        begin(&fresh, &spec, 11).await;
        let fresh_state = fresh.state.clone().unwrap();
        fresh_state
            .load
            .send(LoadState(saved.clone()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(actions(decisions(&fresh, 40, None).await), after);

        // Without the checkpoint a fresh worker starts the episode over instead.
        let unrestored = python_policy(&spec, 0);
        begin(&unrestored, &spec, 11).await;
        let from_start = actions(decisions(&unrestored, 40, None).await);
        assert_eq!(from_start[..7], before[..]);
        assert_ne!(from_start, after, "the checkpoint is not the episode start");

        // A state of another episode, or not a state at all, is refused with a reason.
        begin(&fresh, &spec, 12).await;
        let err = fresh_state
            .load
            .send(LoadState(saved))
            .await
            .unwrap()
            .unwrap_err();
        assert!(
            matches!(&err, DeciderError::WorkerState { source, .. } if source.to_string().contains("seed 11")),
            "{err}"
        );
        let err = fresh_state
            .load
            .send(LoadState(serde_json::json!({ "rng": 1 })))
            .await
            .unwrap()
            .unwrap_err();
        assert!(
            matches!(&err, DeciderError::State(StateError::NotWorkerState { worker }) if worker == "toy:solo"),
            "{err}"
        );
        let err = fresh_state
            .load
            .send(LoadState(serde_json::json!("bm90IGEgcGlja2xl")))
            .await
            .unwrap()
            .unwrap_err();
        assert!(
            matches!(&err, DeciderError::WorkerState { source, .. } if source.to_string().contains("not a saved policy state")),
            "{err}"
        );
        // The worker is still usable after refusing them.
        assert_eq!(decisions(&fresh, 3, None).await.len(), 3);
    });
}

/// Workers without the `checkpoint` capability answer `None`: recovery replays instead.
#[test]
fn workers_without_checkpoints_save_nothing() {
    let py = python::python_env();
    run(async move {
        let spec = toy_spec();
        let mosaic_style = spawn_worker(
            &spec,
            0,
            serde_json::json!({ "command": py.worker("mosaic_style.py", &[]) }),
        )
        .unwrap();
        let unknown = spawn_worker(
            &spec,
            0,
            serde_json::json!({ "command": py.worker("faulty.py", &["policy", "unknown_type_then_ok"]) }),
        )
        .unwrap();
        for worker in [mosaic_style, unknown] {
            begin(&worker, &spec, 3).await;
            let state = worker.state.clone().unwrap();
            assert_eq!(state.save.send(SaveState).await.unwrap().unwrap(), None);
            let err = state
                .load
                .send(LoadState(serde_json::json!("AAAA")))
                .await
                .unwrap()
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    DeciderError::State(_) | DeciderError::WorkerState { .. }
                ) && err.to_string().contains("checkpoint"),
                "{err}"
            );
        }
    });
}

/// A decision past the session's deadline fails (the default action is taken), but the
/// worker is alive and heartbeating: it is not declared crashed, and its next decision
/// arrives once it is done, its late reply skipped.
#[test]
fn a_late_decision_does_not_kill_a_heartbeating_worker() {
    let py = python::python_env();
    run(async move {
        let spec = toy_spec();
        let worker = spawn_worker(
            &spec,
            0,
            serde_json::json!({
                "command": py.worker("slow_policy.py", &["1.5", "0"]),
                "heartbeat_ms": 100,
                "heartbeat_timeout_ms": 400,
            }),
        )
        .unwrap();
        begin(&worker, &spec, 1).await;
        let late = decisions(&worker, 1, Some(Duration::from_millis(300))).await;
        let err = late.into_iter().next().unwrap().unwrap_err();
        assert!(
            matches!(&err, DeciderError::Worker { source, .. } if !source.is_fatal() && source.to_string().contains("no `decide` reply within")),
            "{err:?}"
        );
        // The worker needs about 1.2 s more, three times its silence limit: only its
        // heartbeats keep it alive.
        let started = Instant::now();
        let next = decisions(&worker, 2, Some(Duration::from_secs(10))).await;
        assert!(
            started.elapsed() > Duration::from_millis(800),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(actions(next), [Action(1), Action(2)], "decisions 1 and 2");
    });
}

/// `kill -9` of a worker with a decision pending fails the decision at once as a crash,
/// not after a deadline or a silence limit, even when a process the worker started keeps
/// its output open (so its output never ends).
#[test]
fn a_killed_worker_fails_its_pending_decision_at_once() {
    let py = python::python_env();
    for mode in ["silent", "silent_holding_output"] {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let settings = serde_json::json!({
            "command": py.worker("faulty.py", &["policy", mode]),
            "env": { "FAULTY_PID_FILE": pid_file.display().to_string() },
            "timeout_ms": 30_000,
        });
        let (err, since_kill) = run(async move {
            let spec = toy_spec();
            let worker = spawn_worker(&spec, 0, settings).unwrap();
            begin(&worker, &spec, 1).await;
            let pending = worker.decide.send(Decide {
                obs: Arc::new(Observation::with_mask(0, vec![true; 3])),
                step: 0,
                deadline: Some(Instant::now() + Duration::from_secs(30)),
            });
            let killer = async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                let pid = std::fs::read_to_string(&pid_file).unwrap();
                let status = std::process::Command::new("kill")
                    .args(["-9", pid.trim()])
                    .status()
                    .unwrap();
                assert!(status.success());
                Instant::now()
            };
            let (result, killed_at) = tokio::join!(pending, killer);
            (result.unwrap().unwrap_err(), killed_at.elapsed())
        });
        assert!(
            matches!(&err, DeciderError::Worker { source, .. } if source.is_fatal() && source.to_string().contains("signal: 9")),
            "{mode}: {err:?}"
        );
        eprintln!("{mode}: the pending decision failed {since_kill:?} after kill -9");
        assert!(
            since_kill < Duration::from_millis(300),
            "{mode}: {since_kill:?}"
        );
    }
}

#[test]
fn mosaic_action_selector_workers_are_driven_unmodified() {
    let py = python::python_env();
    run(async move {
        let spec = toy_spec();
        let worker = spawn_worker(
            &spec,
            0,
            serde_json::json!({ "command": py.worker("mosaic_style.py", &[]) }),
        )
        .unwrap();
        assert_eq!(worker.paradigm, Paradigm::External);
        let ctx = AgentContext::new(9, 0, "solo".into(), 3);
        worker
            .begin
            .send(BeginEpisode { ctx, spec })
            .await
            .unwrap()
            .unwrap();
        for step in 0..20 {
            let mut obs = Observation::with_mask(0, vec![false, true, true]);
            obs.text = Some(format!("step {step}"));
            let decision = worker
                .decide
                .send(Decide {
                    obs: Arc::new(obs),
                    step,
                    deadline: None,
                })
                .await
                .unwrap()
                .unwrap();
            assert!(decision.action == Action(1) || decision.action == Action(2));
        }
    });
}

/// The JavaScript worker printed in docs/protocol.md, run with Node.js: the specification
/// is enough to write a working worker in another language.
#[test]
fn the_javascript_worker_from_the_protocol_docs_works() {
    let docs = std::fs::read_to_string(
        mosaic_test_kit::setup::repo_root()
            .join("docs")
            .join("protocol.md"),
    )
    .unwrap();
    let start = docs
        .find("```js\n")
        .expect("a js block in docs/protocol.md")
        + "```js\n".len();
    let end = start + docs[start..].find("```").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("random_policy.js");
    std::fs::write(&script, &docs[start..end]).unwrap();
    let command = serde_json::json!(["node", script.display().to_string()]);
    let (first, second) = run(async move {
        let spec = toy_spec();
        let worker = spawn_worker(&spec, 0, serde_json::json!({ "command": command })).unwrap();
        assert_eq!(worker.paradigm, Paradigm::Random);
        let mut runs = Vec::new();
        for _ in 0..2 {
            let ctx = AgentContext::new(5, 0, "solo".into(), 3);
            worker
                .begin
                .send(BeginEpisode {
                    ctx,
                    spec: spec.clone(),
                })
                .await
                .unwrap()
                .unwrap();
            let mut actions = Vec::new();
            for step in 0..30 {
                let obs = Arc::new(Observation::with_mask(0, vec![true, false, true]));
                let decide = Decide {
                    obs,
                    step,
                    deadline: None,
                };
                actions.push(worker.decide.send(decide).await.unwrap().unwrap().action);
            }
            runs.push(actions);
        }
        (runs.remove(0), runs.remove(0))
    });
    assert_eq!(first, second, "seeded by init_agent");
    assert!(first.iter().all(|a| *a == Action(0) || *a == Action(2)));
    assert!(first.contains(&Action(0)) && first.contains(&Action(2)));
}
