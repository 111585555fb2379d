//! The runs browser over plain HTTP: listing, tables, replays step by step, replays that
//! do not reproduce their records, and paired comparisons of runs.

mod common;

use common::api::{TOKEN, config, get, json_of};
use common::{http, record_run, serve_in_background};
use mosaic_core::ExperimentSpec;
use serde_json::json;

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
    // The charts' data: each operator's return (the sum over its agents) per episode.
    let charts = json_of(&get(addr, "/api/runs/run-a/charts"));
    assert!(charts["training"].is_null(), "not a training run");
    for (series, operator) in charts["returns"]
        .as_array()
        .unwrap()
        .iter()
        .zip(["pair", "turns"])
    {
        assert_eq!(series["label"], operator);
        let expected: Vec<serde_json::Value> = recorded
            .episodes
            .iter()
            .filter(|e| e.operator_id == operator)
            .map(|e| {
                let total: f64 = e.agents.iter().map(|a| a.total_reward).sum();
                json!([f64::from(e.episode_index), total])
            })
            .collect();
        assert_eq!(series["points"], json!(expected), "{operator}");
    }
    assert_eq!(get(addr, "/api/runs/run-ghost/charts").status, 200);
    assert_eq!(get(addr, "/api/runs/run-none/charts").status, 404);

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

#[test]
fn an_episode_is_viewed_step_by_step_with_its_messages() {
    let dir = tempfile::tempdir().unwrap();
    let recorded = common::record_talking_run(dir.path(), "run-talk");
    let mut config = config(None);
    config.runs_dir = Some(dir.path().to_owned());
    config.token = Some(TOKEN.into());
    let server = serve_in_background(config).unwrap();
    let addr = server.addr;

    for episode in &recorded.episodes {
        let (operator, index) = (&episode.operator_id, episode.episode_index);
        let view = json_of(&get(
            addr,
            &format!("/api/runs/run-talk/episodes/{operator}/{index}"),
        ));
        let steps = recorded.episode_steps(operator, index);
        assert_eq!(view["steps"], episode.steps);
        assert_eq!(
            view["seed"],
            episode.seed.to_string(),
            "seeds travel as text"
        );
        let end = match (episode.terminated, episode.truncated) {
            (true, _) => "terminated",
            (false, true) => "truncated",
            (false, false) => "",
        };
        assert_eq!(view["end"], end);
        if operator == "talk" {
            assert_eq!(end, "truncated", "the agents stay: the step limit ends it");
        }
        let agents: Vec<&str> = view["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap())
            .collect();
        assert_eq!(agents, ["red", "blue"]);
        let timeline = view["timeline"].as_array().unwrap();
        assert_eq!(timeline.len(), steps.len());

        // The messages, as the records say they were posted, in step then agent order.
        let mut expected = Vec::new();
        for records in &steps {
            for r in records.iter() {
                let decision = r.decision.clone().unwrap_or_default();
                if let Some(text) = decision["message"].as_str() {
                    expected.push(json!({
                        "step": r.step_index,
                        "from": r.agent_id,
                        "to": decision.get("message_to").cloned().unwrap_or_default(),
                        "text": text,
                    }));
                }
            }
        }
        let messages = view["messages"].as_array().unwrap();
        let got: Vec<_> = messages
            .iter()
            .map(
                |m| json!({"step": m["step"], "from": m["from"], "to": m["to"], "text": m["text"]}),
            )
            .collect();
        assert_eq!(got, expected, "{operator} {index}");
        if operator == "quiet" {
            assert!(messages.is_empty());
        } else {
            assert!(
                messages.len() >= 4,
                "two of three answers talk: {messages:?}"
            );
            assert!(
                messages.iter().any(|m| m["to"] == "blue"),
                "an addressed one"
            );
            assert!(messages.iter().any(|m| m["to"].is_null()), "a broadcast");
        }
        for (m, message) in messages.iter().enumerate() {
            assert_eq!(message["scope"], "all");
            // Both agents decide at every step: the other one reads it at the next step.
            let step = message["step"].as_u64().unwrap();
            let other = if message["from"] == "red" {
                "blue"
            } else {
                "red"
            };
            let readers = if step + 1 < u64::from(episode.steps) {
                json!([{"agent": other, "step": step + 1}])
            } else {
                json!([])
            };
            assert_eq!(message["read_by"], readers, "message {m}: {message}");
        }

        for (shown, records) in timeline.iter().zip(&steps) {
            let step = records[0].step_index;
            assert_eq!(shown["step"], step);
            let decisions = shown["agents"].as_array().unwrap();
            assert_eq!(decisions.len(), records.len());
            for (d, r) in decisions.iter().zip(records.iter()) {
                assert_eq!(d["agent"], r.agent_id);
                assert_eq!(d["action"], json!(r.action_label));
                assert_eq!(d["reward"], json!(r.reward));
                let decision = r.decision.clone().unwrap_or_default();
                if operator == "quiet" {
                    assert!(d["received"].is_null() && d["heard"].is_null(), "{d}");
                    assert!(d["sent"].is_null() && d["scratchpad"].is_null(), "{d}");
                    continue;
                }
                // The LLM's own fields: reasoning, answer and prompt in the details; the
                // channel's and the scratchpad in their places.
                assert_eq!(d["scratchpad"], decision["scratchpad"]);
                assert!(
                    d["scratchpad"].as_str().unwrap().starts_with("plan "),
                    "{d}"
                );
                let detail = &d["detail"];
                assert_eq!(detail["raw"], decision["raw"]);
                assert_eq!(detail["think"], decision["think"]);
                assert!(
                    detail["think"]
                        .as_str()
                        .unwrap()
                        .starts_with("weighing move")
                );
                assert_eq!(detail["prompt"], decision["prompt"]);
                assert_eq!(detail["parse_ok"], true);
                for lifted in ["message", "message_to", "received", "scratchpad"] {
                    assert!(detail.get(lifted).is_none(), "{lifted} in {detail}");
                }
                let sent = d["sent"].as_u64().map(|i| &messages[i as usize]);
                match decision["message"].as_str() {
                    Some(text) => {
                        let sent = sent.expect("the message it sent");
                        assert_eq!((&sent["text"], &sent["step"]), (&json!(text), &json!(step)));
                    }
                    None => assert!(sent.is_none(), "{d}"),
                }
                // What it read: the recorded count, named.
                assert_eq!(d["received"], decision["received"]);
                let heard: Vec<u64> = d["heard"]
                    .as_array()
                    .unwrap_or_else(|| panic!("named: {d}"))
                    .iter()
                    .map(|i| i.as_u64().unwrap())
                    .collect();
                assert_eq!(heard.len() as u64, decision["received"].as_u64().unwrap());
                for i in heard {
                    let message = &messages[i as usize];
                    assert_eq!(message["step"].as_u64().unwrap() + 1, u64::from(step));
                    assert_ne!(message["from"], r.agent_id.as_str());
                }
            }
        }
    }

    // Errors: JSON with a fitting status.
    for (path, status, says) in [
        (
            "/api/runs/run-talk/episodes/talk/9",
            404,
            "no complete episode 9",
        ),
        ("/api/runs/run-talk/episodes/nobody/0", 404, "`nobody`"),
        (
            "/api/runs/run-none/episodes/talk/0",
            404,
            "no run `run-none`",
        ),
        ("/api/runs/run-talk/episodes/talk/x", 404, "not found"),
    ] {
        let answer = get(addr, path);
        assert_eq!(answer.status, status, "{path}: {}", answer.text());
        let message = json_of(&answer)["error"].as_str().unwrap().to_owned();
        assert!(message.contains(says), "{path}: {message}");
    }
}

#[test]
fn a_training_run_charts_its_curves_against_steps() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = common::record_training_run(dir.path(), "run-train");
    let serve = || {
        let mut served = config(None);
        served.runs_dir = Some(dir.path().to_owned());
        served.token = Some(TOKEN.into());
        serve_in_background(served).unwrap()
    };
    let server = serve();

    let updates: Vec<serde_json::Value> =
        std::fs::read_to_string(outcome.dir.join("updates.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    assert_eq!(updates.len() as u64, outcome.updates);
    assert_eq!(
        updates[0]["groups"],
        json!(["agent_0"]),
        "lines name the groups"
    );
    let charts = json_of(&get(server.addr, "/api/runs/run-train/charts"));
    let training = charts["training"]
        .as_array()
        .expect("a training run's curves");
    let chart = |id: &str| {
        training
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no chart {id}: {training:?}"))
    };
    // The points of the figure at `pointer` in each update line that has one.
    let points_of = |pointer: &str| -> serde_json::Value {
        updates
            .iter()
            .filter_map(|u| Some(json!([u["step"].as_f64()?, u.pointer(pointer)?.as_f64()?])))
            .collect()
    };
    let returns = &chart("mean_return")["series"][0];
    assert_eq!(returns["label"], "agent_0");
    assert_eq!(returns["points"], points_of("/mean_return/0"));
    assert!(
        returns["points"].as_array().unwrap().len() >= 4,
        "short episodes end in most updates: {returns}"
    );
    assert_eq!(
        chart("loss_value")["series"][0]["points"],
        points_of("/losses/0/value")
    );
    assert_eq!(
        chart("learning_rate")["series"][0]["points"],
        points_of("/learning_rate")
    );
    for id in ["loss_policy", "entropy", "approx_kl", "steps_per_s"] {
        assert_eq!(
            chart(id)["series"][0]["points"].as_array().unwrap().len(),
            updates.len(),
            "{id}"
        );
    }
    // The training episodes' returns, as any run's.
    let episodes = charts["returns"][0]["points"].as_array().unwrap();
    assert_eq!(episodes.len() as u64, outcome.episodes);

    // A line that is not an update is named.
    let path = outcome.dir.join("updates.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"no\": \"step\"}\n");
    std::fs::write(&path, text).unwrap();
    // A new report is built only when the run progressed: serve the directory afresh.
    drop(server);
    let server = serve();
    let answer = get(server.addr, "/api/runs/run-train/charts");
    assert_eq!(answer.status, 422, "{}", answer.text());
    let message = json_of(&answer)["error"].as_str().unwrap().to_owned();
    assert!(
        message.contains(&format!("updates.jsonl line {}", updates.len() + 1)),
        "{message}"
    );
}
