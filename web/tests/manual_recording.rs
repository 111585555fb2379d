//! Manual episodes recorded into a run directory: what is played, abandoned or left
//! waiting is recorded; a session without play leaves nothing.

mod common;

use common::api::{TOKEN, config, duel, get, json_of, post, state_until, steps};
use common::{http, serve_in_background};
use mosaic_web::WebError;
use serde_json::{Value, json};
use std::net::SocketAddr;

fn recording(runs: &std::path::Path, run_id: &str) -> mosaic_web::RecordConfig {
    mosaic_web::RecordConfig {
        dir: runs.join(run_id),
        run_id: run_id.into(),
        versions: Default::default(),
    }
}

/// One Step All of the duel, the human moving (the last legal action) or staying;
/// answers the action and the duel's frame after the step.
fn step_duel(addr: SocketAddr, steps_before: u64, moving: bool) -> (u64, Vec<u8>) {
    assert_eq!(post(addr, "/api/live/step", json!({})).status, 202);
    let state = state_until(addr, "the human's turn", |s| s["waiting"] == 1);
    let legal = state["viewports"][0]["waiting"][0]["legal"]
        .as_array()
        .unwrap();
    let action = if moving {
        legal.last().and_then(Value::as_u64).unwrap()
    } else {
        0
    };
    let answer = post(
        addr,
        "/api/live/choose",
        json!({"operator": "duel", "agent": 0, "action": action}),
    );
    assert_eq!(answer.status, 202, "{}", answer.text());
    state_until(addr, "the step", |s| {
        steps(s, 0) == Some(steps_before + 1) && s["stepping"] == false
    });
    (action, get(addr, "/api/live/duel/frame").body)
}

#[test]
fn manual_episodes_are_recorded_into_a_run() {
    let runs = tempfile::tempdir().unwrap();
    let mut config = config(Some(duel()));
    config.token = Some(TOKEN.into());
    config.runs_dir = Some(runs.path().to_owned());
    config.record = Some(recording(runs.path(), "manual-duel"));
    let server = serve_in_background(config).unwrap();
    let addr = server.addr;
    let setup = json_of(&get(addr, "/api/live"));
    assert_eq!(setup["recording"]["run_id"], "manual-duel");
    assert_eq!(setup["recording"]["name"], "manual-duel");
    let state = state_until(addr, "the first reset", |s| steps(s, 0) == Some(0));
    assert_eq!(state["recording"]["episodes"], 0);
    assert_eq!(state["recording"]["error"], Value::Null);

    // Episode 0: three steps, the human moving where it can, then abandoned by a reset.
    let mut shown = vec![get(addr, "/api/live/duel/frame").body];
    let mut played = Vec::new();
    for k in 0..3 {
        let (action, frame) = step_duel(addr, k, k > 0);
        played.push(Some(action as u32));
        shown.push(frame);
    }
    assert_ne!(shown[1], shown[3], "the human moved");
    let state = json_of(&get(addr, "/api/live/state"));
    assert_eq!(state["recording"]["episodes"], 1);
    assert_eq!(
        post(addr, "/api/live/reset", json!({"seed": 9})).status,
        202
    );
    state_until(addr, "the reset", |s| {
        s["seed"] == "9" && s["resetting"] == false
    });

    // While serving, the runs browser reads the run from its files.
    let list = json_of(&get(addr, "/api/runs"));
    let listed = &list["runs"][0];
    assert_eq!(
        (&listed["name"], &listed["status"]),
        (&json!("manual-duel"), &json!("running"))
    );
    let detail = json_of(&get(addr, "/api/runs/manual-duel"));
    let episodes = detail["episodes"].as_array().unwrap();
    let duel = episodes
        .iter()
        .find(|e| e["operator_id"] == "duel")
        .expect("the abandoned duel is recorded");
    assert_eq!(duel["error"], "abandoned by reset");
    assert_eq!(duel["steps"], 3);
    let replay = json_of(&get(addr, "/api/runs/manual-duel/replay/duel/0"));
    assert_eq!(replay["frames"], 4);
    for (k, frame) in shown.iter().enumerate() {
        let replayed = get(
            addr,
            &format!("/api/runs/manual-duel/replay/duel/0/frames/{k}"),
        );
        assert!(
            replayed.body == *frame,
            "replay frame {k} differs from the frame shown"
        );
    }

    // A reset before any step: the untouched episode's index is given to the next one.
    let state = state_until(addr, "episode 1", |s| {
        s["viewports"][0]["status"]["episode_index"] == 1
    });
    assert_eq!(state["viewports"][0]["status"]["seed"], "9");
    assert_eq!(
        post(addr, "/api/live/reset", json!({"seed": 10})).status,
        202
    );
    let state = state_until(addr, "the second reset", |s| {
        s["seed"] == "10" && s["resetting"] == false
    });
    assert_eq!(state["viewports"][0]["status"]["episode_index"], 1);
    step_duel(addr, 0, false);
    let state = json_of(&get(addr, "/api/live/state"));
    assert_eq!(state["recording"]["episodes"], 2);
    drop(server);

    // Stopped: episode 1 is recorded as abandoned by the stop, and the run reads as any.
    let run = mosaic_recorder::RunDir::open(&runs.path().join("manual-duel")).unwrap();
    let manifest = run.manifest();
    assert_eq!(manifest.experiment.episodes, 2);
    assert_eq!(manifest.seeds, vec![5, 10]);
    let summary = run.summary().unwrap();
    assert_eq!(
        (summary.status, summary.done, summary.planned),
        (mosaic_recorder::RunStatus::Complete, 4, 4)
    );
    let records = run.records().unwrap();
    let report = mosaic_recorder::report::build(&run, &records).unwrap();
    assert_eq!(report.operators[0].episodes, 2);
    assert_eq!(report.operators[0].failed, 2);
    drop(records);
    let store = run.store().unwrap();
    assert_eq!(run.check_consistency(&store).unwrap(), Vec::<String>::new());
    let duel_steps = store
        .steps_of(&mosaic_recorder::Unit::new("duel", 0))
        .unwrap();
    assert_eq!(duel_steps.len(), 3 * 2, "both agents, three steps");
    let red: Vec<_> = duel_steps.iter().filter(|r| r.agent_id == "red").collect();
    assert!(red.iter().all(|r| r.kind == "human"));
    assert_eq!(red.iter().map(|r| r.action).collect::<Vec<_>>(), played);
    let last = store
        .episode(&mosaic_recorder::Unit::new("duel", 1))
        .unwrap()
        .unwrap();
    assert_eq!((last.seed, last.steps), (10, 1));
    assert_eq!(last.error.as_deref(), Some("abandoned: the server stopped"));
}

#[test]
fn a_session_without_play_leaves_no_run_and_no_record_records_nothing() {
    let runs = tempfile::tempdir().unwrap();
    let mut config = config(Some(duel()));
    config.record = Some(recording(runs.path(), "idle"));
    let server = serve_in_background(config.clone()).unwrap();
    state_until(server.addr, "the first reset", |s| steps(s, 0) == Some(0));
    assert!(runs.path().join("idle").join("run.json").is_file());
    drop(server);
    assert!(
        !runs.path().join("idle").exists(),
        "nothing played, nothing kept"
    );

    // The same run id twice: the second server refuses to start.
    std::fs::create_dir_all(runs.path().join("taken")).unwrap();
    std::fs::write(runs.path().join("taken").join("run.json"), b"{}").unwrap();
    config.record = Some(recording(runs.path(), "taken"));
    match serve_in_background(config.clone()) {
        Err(WebError::Record(message)) => {
            assert!(message.contains("already holds a run"), "{message}")
        }
        other => panic!(
            "a second run in the same directory: {:?}",
            other.map(|r| r.addr)
        ),
    }
    config.record = Some(recording(runs.path(), "../escape"));
    assert!(matches!(
        serve_in_background(config.clone()),
        Err(WebError::Record(_))
    ));

    config.record = None;
    let server = serve_in_background(config).unwrap();
    let addr = server.addr;
    assert_eq!(
        json_of(&http(addr, "GET", "/api/live", &[], b""))["recording"],
        Value::Null
    );
    drop(server);
    let left: Vec<_> = std::fs::read_dir(runs.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "only the directory made by hand is left");
}

#[test]
fn stopping_with_a_move_awaited_records_the_step_it_ended() {
    let runs = tempfile::tempdir().unwrap();
    let mut config = config(Some(duel()));
    config.record = Some(recording(runs.path(), "stopped"));
    let server = serve_in_background(config).unwrap();
    let addr = server.addr;
    state_until(addr, "the first reset", |s| steps(s, 0) == Some(0));
    let answer = http(
        addr,
        "POST",
        "/api/live/step",
        &[("Content-Type", "application/json")],
        b"{}",
    );
    assert_eq!(answer.status, 202);
    state_until(addr, "the human's turn", |s| s["waiting"] == 1);
    drop(server);

    let run = mosaic_recorder::RunDir::open(&runs.path().join("stopped")).unwrap();
    assert_eq!(run.manifest().experiment.episodes, 1);
    assert_eq!(run.manifest().seeds, vec![5]);
    assert_eq!(
        run.summary().unwrap().status,
        mosaic_recorder::RunStatus::Complete
    );
    let store = run.store().unwrap();
    assert_eq!(run.check_consistency(&store).unwrap(), Vec::<String>::new());
    for operator in ["duel", "solo"] {
        let unit = mosaic_recorder::Unit::new(operator, 0);
        let record = store.episode(&unit).unwrap().unwrap();
        assert_eq!(record.steps, 1, "{unit}");
        assert_eq!(
            record.error.as_deref(),
            Some("abandoned: the server stopped")
        );
    }
    let withdrawn = store
        .step(&mosaic_recorder::Unit::new("duel", 0), 0)
        .unwrap()
        .into_iter()
        .find(|r| r.agent_id == "red")
        .unwrap();
    assert_eq!(
        (withdrawn.action, withdrawn.decision_source),
        (Some(0), Some(mosaic_core::DecisionSource::Error)),
        "the move awaited became the default action"
    );
}
