//! The server over plain HTTP: access rules, limits, controls, human moves, language-model
//! details and errors.

mod common;

use common::api::{TOKEN, authed, config, duel, get, json_of, post, state_until, steps};
use common::{Answer, http, record_run, serve_in_background};
use mosaic_core::ExperimentSpec;
use mosaic_web::{ServeConfig, WebError};
use serde_json::{Value, json};

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
