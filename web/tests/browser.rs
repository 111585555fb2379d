//! Manual mode, the runs browser, the episode viewer and the charts in a real browser:
//! Debian's chromium driven by Playwright (`tests/browser/manual.mjs`, `runs.mjs`,
//! `episodes.mjs`, `charts.mjs`). The browser and playwright-core come from
//! `scripts/setup/browser.sh` (run here unless `MOSAIC_CHROMIUM` and
//! `MOSAIC_PLAYWRIGHT_DIR` are set already). Screenshots are saved in
//! `<target>/web-artifacts/`. What the browser played is recorded; once the server has
//! stopped, the run directory is checked with the recorder.

mod common;

use common::{record_run, serve_in_background};
use mosaic_core::{Action, Environment, ExperimentSpec, Stepping, Transition};
use mosaic_recorder::replay::{ReplayedStep, replay};
use mosaic_recorder::{RunDir, RunStatus, Unit};
use mosaic_test_kit::walk::Walk;
use mosaic_web::{RecordConfig, ServeConfig};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

const TOKEN: &str = "browser-test-token-7";
const MANUAL_RUN: &str = "manual-walk";
const TAMPERED_RUN: &str = "run-tampered";
const ABANDONED_RUN: &str = "run-abandoned";

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Chromium and playwright-core (see `scripts/setup/browser.sh`).
fn browser_tools() -> BTreeMap<String, String> {
    mosaic_test_kit::setup::variables("browser.sh", &["MOSAIC_CHROMIUM", "MOSAIC_PLAYWRIGHT_DIR"])
}

fn artifacts_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir().join("../target"));
    target.join("web-artifacts")
}

fn png(env: &dyn Environment) -> Vec<u8> {
    env.render().unwrap().to_png().unwrap()
}

/// The first seed whose world lets the red agent step right without reaching the goal,
/// and the frames before and after that move (blue stays).
fn seed_for_a_move_right() -> (u64, Vec<u8>, Vec<u8>) {
    let mut env = Walk::new(Stepping::Simultaneous, 8, 6);
    for seed in 1.. {
        env.reset(seed).unwrap();
        if !env.legal(0)[2] {
            continue;
        }
        let before = png(&env);
        let mut transition = Transition::new(2);
        env.step(&[Some(Action(2)), Some(Action(0))], &mut transition)
            .unwrap();
        if transition.all_done() {
            continue;
        }
        return (seed, before, png(&env));
    }
    unreachable!("some seed lets red move right")
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

#[test]
fn manual_mode_and_replays_in_a_real_browser() {
    let tools = browser_tools();
    let work = tempfile::tempdir().unwrap();
    let expected = work.path().join("expected");
    let played = work.path().join("played");
    let runs = work.path().join("runs");
    std::fs::create_dir_all(&expected).unwrap();
    std::fs::create_dir_all(&played).unwrap();
    std::fs::create_dir_all(&runs).unwrap();
    let artifacts = artifacts_dir();
    std::fs::create_dir_all(&artifacts).unwrap();

    // A recorded run to browse and replay.
    let recorded_spec: ExperimentSpec = serde_json::from_value(json!({
        "name": "walk-baselines",
        "episodes": 3,
        "seeds": {"plan": "procedural", "base": 40},
        "max_steps": 25,
        "operators": [
            {"id": "pair", "env": "walk", "agents": {"red": {"kind": "random"}, "blue": {"kind": "cycling"}}},
            {"id": "turns", "env": "walk", "env_settings": {"stepping": "sequential"}, "agents": {"*": {"kind": "random"}}}
        ]
    }))
    .unwrap();
    let recorded = record_run(&runs, "run-walk", recorded_spec);
    let replayed = recorded
        .episodes
        .iter()
        .filter(|e| e.operator_id == "pair")
        .max_by_key(|e| e.steps)
        .unwrap();
    assert!(replayed.steps >= 3, "an episode long enough to scrub");
    let frames = common::expected_frames(
        &Default::default(),
        replayed.seed,
        &recorded.episode_steps("pair", replayed.episode_index),
    );
    for (k, frame) in frames.iter().enumerate() {
        write(&expected, &format!("replay-{k}.png"), frame);
    }

    // A run whose replay fails (a reward was altered), and one whose only episode was
    // abandoned (ended by Reset All) after a few steps.
    let short_spec: ExperimentSpec = serde_json::from_value(json!({
        "name": "walk-short",
        "episodes": 1,
        "seeds": {"plan": "fixed", "seed": 8},
        "max_steps": 6,
        "operators": [{"id": "pair", "env": "walk", "agents": {"*": {"kind": "noop"}}}]
    }))
    .unwrap();
    let (steps, mut abandoned) = common::run_experiment(ABANDONED_RUN, &short_spec);
    for episode in &mut abandoned {
        episode.terminated = false;
        episode.truncated = false;
        episode.error = Some("abandoned by reset".into());
    }
    common::write_run(&runs, ABANDONED_RUN, &short_spec, &steps, &abandoned);
    let (mut steps, episodes) = common::run_experiment(TAMPERED_RUN, &short_spec);
    for record in steps.iter_mut().flatten() {
        if record.step_index == 2 && record.agent_id == "blue" {
            record.reward = 0.5;
        }
    }
    common::write_run(&runs, TAMPERED_RUN, &short_spec, &steps, &episodes);

    // The live experiment: a human against a noop, its mirror with baselines (same
    // environment, same seed), an AEC game and a single-agent game.
    let (seed, first, after_right) = seed_for_a_move_right();
    write(&expected, "first.png", &first);
    write(&expected, "after-right.png", &after_right);
    let spec: ExperimentSpec = serde_json::from_value(json!({
        "name": "manual-mode",
        "episodes": 5,
        "seeds": {"plan": "procedural", "base": seed},
        "max_steps": 40,
        "operators": [
            {"id": "duel", "env": "walk", "agents": {"red": {"kind": "human"}, "blue": {"kind": "noop"}}},
            {"id": "mirror", "env": "walk", "agents": {"red": {"kind": "cycling"}, "blue": {"kind": "random"}}},
            {"id": "turns", "env": "walk", "env_settings": {"stepping": "sequential"}, "agents": {"*": {"kind": "cycling"}}},
            {"id": "solo", "env": "walk", "env_settings": {"stepping": "single"}, "agents": {"*": {"kind": "random"}}}
        ]
    }))
    .unwrap();
    let mut config = ServeConfig::new(
        common::registry(),
        mosaic_actors::DeciderRegistry::baselines(),
    );
    config.experiment = Some(spec.clone());
    config.bind = "127.0.0.1:0".parse().unwrap();
    config.token = Some(TOKEN.into());
    config.runs_dir = Some(runs.clone());
    config.record = Some(RecordConfig {
        dir: runs.join(MANUAL_RUN),
        run_id: MANUAL_RUN.into(),
        versions: Default::default(),
    });
    let server = serve_in_background(config).unwrap();

    run_script("manual.mjs", &tools, |node| {
        node.env("MOSAIC_URL", format!("http://{}", server.addr))
            .env("MOSAIC_TOKEN", TOKEN)
            .env("MOSAIC_EXPECTED", &expected)
            .env("MOSAIC_ARTIFACTS", &artifacts)
            .env("MOSAIC_RUN", "run-walk")
            .env("MOSAIC_REPLAY", format!("pair/{}", replayed.episode_index))
            .env("MOSAIC_REPLAY_STEPS", replayed.steps.to_string())
            .env("MOSAIC_MANUAL_RUN", MANUAL_RUN)
            .env("MOSAIC_TAMPERED_RUN", TAMPERED_RUN)
            .env("MOSAIC_ABANDONED_RUN", ABANDONED_RUN)
            .env("MOSAIC_PLAYED", &played);
    });
    for shot in [
        "manual-waiting.png",
        "manual.png",
        "replay.png",
        "manual-replay.png",
    ] {
        let bytes = std::fs::read(artifacts.join(shot)).unwrap();
        assert_eq!(&bytes[1..4], b"PNG", "{shot}");
    }
    drop(server);
    check_manual_run(&runs.join(MANUAL_RUN), &spec, &played, &after_right);
}

/// Runs the browser script `name` of `tests/browser` with the tools and what `configure`
/// adds; fails when the script does.
fn run_script(name: &str, tools: &BTreeMap<String, String>, configure: impl FnOnce(&mut Command)) {
    let mut node = Command::new("node");
    node.arg(name)
        .current_dir(manifest_dir().join("tests/browser"))
        .envs(tools);
    configure(&mut node);
    let output = node.output().expect("node runs (install nodejs)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        output.status.success(),
        "the browser script {name} failed:\n{stdout}\n{stderr}"
    );
}

/// The first seed from which soccer's `green_0` starts facing up.
fn seed_where_green_0_faces_up() -> u64 {
    let envs = mosaic_adapters::native_envs();
    let mut env = envs.make("soccer-2v2", &Default::default()).unwrap();
    let text = mosaic_core::ObsRequest {
        text: true,
        ..mosaic_core::ObsRequest::MASK_ONLY
    };
    (1..)
        .find(|seed| {
            env.reset(*seed).unwrap();
            env.observe(0, text).info.unwrap()[mosaic_core::FACING_INFO] == "up"
        })
        .unwrap()
}

/// A person playing soccer's `green_0`: the page names and the frame marks the agent, the
/// arrow keys are explained, and on-screen arrows turn it and move it.
#[test]
fn relative_moves_are_explained_to_a_human_player() {
    let tools = browser_tools();
    let spec: ExperimentSpec = serde_json::from_value(json!({
        "name": "pitch",
        "episodes": 1,
        "seeds": {"plan": "fixed", "seed": seed_where_green_0_faces_up()},
        "max_steps": 30,
        "operators": [{"id": "pitch", "env": "soccer-2v2", "agents": {
            "green_0": {"kind": "human"}, "green_1": {"kind": "scripted"}, "*": {"kind": "random"}
        }}]
    }))
    .unwrap();
    let mut config = ServeConfig::new(
        mosaic_adapters::native_envs(),
        mosaic_actors::DeciderRegistry::baselines(),
    );
    config.experiment = Some(spec);
    config.bind = "127.0.0.1:0".parse().unwrap();
    let server = serve_in_background(config).unwrap();
    run_script("human.mjs", &tools, |node| {
        node.env("MOSAIC_URL", format!("http://{}", server.addr));
    });
}

/// The run recorded while the browser played: consistent, complete, one record per agent
/// per step taken, and replaying to the frames the page showed.
fn check_manual_run(path: &Path, spec: &ExperimentSpec, played: &Path, after_right: &[u8]) {
    let steps_taken: HashMap<String, u32> =
        serde_json::from_slice(&std::fs::read(played.join("played.json")).unwrap()).unwrap();
    let run = RunDir::open(path).unwrap();
    let summary = run.summary().unwrap();
    assert_eq!(
        (summary.status, summary.done),
        (RunStatus::Complete, spec.operators.len()),
        "the episode played in every viewport, nothing else (the last one took no step)"
    );
    let store = run.store().unwrap();
    assert_eq!(run.check_consistency(&store).unwrap(), Vec::<String>::new());
    for operator in &spec.operators {
        let unit = Unit::new(operator.id.as_str(), 0);
        let record = store.episode(&unit).unwrap().unwrap();
        let steps = store.steps_of(&unit).unwrap();
        let taken = steps_taken[&operator.id];
        assert_eq!(record.steps, taken, "{unit}: steps recorded = steps taken");
        let mut indices: Vec<u32> = steps.iter().map(|r| r.step_index).collect();
        indices.dedup();
        assert_eq!(indices, (0..taken).collect::<Vec<_>>(), "{unit}");
        assert!(
            record.terminated || record.error.as_deref() == Some("abandoned by reset"),
            "{unit}: {:?}",
            record.error
        );
        let mut env = common::registry()
            .make(&operator.env, &operator.env_settings)
            .unwrap();
        let mut frames = Vec::new();
        replay(
            env.as_mut(),
            &record,
            &steps,
            spec.max_steps,
            |env: &dyn Environment, _: &ReplayedStep<'_>| {
                frames.push(png(env));
                Ok(())
            },
        )
        .unwrap();
        let shown = std::fs::read(played.join(format!("live-{}.png", operator.id))).unwrap();
        assert!(
            frames.last() == Some(&shown),
            "{unit}: the replay ends on the frame shown"
        );
        if operator.id == "duel" {
            let human = &steps[0];
            assert_eq!(
                (
                    human.agent_id.as_str(),
                    human.kind.as_str(),
                    human.action_label.as_deref()
                ),
                ("red", "human", Some("right")),
                "the key press is recorded"
            );
            assert!(
                frames[0] == after_right,
                "the replay moves the human agent right"
            );
        }
    }
}

/// Copies the directory `from` into `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// `count` small runs in `dir`: copies of one synthetic run (one episode of one step), each
/// with one of five experiment names and start times a second apart. They keep the run id
/// of the run copied, which its store records.
fn many_runs(dir: &Path, count: usize) {
    use mosaic_recorder::synthetic;
    let template = dir.join(".template");
    let manifest = synthetic::manifest("sweep", &["solo"], 1, 1);
    drop(synthetic::write_run(&template, &manifest, 1, 2).unwrap());
    synthetic::wait_for_unlock(&template.join("store")).unwrap();
    let mut manifest = serde_json::to_value(&manifest).unwrap();
    for i in 0..count {
        let name = format!("run-{i:04}");
        let path = dir.join(&name);
        copy_dir(&template, &path);
        manifest["experiment"]["name"] = json!(format!("sweep-{}", i % 5));
        manifest["started"] = json!(1_700_000_000_000_u64 + 1000 * i as u64);
        std::fs::write(path.join("run.json"), manifest.to_string()).unwrap();
    }
    std::fs::remove_dir_all(&template).unwrap();
}

/// When `run-other` of the runs-list test started: 14 November 2023, days before the others.
const OTHER_STARTED_MS: u64 = 1_700_000_000_000;

#[test]
fn the_runs_list_sorts_filters_and_compares_in_a_real_browser() {
    const MANY: usize = 1000;
    let tools = browser_tools();
    let work = tempfile::tempdir().unwrap();
    let artifacts = artifacts_dir();
    std::fs::create_dir_all(&artifacts).unwrap();
    let spec = |name: &str, red: &str| -> ExperimentSpec {
        serde_json::from_value(json!({
            "name": name,
            "episodes": 6,
            "seeds": {"plan": "procedural", "base": 21},
            "max_steps": 15,
            "operators": [
                {"id": "pair", "env": "walk", "agents": {"red": {"kind": red}, "blue": {"kind": "cycling"}}},
                {"id": "still", "env": "walk", "agents": {"*": {"kind": "noop"}}}
            ]
        }))
        .unwrap()
    };
    let few = work.path().join("runs");
    record_run(&few, "run-a", spec("walks", "random"));
    record_run(&few, "run-b", spec("walks", "cycling"));
    record_run(&few, "run-other", spec("elsewhere", "random"));
    // Started on an earlier day, for the date filter.
    let manifest_path = few.join("run-other").join("run.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    manifest["started"] = json!(OTHER_STARTED_MS);
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let many = work.path().join("many");
    let made = std::time::Instant::now();
    many_runs(&many, MANY);
    println!("{MANY} runs made in {:?}", made.elapsed());
    let empty = work.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();

    let serve = |runs: Option<&Path>| {
        let mut config = ServeConfig::new(
            common::registry(),
            mosaic_actors::DeciderRegistry::baselines(),
        );
        config.bind = "127.0.0.1:0".parse().unwrap();
        config.runs_dir = runs.map(Path::to_owned);
        serve_in_background(config).unwrap()
    };
    let (few_server, many_server, empty_server, no_dir_server) = (
        serve(Some(&few)),
        serve(Some(&many)),
        serve(Some(&empty)),
        serve(None),
    );
    let url = |server: &common::Running| format!("http://{}", server.addr);
    run_script("runs.mjs", &tools, |node| {
        node.env("MOSAIC_URL", url(&few_server))
            .env("MOSAIC_MANY_URL", url(&many_server))
            .env("MOSAIC_MANY_COUNT", MANY.to_string())
            .env("MOSAIC_EMPTY_URL", url(&empty_server))
            .env("MOSAIC_EMPTY_DIR", "empty")
            .env("MOSAIC_OTHER_STARTED_MS", OTHER_STARTED_MS.to_string())
            .env("MOSAIC_NO_DIR_URL", url(&no_dir_server))
            .env("MOSAIC_ARTIFACTS", &artifacts);
    });
    let bytes = std::fs::read(artifacts.join("runs-compare.png")).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
}

#[test]
fn an_episode_is_viewed_step_by_step_in_a_real_browser() {
    const RUN: &str = "run-talk";
    let tools = browser_tools();
    let work = tempfile::tempdir().unwrap();
    let artifacts = artifacts_dir();
    std::fs::create_dir_all(&artifacts).unwrap();
    common::record_talking_run(work.path(), RUN);
    let serve = |replayable: bool| {
        let mut config = ServeConfig::new(
            common::registry(),
            mosaic_actors::DeciderRegistry::baselines(),
        );
        config.bind = "127.0.0.1:0".parse().unwrap();
        config.runs_dir = Some(work.path().to_owned());
        if replayable {
            config.replay_envs = common::registry();
        }
        serve_in_background(config).unwrap()
    };
    let (server, no_replay) = (serve(true), serve(false));
    run_script("episodes.mjs", &tools, |node| {
        node.env("MOSAIC_URL", format!("http://{}", server.addr))
            .env("MOSAIC_NO_REPLAY_URL", format!("http://{}", no_replay.addr))
            .env("MOSAIC_RUN", RUN)
            .env("MOSAIC_ARTIFACTS", &artifacts);
    });
    let bytes = std::fs::read(artifacts.join("episode-viewer.png")).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
}

#[test]
fn charts_hover_smooth_and_zoom_in_a_real_browser() {
    const TRAINING: &str = "run-train";
    const RUN: &str = "run-walks";
    let tools = browser_tools();
    let work = tempfile::tempdir().unwrap();
    let artifacts = artifacts_dir();
    std::fs::create_dir_all(&artifacts).unwrap();
    common::record_training_run(work.path(), TRAINING);
    // Random walkers against cycling ones: returns that vary from episode to episode.
    let spec: ExperimentSpec = serde_json::from_value(json!({
        "name": "walks",
        "episodes": 40,
        "seeds": {"plan": "procedural", "base": 5},
        "max_steps": 15,
        "operators": [
            {"id": "pair", "env": "walk", "agents": {"red": {"kind": "random"}, "blue": {"kind": "cycling"}}}
        ]
    }))
    .unwrap();
    record_run(work.path(), RUN, spec);
    let mut config = ServeConfig::new(
        common::registry(),
        mosaic_actors::DeciderRegistry::baselines(),
    );
    config.bind = "127.0.0.1:0".parse().unwrap();
    config.runs_dir = Some(work.path().to_owned());
    let server = serve_in_background(config).unwrap();
    run_script("charts.mjs", &tools, |node| {
        node.env("MOSAIC_URL", format!("http://{}", server.addr))
            .env("MOSAIC_TRAINING_RUN", TRAINING)
            .env("MOSAIC_RUN", RUN)
            .env("MOSAIC_ARTIFACTS", &artifacts);
    });
    let bytes = std::fs::read(artifacts.join("charts.png")).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
}
