//! Environment workers that misbehave (real child processes): every fault is a clear, typed
//! error naming what went wrong; nothing panics, and the worker process is stopped.

// Shared by several test crates; each uses part of it.
use mosaic_test_kit::python;

use mosaic_core::{Action, EnvError, Environment, ObsRequest, Transition};
use mosaic_external::env::{ExternalEnvSettings, Family};
use mosaic_external::{ExternalEnv, WorkerError, WorkerSettings};
use std::time::{Duration, Instant};

fn faulty(mode: &str) -> Result<ExternalEnv, WorkerError> {
    let py = python::python_env();
    let settings = ExternalEnvSettings {
        worker: WorkerSettings {
            timeout_ms: 1_500,
            start_timeout_ms: 20_000,
            heartbeat_ms: 200,
            heartbeat_timeout_ms: 600,
            grace_ms: 300,
            ..WorkerSettings::new(py.worker("faulty.py", &["env", mode]))
        },
        ..ExternalEnvSettings::default()
    };
    ExternalEnv::start("worker", None, &settings)
}

fn reset_error(mode: &str) -> String {
    let mut env = faulty(mode).unwrap_or_else(|e| panic!("{mode}: handshake failed: {e}"));
    let started = Instant::now();
    let err = env.reset(1).expect_err(mode);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{mode} took {:?}",
        started.elapsed()
    );
    assert!(env.acting().is_empty());
    err.to_string()
}

#[test]
fn garbage_lines_are_not_json_errors() {
    let err = reset_error("garbage");
    assert!(
        err.contains("not JSON") && err.contains("Traceback"),
        "{err}"
    );
}

#[test]
fn non_object_json_is_an_error_not_a_crash() {
    let err = reset_error("non_object");
    assert!(
        err.contains("a JSON array where an object was expected"),
        "{err}"
    );
}

#[test]
fn a_100_mb_line_is_refused_without_buffering_it() {
    let err = reset_error("huge_line");
    assert!(
        err.contains("longer than the limit of 16777216 bytes"),
        "{err}"
    );
}

#[test]
fn exit_during_the_handshake() {
    let err = faulty("exit_in_handshake").unwrap_err();
    assert!(matches!(err, WorkerError::Framing(_)), "{err}");
    assert!(err.to_string().contains("middle of a frame"), "{err}");
}

#[test]
fn a_different_major_version_is_rejected_naming_both() {
    let err = faulty("wrong_major").unwrap_err();
    assert!(matches!(err, WorkerError::Rejected(_)), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("mosaic/2.0") && text.contains("mosaic/1"),
        "{text}"
    );
}

#[test]
fn no_answer_hits_the_deadline() {
    let err = reset_error("silent");
    assert!(err.contains("no `reset` reply within 1500 ms"), "{err}");
}

#[test]
fn a_silent_heartbeat_worker_is_declared_hung() {
    let err = reset_error("silent_heartbeat");
    assert!(err.contains("silent for 600 ms"), "{err}");
}

/// `kill -9` of the worker while a request is pending fails the request at once as a crash,
/// even when a process the worker started keeps its output open (its output never ends).
#[test]
fn a_killed_worker_fails_its_pending_request_at_once() {
    let py = python::python_env();
    for mode in ["silent", "silent_holding_output"] {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let settings = ExternalEnvSettings {
            worker: WorkerSettings {
                env: [("FAULTY_PID_FILE".to_owned(), pid_file.display().to_string())].into(),
                timeout_ms: 30_000,
                ..WorkerSettings::new(py.worker("faulty.py", &["env", mode]))
            },
            ..ExternalEnvSettings::default()
        };
        let mut env = ExternalEnv::start("worker", None, &settings).unwrap();
        let killer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            let pid = std::fs::read_to_string(&pid_file).unwrap();
            let status = std::process::Command::new("kill")
                .args(["-9", pid.trim()])
                .status()
                .unwrap();
            assert!(status.success());
            Instant::now()
        });
        let err = env.reset(1).unwrap_err();
        let failed_at = Instant::now();
        let since_kill = failed_at.saturating_duration_since(killer.join().unwrap());
        assert!(
            matches!(&err, EnvError::Crashed(why) if why.contains("signal: 9")),
            "{mode}: {err:?}"
        );
        eprintln!("{mode}: the pending reset failed {since_kill:?} after kill -9");
        assert!(
            since_kill < Duration::from_millis(300),
            "{mode}: {since_kill:?}"
        );
    }
}

#[test]
fn replies_out_of_order_are_detected() {
    let err = reset_error("out_of_order");
    assert!(
        err.contains("out of order") && err.contains("request 8"),
        "{err}"
    );
}

#[test]
fn stdout_closed_early_is_reported_at_once() {
    let mut env = faulty("stdout_closed").unwrap();
    let started = Instant::now();
    let err = env.reset(1).unwrap_err().to_string();
    assert!(err.contains("closed its output"), "{err}");
    assert!(
        started.elapsed() < Duration::from_millis(1_400),
        "waited for the deadline instead"
    );
}

#[test]
fn an_illegal_action_reported_by_the_worker_is_invalid_action() {
    let mut env = faulty("illegal_action").unwrap();
    let err = env.reset(1).unwrap_err();
    assert!(matches!(err, EnvError::InvalidAction { .. }), "{err}");
}

#[test]
fn unknown_message_types_are_answered_and_skipped() {
    let mut env = faulty("unknown_type_then_ok").unwrap();
    env.reset(1).unwrap();
    assert_eq!(env.acting(), [0]);
}

#[test]
fn a_real_env_refuses_an_illegal_move() {
    let py = python::python_env();
    let settings = ExternalEnvSettings {
        python: Some(py.python.clone()),
        ..ExternalEnvSettings::default()
    };
    let mut env = ExternalEnv::start(
        "pettingzoo:classic/chess_v6",
        Some(Family::PettingZoo("classic/chess_v6")),
        &settings,
    )
    .unwrap();
    env.reset(1).unwrap();
    let obs = env.observe(0, ObsRequest::MASK_ONLY);
    assert!(!obs.is_legal(Action(0)));
    let mut out = Transition::default();
    let err = env.step(&[Some(Action(0)), None], &mut out).unwrap_err();
    assert!(
        matches!(err, EnvError::InvalidAction { agent: 0, .. }),
        "{err}"
    );
    let legal = obs.legal_actions().next().unwrap();
    env.step(&[Some(legal), None], &mut out).unwrap();
    assert_eq!(env.acting(), [1]);
    let err = env.step(&[Some(legal), None], &mut out).unwrap_err();
    assert!(err.to_string().contains("agent 0"), "{err}");
}

#[test]
fn mosaic_workers_are_driven_unmodified() {
    let py = python::python_env();
    let settings = ExternalEnvSettings {
        worker: WorkerSettings::new(py.worker("mosaic_style.py", &[])),
        actions: Some(vec!["left".into(), "right".into(), "forward".into()]),
        ..ExternalEnvSettings::default()
    };
    let mut env = ExternalEnv::start("worker", None, &settings).unwrap();
    assert_eq!(env.spec().action_labels.len(), 3);
    let mut out = Transition::default();
    let mut own_choices = 0;
    for seed in [4, 5, 6] {
        env.reset(seed).unwrap();
        let frame = env.render().expect("ready carries a render payload");
        assert_eq!((frame.width, frame.height), (4, 3));
        let mut rewards = Vec::new();
        while !env.acting().is_empty() {
            let obs = env.observe(0, ObsRequest::ALL);
            assert!(obs.frame.is_some());
            env.step(&[Some(Action(1))], &mut out).unwrap();
            // Like MOSAIC's random worker, it takes an action of its own: reported as
            // executed when it is not the one sent.
            if let Some(taken) = out.executed[0] {
                assert!(taken != Action(1) && taken.0 < 3, "{taken:?}");
                own_choices += 1;
            }
            rewards.push(out.rewards[0]);
        }
        assert_eq!(rewards, [0.0, 0.0, 0.0, 0.0, 1.0]);
        assert!(out.terminated[0]);
        assert_eq!(env.steps(), 5);
    }
    assert!(own_choices > 0, "the worker chose for itself");
    assert!(env.close().is_some_and(|status| status.contains("0")));
    let missing_actions = ExternalEnvSettings {
        worker: WorkerSettings::new(py.worker("mosaic_style.py", &[])),
        ..ExternalEnvSettings::default()
    };
    let err = ExternalEnv::start("worker", None, &missing_actions).unwrap_err();
    assert!(err.to_string().contains("actions"), "{err}");
}
