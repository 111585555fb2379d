//! The server over plain HTTP: access rules, limits, controls, human moves and replays.

mod common;

use common::{Answer, http, record_run, serve_in_background};
use mosaic_core::ExperimentSpec;
use mosaic_web::{ServeConfig, WebError};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const TOKEN: &str = "http-test-token-42";

fn config(experiment: Option<ExperimentSpec>) -> ServeConfig {
    let mut config = ServeConfig::new(
        common::registry(),
        mosaic_actors::DeciderRegistry::baselines(),
    );
    config.experiment = experiment;
    config.bind = "127.0.0.1:0".parse().unwrap();
    config
}

fn duel() -> ExperimentSpec {
    serde_json::from_value(json!({
        "name": "duel",
        "episodes": 2,
        "seeds": {"plan": "list", "seeds": [5, 6]},
        "max_steps": 20,
        "operators": [
            {"id": "duel", "env": "walk", "agents": {"red": {"kind": "human"}, "blue": {"kind": "noop"}}},
            {"id": "solo", "env": "walk", "env_settings": {"stepping": "single"}, "agents": {"*": {"kind": "random"}}}
        ]
    }))
    .unwrap()
}

fn authed<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![("X-Mosaic-Token", TOKEN)];
    headers.extend_from_slice(extra);
    headers
}

fn get(addr: SocketAddr, path: &str) -> Answer {
    http(addr, "GET", path, &authed(&[]), b"")
}

fn post(addr: SocketAddr, path: &str, body: Value) -> Answer {
    http(
        addr,
        "POST",
        path,
        &authed(&[("Content-Type", "application/json")]),
        body.to_string().as_bytes(),
    )
}

fn json_of(answer: &Answer) -> Value {
    serde_json::from_slice(&answer.body).unwrap_or_else(|e| panic!("{e}: {}", answer.text()))
}

/// Polls the board until `ready` holds (the board follows the sessions asynchronously).
fn state_until(addr: SocketAddr, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let state = json_of(&get(addr, "/api/live/state"));
        if ready(&state) {
            return state;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {state:#}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn steps(state: &Value, viewport: usize) -> Option<u64> {
    state["viewports"][viewport]["status"]["steps"].as_u64()
}

#[test]
fn other_addresses_need_a_token() {
    let mut open = config(None);
    open.bind = "0.0.0.0:0".parse().unwrap();
    assert!(matches!(
        serve_in_background(open),
        Err(WebError::TokenRequired { .. })
    ));
    let mut weak = config(None);
    weak.token = Some("short".into());
    assert!(matches!(
        serve_in_background(weak),
        Err(WebError::BadToken(_))
    ));
}

#[test]
fn every_request_carries_the_token() {
    let mut config = config(Some(duel()));
    config.token = Some(TOKEN.into());
    let server = serve_in_background(config).unwrap();
    let addr = server.addr;

    for (path, headers) in [
        ("/", vec![]),
        ("/?token=wrong-token-000000", vec![]),
        (
            "/api/live/state",
            vec![("Authorization", "Bearer nope-nope-nope")],
        ),
        ("/assets/app.js", vec![]),
    ] {
        let answer = http(addr, "GET", path, &headers, b"");
        assert_eq!(answer.status, 401, "{path}: {}", answer.text());
        assert!(answer.text().contains("token"));
    }
    let bearer = format!("Bearer {TOKEN}");
    let answer = http(
        addr,
        "GET",
        "/api/live",
        &[("Authorization", bearer.as_str())],
        b"",
    );
    assert_eq!(answer.status, 200);
    assert_eq!(json_of(&answer)["operators"][0]["id"], "duel");

    // The scheme of `Authorization` is case-insensitive.
    let bearer = format!("bearer {TOKEN}");
    let answer = http(
        addr,
        "GET",
        "/api/live",
        &[("Authorization", bearer.as_str())],
        b"",
    );
    assert_eq!(answer.status, 200, "{}", answer.text());

    // A person's browser without the token gets a login form, not JSON.
    let html = [("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")];
    for (path, notice) in [("/", false), ("/?token=wrong-token-000000", true)] {
        let login = http(addr, "GET", path, &html, b"");
        assert_eq!(login.status, 401, "{path}");
        assert!(login.head.contains("text/html"), "{path}: {}", login.head);
        assert!(
            login.text().contains("<form") && login.text().contains("name=\"token\""),
            "{path}: {}",
            login.text()
        );
        assert_eq!(login.text().contains("not the server's"), notice, "{path}");
        assert!(!login.text().contains("{notice}"));
    }

    // The login address (printed at start) sets the cookie and moves the page to an address
    // without the token.
    assert_eq!(server.login_url, format!("http://{addr}/?token={TOKEN}"));
    let page = http(addr, "GET", &format!("/?token={TOKEN}"), &html, b"");
    assert_eq!(page.status, 303, "{}", page.head);
    assert!(page.head.contains("location: /\r\n"), "{}", page.head);
    let kept = http(addr, "GET", &format!("/?a=1&token={TOKEN}"), &[], b"");
    assert!(kept.head.contains("location: /?a=1\r\n"), "{}", kept.head);
    let cookie = page
        .head
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .expect("a cookie")
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    assert!(cookie.starts_with("mosaic_token_"), "{cookie}");
    assert!(page.head.contains("SameSite=Strict"));
    assert!(page.head.contains("HttpOnly"));
    let page = http(addr, "GET", "/", &[("Cookie", cookie.as_str())], b"");
    assert_eq!(page.status, 200);
    assert!(page.text().contains("/assets/app.js"));
    let script = http(
        addr,
        "GET",
        "/assets/app.js",
        &[("Cookie", cookie.as_str())],
        b"",
    );
    assert_eq!(script.status, 200);
    assert!(script.head.contains("text/javascript"));
    assert!(page.head.contains("content-security-policy"));
}

#[test]
fn bodies_are_small_json_from_this_origin() {
    let mut config = config(Some(duel()));
    config.token = Some(TOKEN.into());
    let server = serve_in_background(config).unwrap();
    let addr = server.addr;
    let big = format!(
        "{{\"operator\": \"{}\", \"agent\": 0, \"action\": 0}}",
        "x".repeat(5000)
    );
    let answer = http(
        addr,
        "POST",
        "/api/live/choose",
        &authed(&[("Content-Type", "application/json")]),
        big.as_bytes(),
    );
    assert_eq!(answer.status, 413, "{}", answer.text());
    let answer = http(
        addr,
        "POST",
        "/api/live/step",
        &authed(&[("Content-Type", "text/plain")]),
        b"{}",
    );
    assert_eq!(answer.status, 415, "{}", answer.text());
    let answer = http(
        addr,
        "POST",
        "/api/live/step",
        &authed(&[
            ("Content-Type", "application/json"),
            ("Origin", "http://evil.example"),
        ]),
        b"{}",
    );
    assert_eq!(answer.status, 403, "{}", answer.text());
    let answer = post(
        addr,
        "/api/live/run",
        json!({"pace_ms": 1, "command": "rm -rf /"}),
    );
    assert_eq!(answer.status, 400, "{}", answer.text());
    assert!(answer.text().contains("unknown field"), "{}", answer.text());
    // Nothing above stepped the sessions.
    let state = state_until(addr, "the first reset", |s| steps(s, 0) == Some(0));
    assert_eq!(steps(&state, 1), Some(0));
}

#[test]
fn without_a_token_only_loopback_hosts_are_answered() {
    let server = serve_in_background(config(None)).unwrap();
    let addr = server.addr;
    let answer = http(addr, "GET", "/", &[("Host", "evil.example:8080")], b"");
    assert_eq!(answer.status, 403, "{}", answer.text());
    let answer = http(addr, "GET", "/", &[("Host", "localhost:8080")], b"");
    assert_eq!(answer.status, 200);
    let answer = http(addr, "GET", "/api/live", &[], b"");
    assert_eq!(answer.status, 404, "no experiment loaded");
    let answer = http(addr, "GET", "/api/runs", &[], b"");
    assert_eq!(answer.status, 404);
    assert!(answer.text().contains("--runs"), "{}", answer.text());
}

#[test]
fn step_all_waits_for_the_human_and_takes_legal_moves_only() {
    let mut config = config(Some(duel()));
    config.token = Some(TOKEN.into());
    let server = serve_in_background(config).unwrap();
    let addr = server.addr;
    let setup = json_of(&get(addr, "/api/live"));
    assert_eq!(setup["operators"][0]["agents"][0]["paradigm"], "human");
    assert_eq!(setup["operators"][1]["stepping"], "single");
    let state = state_until(addr, "the first reset", |s| {
        steps(s, 0) == Some(0) && steps(s, 1) == Some(0)
    });
    assert_eq!(state["seed"], "5", "the plan's first seed");
    assert_eq!(state["next_seed"], "6");

    assert_eq!(post(addr, "/api/live/step", json!({})).status, 202);
    let state = state_until(addr, "the human's turn", |s| {
        steps(s, 1) == Some(1)
            && s["viewports"][0]["waiting"]
                .as_array()
                .is_some_and(|w| !w.is_empty())
    });
    assert_eq!(steps(&state, 0), Some(0), "the duel waits for its human");
    assert_eq!(state["waiting"], 1);
    let seat = &state["viewports"][0]["waiting"][0];
    assert_eq!(seat["agent_id"], "red");
    let legal: Vec<u64> = seat["legal"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_u64().unwrap())
        .collect();
    let illegal = (0..5).find(|a| !legal.contains(a));
    let answer = post(addr, "/api/live/step", json!({}));
    assert_eq!(answer.status, 409, "{}", answer.text());
    if let Some(illegal) = illegal {
        let answer = post(
            addr,
            "/api/live/choose",
            json!({"operator": "duel", "agent": 0, "action": illegal}),
        );
        assert_eq!(answer.status, 400, "{}", answer.text());
    }
    let answer = post(
        addr,
        "/api/live/choose",
        json!({"operator": "duel", "agent": 1, "action": 0}),
    );
    assert_eq!(answer.status, 409, "blue is not a human: {}", answer.text());
    let chosen = *legal.last().unwrap();
    let answer = post(
        addr,
        "/api/live/choose",
        json!({"operator": "duel", "agent": 0, "action": chosen}),
    );
    assert_eq!(answer.status, 202, "{}", answer.text());
    let state = state_until(addr, "the duel's step", |s| {
        steps(s, 0) == Some(1) && s["stepping"] == false
    });
    let label = setup["operators"][0]["action_labels"][chosen as usize].clone();
    assert_eq!(state["viewports"][0]["status"]["last_actions"][0], label);
    assert_eq!(state["viewports"][0]["details"][0]["action"], label);
    assert_eq!(steps(&state, 1), Some(1), "exactly one step each");

    // Reset All with a human's move pending: the move is withdrawn, the seed applied.
    assert_eq!(post(addr, "/api/live/step", json!({})).status, 202);
    state_until(addr, "the human's turn again", |s| s["waiting"] == 1);
    let answer = post(
        addr,
        "/api/live/reset",
        json!({"seed": 18446744073709551615u64}),
    );
    assert_eq!(answer.status, 202);
    let state = state_until(addr, "the reset", |s| {
        s["seed"] == "18446744073709551615" && s["resetting"] == false
    });
    assert_eq!(steps(&state, 0), Some(0));
    assert_eq!(state["waiting"], 0);
    assert_eq!(state["viewports"][0]["status"]["episode_index"], 1);

    // Run until every episode is over.
    assert_eq!(post(addr, "/api/live/pause", json!({})).status, 202);
    let frame = get(addr, "/api/live/solo/frame");
    assert_eq!(frame.status, 200);
    assert_eq!(&frame.body[1..4], b"PNG");
    assert_eq!(get(addr, "/api/live/nobody/frame").status, 404);
}

#[test]
fn runs_are_listed_tabled_and_replayed_step_by_step() {
    let dir = tempfile::tempdir().unwrap();
    let spec: ExperimentSpec = serde_json::from_value(json!({
        "name": "recorded",
        "episodes": 2,
        "seeds": {"plan": "procedural", "base": 3},
        "max_steps": 15,
        "operators": [
            {"id": "pair", "env": "walk", "agents": {"red": {"kind": "random"}, "blue": {"kind": "cycling"}}},
            {"id": "turns", "env": "walk", "env_settings": {"stepping": "sequential"}, "agents": {"*": {"kind": "random"}}}
        ]
    }))
    .unwrap();
    let recorded = record_run(dir.path(), "run-a", spec.clone());
    // A run whose environment would start a program: never rebuilt from a run directory.
    let marker = dir.path().join("started");
    let mut ghost = spec.clone();
    ghost.operators.truncate(1);
    ghost.operators[0].env = "worker".into();
    ghost.operators[0].env_settings = serde_json::from_value(json!({
        "command": ["sh", "-c", format!("touch {}", marker.display())]
    }))
    .unwrap();
    let manifest = mosaic_core::record::RunManifest {
        schema: mosaic_core::record::RUN_SCHEMA.into(),
        run_id: "run-ghost".into(),
        seeds: ghost.episode_seeds(),
        experiment: ghost,
        versions: Default::default(),
        started: mosaic_core::record::now_ms(),
        shard: None,
    };
    drop(mosaic_recorder::RunDir::create(&dir.path().join("run-ghost"), &manifest).unwrap());

    // The experiment's registry can start workers; replays of other runs may not.
    let mut envs = mosaic_adapters::native_envs();
    for kind in common::registry().kinds() {
        envs.register(kind.clone());
    }
    let mut config = config(None);
    config.envs = envs;
    config.runs_dir = Some(dir.path().to_owned());
    config.experiment = Some(spec.clone());
    config.token = Some(TOKEN.into());
    let server = serve_in_background(config).unwrap();
    let addr = server.addr;

    let list = json_of(&get(addr, "/api/runs"));
    let names: Vec<&str> = list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2);
    assert!(names.contains(&"run-a") && names.contains(&"run-ghost"));

    let detail = json_of(&get(addr, "/api/runs/run-a"));
    assert_eq!(detail["status"], "complete");
    assert_eq!(detail["episodes"].as_array().unwrap().len(), 4);
    let operators = detail["report"]["operators"].as_array().unwrap();
    assert_eq!(operators.len(), 2);
    assert_eq!(operators[0]["operator_id"], "pair");
    assert_eq!(operators[0]["episodes"], 2);
    let red = operators[0]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["kind"] == "agent" && g["name"] == "red")
        .expect("a row for red");
    let red_mean = recorded
        .episodes
        .iter()
        .filter(|e| e.operator_id == "pair")
        .map(|e| e.agents[0].total_reward)
        .sum::<f64>()
        / 2.0;
    assert!((red["mean_return"]["mean"].as_f64().unwrap() - red_mean).abs() < 1e-9);
    for plot in ["returns", "distribution"] {
        let svg = get(addr, &format!("/api/runs/run-a/plots/{plot}"));
        assert_eq!(svg.status, 200, "{plot}");
        assert!(svg.head.contains("image/svg+xml"));
        assert!(svg.text().contains("<svg"), "{plot}");
    }
    assert_eq!(get(addr, "/api/runs/run-a/plots/pie").status, 404);

    for operator in ["pair", "turns"] {
        let episode = &recorded
            .episodes
            .iter()
            .find(|e| e.operator_id == operator && e.episode_index == 1)
            .unwrap();
        let steps = recorded.episode_steps(operator, 1);
        let settings = &spec
            .operators
            .iter()
            .find(|o| o.id == operator)
            .unwrap()
            .env_settings;
        let expected = common::expected_frames(settings, episode.seed, &steps);
        let replay = json_of(&get(addr, &format!("/api/runs/run-a/replay/{operator}/1")));
        assert_eq!(replay["steps"], episode.steps);
        assert_eq!(replay["frames"].as_u64().unwrap() as usize, expected.len());
        assert_eq!(replay["timeline"].as_array().unwrap().len(), steps.len());
        for (k, png) in expected.iter().enumerate() {
            let frame = get(
                addr,
                &format!("/api/runs/run-a/replay/{operator}/1/frames/{k}"),
            );
            assert_eq!(frame.status, 200);
            assert!(frame.body == *png, "{operator} frame {k} differs");
        }
        let past = get(
            addr,
            &format!(
                "/api/runs/run-a/replay/{operator}/1/frames/{}",
                expected.len()
            ),
        );
        assert_eq!(past.status, 404);
    }

    assert_eq!(get(addr, "/api/runs/run-a/replay/pair/9").status, 404);
    assert_eq!(get(addr, "/api/runs/run-a/replay/nobody/0").status, 404);
    assert_eq!(get(addr, "/api/runs/..").status, 404);
    assert_eq!(get(addr, "/api/runs/%2E%2E%2Fetc").status, 404);
    let answer = get(addr, "/api/runs/run-ghost/replay/pair/0");
    assert_eq!(answer.status, 403, "{}", answer.text());
    assert!(
        answer.text().contains("not replayable"),
        "{}",
        answer.text()
    );
}

#[test]
fn a_replay_that_does_not_reproduce_the_record_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let spec: ExperimentSpec = serde_json::from_value(json!({
        "name": "tampered",
        "episodes": 1,
        "seeds": {"plan": "fixed", "seed": 8},
        "max_steps": 6,
        "operators": [{"id": "pair", "env": "walk", "agents": {"*": {"kind": "noop"}}}]
    }))
    .unwrap();
    let (mut steps, episodes) = common::run_experiment("run-t", &spec);
    assert_eq!(
        steps.len(),
        6,
        "nobody moves: the step limit ends the episode"
    );
    for record in steps.iter_mut().flatten() {
        if record.step_index == 2 && record.agent_id == "blue" {
            record.reward = 0.5;
        }
    }
    common::write_run(dir.path(), "run-t", &spec, &steps, &episodes);
    let mut config = config(None);
    config.runs_dir = Some(dir.path().to_owned());
    config.replay_envs = common::registry();
    let server = serve_in_background(config).unwrap();
    let answer = http(
        server.addr,
        "GET",
        "/api/runs/run-t/replay/pair/0",
        &[],
        b"",
    );
    assert_eq!(answer.status, 422, "{}", answer.text());
    let message = json_of(&answer)["error"].as_str().unwrap().to_owned();
    assert!(
        message.contains("step 2 agent blue: recorded reward 0.5, replayed 0"),
        "{message}"
    );
}

/// Decides the first legal action and reports it the way language-model deciders do.
struct Annotated;

impl actix::Actor for Annotated {
    type Context = actix::Context<Self>;
}

impl actix::Handler<mosaic_actors::BeginEpisode> for Annotated {
    type Result = Result<(), mosaic_actors::DeciderError>;
    fn handle(&mut self, _: mosaic_actors::BeginEpisode, _: &mut Self::Context) -> Self::Result {
        Ok(())
    }
}

impl actix::Handler<mosaic_actors::Decide> for Annotated {
    type Result = Result<mosaic_core::Decision, mosaic_actors::DeciderError>;
    fn handle(&mut self, msg: mosaic_actors::Decide, _: &mut Self::Context) -> Self::Result {
        let action = msg.obs.legal_actions().next().unwrap();
        Ok(mosaic_core::Decision {
            action,
            source: mosaic_core::DecisionSource::Policy,
            detail: Some(json!({
                "raw": format!("<action>{}</action>", action.0),
                "think": format!("step {}: the first legal move", msg.step),
                "message": "going first",
                "scratchpad": "keep left",
                "parse_ok": true,
            })),
        })
    }
}

#[test]
fn language_model_agents_show_their_reasoning() {
    use actix::Actor;
    let mut kinds = mosaic_actors::DeciderRegistry::baselines();
    kinds.register(mosaic_actors::DeciderKind {
        name: "annotated",
        summary: "first legal action, with model-style details",
        settings: &[],
        spawn: std::sync::Arc::new(|_| {
            let addr = Annotated.start();
            Ok(mosaic_actors::DeciderHandle::new(
                "annotated",
                mosaic_core::Paradigm::Llm,
                mosaic_core::ObsRequest::MASK_ONLY,
                &addr,
            ))
        }),
    });
    let spec: ExperimentSpec = serde_json::from_value(json!({
        "name": "talk",
        "episodes": 1,
        "operators": [{"id": "talk", "env": "walk", "agents": {"red": {"kind": "annotated"}, "blue": {"kind": "noop"}}}]
    }))
    .unwrap();
    let mut config = config(Some(spec));
    config.kinds = kinds;
    config.token = Some(TOKEN.into());
    let server = serve_in_background(config).unwrap();
    let addr = server.addr;
    assert_eq!(
        json_of(&get(addr, "/api/live"))["operators"][0]["agents"][0]["paradigm"],
        "llm"
    );
    state_until(addr, "the first reset", |s| steps(s, 0) == Some(0));
    assert_eq!(post(addr, "/api/live/step", json!({})).status, 202);
    let state = state_until(addr, "the step", |s| steps(s, 0) == Some(1));
    let detail = &state["viewports"][0]["details"][0];
    assert_eq!(detail["step"], 0);
    assert_eq!(detail["source"], "policy");
    let decision = &detail["decision"];
    assert_eq!(decision["think"], "step 0: the first legal move");
    assert_eq!(decision["message"], "going first");
    assert_eq!(decision["scratchpad"], "keep left");
    assert_eq!(decision["parse_ok"], true);
    assert_eq!(decision["raw"], "<action>0</action>");
}

#[test]
fn the_manual_mode_example_serves_real_games() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/experiments/manual-mode.toml");
    let spec: ExperimentSpec = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut config = ServeConfig::new(
        mosaic_adapters::native_envs(),
        mosaic_actors::DeciderRegistry::baselines(),
    );
    config.experiment = Some(spec);
    config.bind = "127.0.0.1:0".parse().unwrap();
    let server = serve_in_background(config).unwrap();
    let addr = server.addr;
    let setup = json_of(&http(addr, "GET", "/api/live", &[], b""));
    let ids: Vec<&str> = setup["operators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["you_in_green", "scripted_green", "connect_four"]);
    let state = json_of(&http(addr, "GET", "/api/live/state", &[], b""));
    for id in ids {
        let frame = http(addr, "GET", &format!("/api/live/{id}/frame"), &[], b"");
        assert_eq!(frame.status, 200, "{id}");
        assert_eq!(&frame.body[1..4], b"PNG", "{id}");
    }
    let first = |i: usize| {
        http(
            addr,
            "GET",
            &format!(
                "/api/live/{}/frame",
                setup["operators"][i]["id"].as_str().unwrap()
            ),
            &[],
            b"",
        )
        .body
    };
    // The two pitches start alike under one seed, but for the outline of the person's agent.
    let (human, scripted) = (
        mosaic_core::Frame::from_png(&first(0)).unwrap(),
        mosaic_core::Frame::from_png(&first(1)).unwrap(),
    );
    let mark = mosaic_core::canvas::MARK;
    let pixels = |f: &mosaic_core::Frame| f.rgb.chunks(3).map(<[u8]>::to_vec).collect::<Vec<_>>();
    let (human, scripted) = (pixels(&human), pixels(&scripted));
    assert_eq!(human.len(), scripted.len());
    let outlined = human.iter().filter(|p| **p == mark).count();
    assert!(outlined > 0, "the human agent is outlined");
    assert_eq!(state["viewports"][0]["marked"], true);
    assert_eq!(state["viewports"][1]["marked"], false);
    assert!(
        human
            .iter()
            .zip(&scripted)
            .all(|(h, s)| h == s || *h == mark),
        "the pitches differ only by the outline"
    );
    assert_eq!(state["seed"], "7");
}

/// Records into `runs/{run_id}`, listed by the runs browser.
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

#[test]
fn seeds_above_2_pow_53_reach_the_page_as_exact_text() {
    const SEED: u64 = (1 << 53) + 1;
    let dir = tempfile::tempdir().unwrap();
    let spec: ExperimentSpec = serde_json::from_value(json!({
        "name": "big-seeds",
        "episodes": 2,
        "seeds": {"plan": "list", "seeds": [SEED, SEED + 2]},
        "max_steps": 4,
        "operators": [{"id": "pair", "env": "walk", "agents": {"*": {"kind": "noop"}}}]
    }))
    .unwrap();
    record_run(dir.path(), "run-big", spec.clone());
    let mut config = config(Some(spec));
    config.runs_dir = Some(dir.path().to_owned());
    config.replay_envs = common::registry();
    let server = serve_in_background(config).unwrap();
    let addr = server.addr;

    let state = state_until(addr, "the first episode", |s| {
        s["viewports"][0]["status"].is_object()
    });
    assert_eq!(state["seed"], SEED.to_string());
    assert_eq!(state["next_seed"], (SEED + 2).to_string());
    assert_eq!(state["viewports"][0]["status"]["seed"], SEED.to_string());

    let run = json_of(&get(addr, "/api/runs/run-big"));
    let seeds: Vec<&Value> = run["episodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["seed"])
        .collect();
    assert_eq!(
        seeds,
        [&json!(SEED.to_string()), &json!((SEED + 2).to_string())]
    );
    let replay = json_of(&get(addr, "/api/runs/run-big/replay/pair/1"));
    assert_eq!(replay["seed"], (SEED + 2).to_string());
}

#[test]
fn step_all_after_every_episode_ended_answers_like_run() {
    let spec: ExperimentSpec = serde_json::from_value(json!({
        "name": "short",
        "episodes": 1,
        "seeds": {"plan": "fixed", "seed": 4},
        "max_steps": 1,
        "operators": [{"id": "pair", "env": "walk", "agents": {"*": {"kind": "noop"}}}]
    }))
    .unwrap();
    let server = serve_in_background(config(Some(spec))).unwrap();
    let addr = server.addr;
    state_until(addr, "the first episode", |s| steps(s, 0) == Some(0));
    assert_eq!(post(addr, "/api/live/step", json!({})).status, 202);
    state_until(addr, "the episode's end", |s| {
        s["viewports"][0]["status"]["done"] == true && s["stepping"] == false
    });
    let run = post(addr, "/api/live/run", json!({"pace_ms": 0}));
    let step = post(addr, "/api/live/step", json!({}));
    assert_eq!((run.status, step.status), (409, 409), "{}", step.text());
    assert_eq!(json_of(&step), json_of(&run));
    assert!(
        json_of(&step)["error"]
            .as_str()
            .unwrap()
            .contains("Reset All")
    );
}

#[test]
fn every_error_is_json_and_names_no_server_path() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("run-broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("run.json"), "{ not json").unwrap();
    let mut config = config(Some(duel()));
    config.runs_dir = Some(dir.path().to_owned());
    let server = serve_in_background(config).unwrap();
    let addr = server.addr;
    let shown = |answer: &Answer| {
        assert!(
            answer.head.contains("application/json"),
            "{}\n{}",
            answer.head,
            answer.text()
        );
        json_of(answer)["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error: {}", answer.text()))
            .to_owned()
    };
    for (method, path, status) in [
        ("POST", "/api/runs", 404),
        ("GET", "/api/live/step", 404),
        ("DELETE", "/api/live/state", 404),
        ("GET", "/api/runs/run-broken/replay/pair/first", 404),
        ("GET", "/api/live/duel/frame/extra", 404),
        ("GET", "/api/runs/run-broken", 422),
    ] {
        let answer = http(addr, method, path, &[], b"");
        assert_eq!(answer.status, status, "{method} {path}: {}", answer.text());
        let message = shown(&answer);
        assert!(!message.is_empty(), "{method} {path}");
        assert!(
            !message.contains(&*dir.path().to_string_lossy()),
            "{method} {path}: {message}"
        );
    }
    let list = json_of(&get(addr, "/api/runs"));
    let error = list["runs"][0]["error"].as_str().unwrap();
    assert!(error.contains("run-broken"), "{error}");
    assert!(!error.contains(&*dir.path().to_string_lossy()), "{error}");
}

#[test]
fn runs_compare_paired_by_seed_with_the_recorders_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let spec = |name: &str, red: &str| -> ExperimentSpec {
        serde_json::from_value(json!({
            "name": name,
            "episodes": 6,
            "seeds": {"plan": "procedural", "base": 11},
            "max_steps": 15,
            "operators": [
                {"id": "pair", "env": "walk", "agents": {"red": {"kind": red}, "blue": {"kind": "cycling"}}},
                {"id": "still", "env": "walk", "agents": {"*": {"kind": "noop"}}}
            ]
        }))
        .unwrap()
    };
    let a = record_run(dir.path(), "run-a", spec("walks", "random"));
    let b = record_run(dir.path(), "run-b", spec("walks", "cycling"));
    record_run(dir.path(), "run-other", spec("elsewhere", "random"));
    let mut config = config(None);
    config.runs_dir = Some(dir.path().to_owned());
    config.token = Some(TOKEN.into());
    let server = serve_in_background(config).unwrap();
    let addr = server.addr;

    // The list names each run's environments and operators.
    let list = json_of(&get(addr, "/api/runs"));
    let run_b = list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "run-b")
        .unwrap();
    assert_eq!(run_b["env"], "walk");
    assert_eq!(run_b["operators"], json!(["pair", "still"]));
    assert_eq!(run_b["status"], "complete");
    assert_eq!(
        list["dir"],
        json!(dir.path().file_name().unwrap().to_string_lossy())
    );
    assert_eq!(list["max_compared"], 8);

    // Two runs: every operator of B against the same one of A, as the recorder computes it.
    use mosaic_recorder::paired::{compare_configs, samples_by_operator};
    let (samples_a, samples_b) = (
        samples_by_operator(&a.episodes),
        samples_by_operator(&b.episodes),
    );
    let answer = json_of(&get(addr, "/api/compare?runs=run-a,run-b"));
    let paired = answer["paired"].as_array().unwrap();
    assert_eq!(paired.len(), 2, "{answer:#}");
    for (row, operator) in paired.iter().zip(["pair", "still"]) {
        let expected = compare_configs(
            (operator, &samples_a[operator]),
            (operator, &samples_b[operator]),
            None,
        );
        let expected = expected.returns.difference.unwrap();
        assert_eq!(row["a"], format!("run-a:{operator}"));
        assert_eq!(row["b"], format!("run-b:{operator}"));
        assert_eq!(row["returns"]["paired_seeds"], 6);
        let got = &row["returns"]["difference"];
        assert_eq!(got["difference"]["mean"], json!(expected.difference.mean));
        assert_eq!(got["difference"]["low"], json!(expected.difference.low));
        assert_eq!(got["difference"]["high"], json!(expected.difference.high));
        assert_eq!(got["test"]["p_value"], json!(expected.test.p_value));
        assert_eq!(
            got["power"]["seeds_for_observed"],
            json!(expected.power.seeds_for_observed)
        );
    }
    assert_eq!(answer["unmatched_operators"], json!([]));

    // Two operators of one run.
    let answer = json_of(&get(addr, "/api/compare?runs=run-a&operators=still,pair"));
    let expected = compare_configs(
        ("still", &samples_a["still"]),
        ("pair", &samples_a["pair"]),
        None,
    );
    assert_eq!(
        answer["paired"][0]["returns"]["difference"]["difference"]["mean"],
        json!(expected.returns.difference.unwrap().difference.mean)
    );
    assert_eq!(answer["paired"][0]["a"], "still");

    // Errors: JSON, a fitting status, a message that says what to do and no server path.
    let shown = dir.path().to_string_lossy().into_owned();
    for (path, status, says) in [
        (
            "/api/compare?runs=run-a,run-ghost",
            404,
            "no run `run-ghost`",
        ),
        ("/api/compare?runs=run-a,..%2Fetc", 404, "no run"),
        (
            "/api/compare?runs=run-a,run-other",
            422,
            "different experiments",
        ),
        ("/api/compare?runs=run-a", 400, "two operators of one run"),
        ("/api/compare?runs=run-a,run-a", 400, "different runs"),
        (
            "/api/compare?runs=run-a&operators=pair",
            400,
            "operators=X,Y",
        ),
        (
            "/api/compare?runs=run-a&operators=pair,nobody",
            404,
            "operators: pair, still",
        ),
        (
            "/api/compare?runs=run-a,run-b&operators=pair,still",
            400,
            "?runs=A,B",
        ),
        ("/api/compare", 400, "runs"),
    ] {
        let answer = get(addr, path);
        assert_eq!(answer.status, status, "{path}: {}", answer.text());
        assert!(answer.head.contains("application/json"), "{path}");
        let message = json_of(&answer)["error"].as_str().unwrap().to_owned();
        assert!(message.contains(says), "{path}: {message}");
        assert!(!message.contains(&shown), "{path}: {message}");
    }
}
