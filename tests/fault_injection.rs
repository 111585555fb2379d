//! Fault injection with real processes and real signals: Python environment and policy
//! workers are killed (SIGKILL) or frozen (SIGSTOP) at random steps, or never start. The
//! sessions restart them, rebuild their state, retry the failed step, and the final records
//! equal a clean run's (ignoring timestamps, durations and restart events).

#[path = "support/faults.rs"]
mod faults;

use faults::{
    EPISODES, FAMILIES, Fault, Striker, Target, assert_same_records, experiment, experiment_on,
    plan, run, workers,
};
use mosaic_test_kit::python;
use std::time::Duration;

#[actix::test]
async fn killed_env_and_policy_workers_are_restarted_and_the_records_equal_a_clean_run() {
    let clean = run(experiment("kill", serde_json::json!({}), None), None).await;
    assert!(clean.result.is_ok(), "{:?}", clean.result);
    // Every target at random steps of 11 episodes (seeds), with checkpoints at every step
    // and with none (recovery replays from the episode start).
    for (target, interval, seed) in [
        (Target::Env, 0, 1),
        (Target::Env, 3_600_000, 2),
        (Target::Policy, 0, 3),
        (Target::Policy, 3_600_000, 4),
    ] {
        let (striker, strikes) = Striker::new("kill", plan(seed, &[target]), Fault::Kill);
        let faulty = run(
            experiment(
                "kill",
                // Eleven strikes within seconds: allow them (the default is 3 a minute).
                serde_json::json!({"checkpoint_interval_ms": interval, "max_restarts": 50}),
                None,
            ),
            Some(striker),
        )
        .await;
        assert_same_records(&faulty, &clean);
        let struck = strikes.struck.lock().unwrap().clone();
        assert_eq!(
            struck.len(),
            EPISODES as usize - 1,
            "every planned strike landed"
        );
        let restarts: Vec<_> = faulty
            .episodes
            .iter()
            .flat_map(|e| e.restarts.clone())
            .collect();
        let per_episode: Vec<(u32, usize)> = faulty
            .episodes
            .iter()
            .map(|e| (e.episode_index, e.restarts.len()))
            .collect();
        let struck_at: Vec<(u32, Target)> = struck.iter().map(|(e, t, _)| (*e, *t)).collect();
        assert!(
            restarts.len() == struck.len(),
            "struck {struck_at:?}, restarts per episode {per_episode:?}"
        );
        for restart in &restarts {
            assert!(restart.recovered, "{restart:?}");
            assert!(restart.diverged.is_none(), "{restart:?}");
            assert!(
                [
                    "SIGKILL",
                    "Broken pipe",
                    "closed its output",
                    "worker stopped"
                ]
                .iter()
                .any(|sign| restart.failure.contains(sign)),
                "{restart:?}"
            );
        }
        let child = if target == Target::Env {
            "env"
        } else {
            "agent"
        };
        assert!(restarts.iter().all(|r| r.child == child), "{restarts:?}");
    }
}

#[actix::test]
async fn every_python_family_recovers_from_env_and_policy_worker_kills() {
    for (family, env) in FAMILIES.into_iter().enumerate() {
        let tag = "families";
        let clean = run(experiment_on(env, tag, serde_json::json!({}), None), None).await;
        assert!(clean.result.is_ok(), "{env}: {:?}", clean.result);
        // Environment and policy workers struck in turn, one episode each, with checkpoints
        // at every step (so restores from them, not only replays from the episode start).
        let plan = plan(10 + family as u64, &[Target::Env, Target::Policy]);
        let (striker, strikes) = Striker::new(tag, plan, Fault::Kill);
        let faulty = run(
            experiment_on(
                env,
                tag,
                serde_json::json!({"checkpoint_interval_ms": 0, "max_restarts": 50}),
                None,
            ),
            Some(striker),
        )
        .await;
        assert_same_records(&faulty, &clean);
        let restarts: Vec<_> = faulty
            .episodes
            .iter()
            .flat_map(|e| e.restarts.clone())
            .collect();
        let struck = strikes.struck.lock().unwrap().len();
        assert!(struck > 0, "{env}: no strike landed");
        assert_eq!(restarts.len(), struck, "{env}: {restarts:?}");
        assert!(
            restarts.iter().all(|r| r.recovered && r.diverged.is_none()),
            "{env}: {restarts:?}"
        );
    }
}

#[actix::test]
async fn a_frozen_worker_is_declared_dead_by_its_heartbeat_and_replaced() {
    let clean = run(experiment("stop", serde_json::json!({}), None), None).await;
    let mut plan = plan(3, &[Target::Env, Target::Policy]);
    plan.truncate(2);
    let (striker, strikes) = Striker::new("stop", plan, Fault::Stop);
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
    assert_eq!(strikes.struck.lock().unwrap().len(), 2);
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
