//! Real third-party environments (Gymnasium MiniGrid, PettingZoo connect four, mpe2
//! simple spread) behind the worker protocol, driven through [`Environment`] by Rust
//! policies: the same seed gives identical transitions, and only legal actions are taken.

// Shared by several test crates; each uses part of it.
use mosaic_test_kit::python;
#[path = "support/registry.rs"]
mod registry;

use mosaic_core::baseline::Random;
use mosaic_core::{
    Action, AgentContext, Environment, ObsRequest, Outcome, Policy, Settings, Stepping, Transition,
};
use std::time::Duration;

fn settings(extra: serde_json::Value) -> Settings {
    let py = python::python_env();
    let mut settings = serde_json::json!({ "python": py.python });
    if let (Some(base), serde_json::Value::Object(extra)) = (settings.as_object_mut(), extra) {
        base.extend(extra);
    }
    match settings {
        serde_json::Value::Object(map) => map,
        _ => unreachable!(),
    }
}

fn make(name: &str, extra: serde_json::Value) -> Box<dyn Environment> {
    registry::external_envs()
        .make(name, &settings(extra))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// One environment step as seen from outside.
#[derive(Debug, PartialEq)]
struct Record {
    acting: Vec<usize>,
    observations: Vec<String>,
    actions: Vec<Option<Action>>,
    transition: Transition,
}

/// Plays one episode (at most `limit` steps) with seeded random policies.
fn play(
    env: &mut dyn Environment,
    seed: u64,
    want: ObsRequest,
    limit: u32,
) -> (Vec<Record>, Option<Vec<Outcome>>) {
    env.reset(seed).unwrap();
    let spec = env.spec().clone();
    let mut policies: Vec<Random> = spec
        .agents
        .iter()
        .enumerate()
        .map(|(i, agent)| {
            let mut p = Random::default();
            p.reset(&AgentContext::new(
                seed,
                i,
                agent.id.clone(),
                spec.action_labels.len(),
            ));
            p
        })
        .collect();
    let mut records = Vec::new();
    let mut out = Transition::default();
    while !env.acting().is_empty() && env.steps() < limit {
        let acting = env.acting();
        let mut actions = vec![None; spec.agents.len()];
        let mut observations = Vec::new();
        for &agent in &acting {
            let obs = env.observe(agent, want);
            assert_eq!(obs.agent, agent);
            assert_eq!(obs.legal.len(), spec.action_labels.len());
            assert!(obs.info.is_none(), "observation error: {:?}", obs.info);
            let action = policies[agent].decide(&obs).action;
            assert!(
                obs.is_legal(action),
                "agent {agent} would take illegal action {action:?}"
            );
            actions[agent] = Some(action);
            observations.push(format!("{:?}|{:?}", obs.symbolic, obs.text));
        }
        env.step(&actions, &mut out).unwrap();
        records.push(Record {
            acting,
            observations,
            actions,
            transition: out.clone(),
        });
    }
    (records, env.outcome())
}

#[test]
fn minigrid_doorkey_is_reproducible_and_legal() {
    let name = "gymnasium:MiniGrid-DoorKey-5x5-v0";
    let mut first = make(name, serde_json::json!({}));
    let spec = first.spec().clone();
    assert_eq!(spec.stepping, Stepping::Single);
    assert_eq!(
        spec.action_labels,
        [
            "left", "right", "forward", "pickup", "drop", "toggle", "done"
        ]
    );
    assert_eq!(spec.symbolic_shape, Some(vec![7, 7, 3]));
    let runs: Vec<_> = [7, 8]
        .iter()
        .map(|seed| play(first.as_mut(), *seed, ObsRequest::SYMBOLIC, 300).0)
        .collect();
    assert!(
        runs[0].len() > 5 && runs[0] != runs[1],
        "different seeds, different episodes"
    );
    let last = runs[0].last().unwrap();
    assert!(last.transition.terminated[0] || last.transition.truncated[0]);
    let mut second = make(name, serde_json::json!({}));
    for (seed, run) in [7, 8].iter().zip(&runs) {
        assert_eq!(
            &play(second.as_mut(), *seed, ObsRequest::SYMBOLIC, 300).0,
            run,
            "seed {seed}"
        );
    }
}

#[test]
fn minigrid_frames_and_text_travel_as_asked() {
    let mut rgb = make(
        "gymnasium:MiniGrid-DoorKey-5x5-v0",
        serde_json::json!({ "frames": "rgb" }),
    );
    let mut png = make(
        "gymnasium:MiniGrid-DoorKey-5x5-v0",
        serde_json::json!({ "frames": "png" }),
    );
    let all = ObsRequest::ALL;
    for env in [&mut rgb, &mut png] {
        env.reset(3).unwrap();
    }
    for step in 0..4 {
        let a = rgb.observe(0, all);
        let b = png.observe(0, all);
        let frame = a.frame.as_deref().expect("frame");
        assert_eq!((frame.width, frame.height), (160, 160));
        assert_eq!(
            a.frame, b.frame,
            "png and rgb decode to the same pixels (step {step})"
        );
        assert!(a.text.as_deref().unwrap().starts_with("mission: "));
        assert_eq!(rgb.render(), png.render());
        let mut out = Transition::default();
        for env in [&mut rgb, &mut png] {
            env.step(&[Some(Action(step % 3))], &mut out).unwrap();
        }
    }
}

#[test]
fn minigrid_checkpoint_and_restore() {
    let mut env = make("gymnasium:MiniGrid-DoorKey-5x5-v0", serde_json::json!({}));
    env.reset(11).unwrap();
    let mut out = Transition::default();
    let actions: Vec<_> = [2, 1, 2, 2, 0, 2, 3, 1, 2, 2]
        .iter()
        .map(|a| Some(Action(*a)))
        .collect();
    for action in &actions[..4] {
        env.step(std::slice::from_ref(action), &mut out).unwrap();
    }
    let snapshot = env.snapshot().expect("gymnasium workers checkpoint");
    let mut go_on = |env: &mut Box<dyn Environment>| {
        actions[4..]
            .iter()
            .map(|action| {
                env.step(std::slice::from_ref(action), &mut out).unwrap();
                (out.clone(), env.observe(0, ObsRequest::SYMBOLIC).symbolic)
            })
            .collect::<Vec<_>>()
    };
    let straight = go_on(&mut env);
    env.restore(&snapshot).unwrap();
    assert_eq!(env.steps(), 4);
    assert_eq!(go_on(&mut env), straight);
    assert!(
        env.restore(&mosaic_core::Snapshot(b"nonsense".to_vec()))
            .is_err()
    );
}

/// One step as a resumed episode must repeat it: who acted, their legal actions, the
/// transition.
type Step = (Vec<usize>, Vec<Vec<bool>>, Transition);

/// Up to `n` steps from where `env` is, each acting agent taking one of its legal actions
/// picked by the step and the agent.
fn go_on(env: &mut dyn Environment, n: usize) -> Vec<Step> {
    let mut out = Transition::default();
    let mut steps = Vec::new();
    for i in 0..n {
        let acting = env.acting();
        if acting.is_empty() {
            break;
        }
        let mut actions = vec![None; env.spec().agents.len()];
        let mut masks = Vec::new();
        for &agent in &acting {
            let obs = env.observe(agent, ObsRequest::SYMBOLIC);
            let legal: Vec<u32> = (0..obs.legal.len() as u32)
                .filter(|&a| obs.is_legal(Action(a)))
                .collect();
            assert!(!legal.is_empty(), "agent {agent} has no legal action");
            actions[agent] = Some(Action(legal[(3 * i + agent) % legal.len()]));
            masks.push(obs.legal);
        }
        env.step(&actions, &mut out).unwrap();
        steps.push((acting, masks, out.clone()));
    }
    steps
}

#[test]
fn pettingzoo_episodes_resume_from_a_checkpoint_in_a_new_worker() {
    for name in [
        "pettingzoo:classic/chess_v6",
        "pettingzoo:classic/connect_four_v3",
        "pettingzoo:classic/tictactoe_v3",
        "pettingzoo:mpe2/simple_spread_v3",
    ] {
        let mut first = make(name, serde_json::json!({}));
        first.reset(5).unwrap();
        go_on(first.as_mut(), 3);
        let snapshot = first
            .snapshot()
            .unwrap_or_else(|| panic!("{name}: no checkpoint"));
        let straight = go_on(first.as_mut(), 5);
        assert_eq!(straight.len(), 5, "{name}");
        // A restarted worker: a new process, given the checkpoint.
        let mut second = make(name, serde_json::json!({}));
        second
            .restore(&snapshot)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(second.steps(), 3, "{name}");
        assert_eq!(go_on(second.as_mut(), 5), straight, "{name}");
    }
}

#[test]
fn connect_four_is_reproducible_legal_and_has_outcomes() {
    let name = "pettingzoo:classic/connect_four_v3";
    let mut env = make(name, serde_json::json!({}));
    assert_eq!(env.spec().stepping, Stepping::Sequential);
    assert_eq!(env.spec().agents.len(), 2);
    let runs: Vec<_> = (0..3)
        .map(|seed| play(env.as_mut(), seed, ObsRequest::SYMBOLIC, 100))
        .collect();
    for (records, outcome) in &runs {
        assert!(records.iter().all(|r| r.acting.len() == 1));
        let outcome = outcome.as_ref().expect("connect four has a result");
        assert!(matches!(
            outcome.as_slice(),
            [Outcome::Win, Outcome::Loss]
                | [Outcome::Loss, Outcome::Win]
                | [Outcome::Draw, Outcome::Draw]
        ));
    }
    let mut again = make(name, serde_json::json!({}));
    for (seed, run) in runs.iter().enumerate() {
        assert_eq!(
            &play(again.as_mut(), seed as u64, ObsRequest::SYMBOLIC, 100),
            run,
            "seed {seed}"
        );
    }
}

#[test]
fn mpe2_simple_spread_parallel_is_reproducible() {
    let name = "pettingzoo:mpe2/simple_spread_v3";
    let mut env = make(name, serde_json::json!({ "kwargs": { "max_cycles": 20 } }));
    assert_eq!(env.spec().stepping, Stepping::Simultaneous);
    assert_eq!(env.spec().agents.len(), 3);
    let (run, _) = play(env.as_mut(), 5, ObsRequest::SYMBOLIC, 100);
    assert_eq!(run.len(), 20);
    assert!(run.iter().all(|r| r.acting == [0, 1, 2]));
    assert!(run.last().unwrap().transition.truncated.iter().all(|t| *t));
    let mut again = make(
        name,
        serde_json::json!({ "kwargs": { "max_cycles": 20 }, "api": "parallel" }),
    );
    assert_eq!(play(again.as_mut(), 5, ObsRequest::SYMBOLIC, 100).0, run);
    assert_ne!(play(again.as_mut(), 6, ObsRequest::SYMBOLIC, 100).0, run);
}

#[test]
fn the_same_worker_over_unix_and_tcp_sockets() {
    let py = python::python_env();
    let dir = tempfile::tempdir().unwrap();
    let free_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addresses = [
        format!("unix://{}", dir.path().join("env.sock").display()),
        format!("tcp://127.0.0.1:{free_port}"),
    ];
    let mut stdio = make("gymnasium:MiniGrid-DoorKey-5x5-v0", serde_json::json!({}));
    let reference = play(stdio.as_mut(), 21, ObsRequest::SYMBOLIC, 40).0;
    for address in addresses {
        let argv =
            py.mosaic_worker(&["gymnasium", "MiniGrid-DoorKey-5x5-v0", "--listen", &address]);
        let mut server = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            // Started by hand, not by mosaic: it needs the package on its path itself.
            .env("PYTHONPATH", mosaic_external::embedded::install().unwrap())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut env = make(
            "worker",
            serde_json::json!({ "connect": address, "start_timeout_ms": 30000 }),
        );
        assert_eq!(
            play(env.as_mut(), 21, ObsRequest::SYMBOLIC, 40).0,
            reference,
            "{address}"
        );
        drop(env);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while server.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let status = server.try_wait().unwrap();
        let _ = server.kill();
        assert!(
            status.is_some_and(|s| s.success()),
            "worker at {address} did not stop cleanly: {status:?}"
        );
    }
}
