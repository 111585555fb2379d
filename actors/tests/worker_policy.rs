//! Policy workers in real child processes, driven through the `worker` operator kind in an
//! actix system: PettingZoo chess between a Rust random policy and a Python policy worker
//! (reproducible, only legal moves), MOSAIC action-selector workers, and every kind of
//! misbehaviour as a typed `OperatorError`.

// Shared with the adapters' tests; each uses part of it.
#[allow(dead_code)]
#[path = "../../adapters/tests/support/python.rs"]
mod python;

use mosaic_actors::operator::SessionResources;
use mosaic_actors::operator::{OperatorHandle, OperatorRegistry, SpawnContext};
use mosaic_actors::{BeginEpisode, Decide, OperatorError, worker};
use mosaic_adapters::EnvRegistry;
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
) -> Result<OperatorHandle, String> {
    let mut registry = OperatorRegistry::baselines();
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

fn python_policy(spec: &Arc<EnvSpec>, agent: usize) -> OperatorHandle {
    let py = python::python_env();
    spawn_worker(
        spec,
        agent,
        serde_json::json!({
            "command": py.mosaic_worker(&["policy", "random"]),
            "env": py.env_vars(),
        }),
    )
    .unwrap()
}

/// One chess game (at most `plies`): player_0 is Rust's random policy, player_1 the
/// Python worker. Returns every (agent, action, rewards) in order.
async fn chess_game(
    env: &mut dyn Environment,
    worker: &OperatorHandle,
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
    let settings = serde_json::json!({ "python": py.python, "env": py.env_vars() });
    let serde_json::Value::Object(settings) = settings else {
        unreachable!()
    };
    actix_rt::System::new().block_on(async move {
        let mut games = Vec::new();
        for _ in 0..2 {
            let mut env = EnvRegistry::native()
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

fn toy_spec() -> Arc<EnvSpec> {
    Arc::new(EnvSpec {
        name: "toy".into(),
        agents: vec![AgentSpec {
            id: "solo".into(),
            team: None,
        }],
        action_labels: vec!["a".into(), "b".into(), "c".into()],
        default_action: Action(0),
        stepping: Stepping::Single,
        max_steps: None,
        symbolic_shape: None,
        offers: ObsRequest::MASK_ONLY,
    })
}

/// Spawns `faulty.py policy MODE`, begins an episode and asks for one decision.
async fn faulty_decision(mode: &str, deadline: Duration) -> Result<Action, String> {
    let py = python::python_env();
    let spec = toy_spec();
    let worker = spawn_worker(
        &spec,
        0,
        serde_json::json!({
            "command": py.worker("faulty.py", &["policy", mode]),
            "timeout_ms": 1500,
            "heartbeat_ms": 200,
            "grace_ms": 300,
        }),
    )?;
    let ctx = AgentContext::new(1, 0, "solo".into(), 3);
    worker
        .begin
        .send(BeginEpisode { ctx, spec })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
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
        .map_err(|e| e.to_string())?;
    assert!(
        started.elapsed() < deadline + Duration::from_secs(2),
        "{mode}: {:?}",
        started.elapsed()
    );
    match decision {
        Ok(decision) => Ok(decision.action),
        // A broken or silent worker is `Crashed` (to be restarted), a bad answer `Failed`.
        Err(OperatorError::Failed(why) | OperatorError::Crashed(why)) => Err(why),
        Err(other) => panic!("{mode}: not a Failed or Crashed error: {other}"),
    }
}

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    actix_rt::System::new().block_on(future)
}

#[test]
fn misbehaving_policy_workers_give_typed_errors() {
    let long = Duration::from_secs(20);
    let cases: &[(&str, Duration, &str)] = &[
        ("garbage", long, "not JSON"),
        (
            "non_object",
            long,
            "a JSON array where an object was expected",
        ),
        ("huge_line", long, "longer than the limit of 16777216 bytes"),
        ("silent", long, "no `decide` reply within"),
        ("silent_heartbeat", long, "silent for 600 ms"),
        (
            "out_of_order",
            long,
            "out of order: awaited the reply to request 2, got `decision` for request 9",
        ),
        ("illegal_action", long, "illegal action 2 (legal: [0, 1])"),
        ("stdout_closed", long, "closed its output"),
    ];
    for (mode, deadline, expected) in cases {
        let err = run(faulty_decision(mode, *deadline)).expect_err(mode);
        assert!(err.contains(expected), "{mode}: {err}");
        assert!(
            err.starts_with("toy:solo: "),
            "{mode}: the error names the worker: {err}"
        );
    }
}

#[test]
fn the_session_deadline_bounds_a_decision() {
    let started = Instant::now();
    let err = run(faulty_decision("silent", Duration::from_millis(300))).unwrap_err();
    assert!(
        err.contains("no `decide` reply within 300 ms") || err.contains("within 299 ms"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn handshake_failures_are_spawn_errors() {
    let err = run(faulty_decision("exit_in_handshake", Duration::from_secs(5))).unwrap_err();
    assert!(err.contains("middle of a frame"), "{err}");
    let err = run(faulty_decision("wrong_major", Duration::from_secs(5))).unwrap_err();
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
}

#[test]
fn unknown_message_types_are_skipped() {
    assert_eq!(
        run(faulty_decision(
            "unknown_type_then_ok",
            Duration::from_secs(20)
        )),
        Ok(Action(0))
    );
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
    let docs =
        std::fs::read_to_string(python::repo_root().join("docs").join("protocol.md")).unwrap();
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
