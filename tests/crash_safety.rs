//! Crash safety with the real binary: `mosaic run` killed with SIGKILL at many points of a
//! soccer run leaves a run that opens cleanly, lists as interrupted, reports, and holds every
//! episode logged before the kill intact: the same records as a clean run of the same
//! experiment under the same run id. `mosaic run` on it points at `mosaic resume`, which
//! finishes it with exactly the clean run's records: nothing lost, nothing twice. Episodes
//! cut short continue from their last durable checkpoint, also with the Python environment
//! families and policy workers.

// Shared with the external workers' tests; this test uses only part of it.
use mosaic_test_kit::python;

// Shared by the binary's tests; each uses part of it.
#[allow(dead_code)]
#[path = "support/cli.rs"]
mod cli;

use cli::{mosaic, text};
use mosaic_core::record::strip_volatile;
use mosaic_recorder::jsonl::open_lines;
use mosaic_recorder::{RunDir, RunStore, Unit};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const EXPERIMENT: &str = r#"
name = "crash"
episodes = 200
max_steps = 200
parallelism = 2
seeds = { plan = "procedural", base = 5 }

[[operators]]
id = "pitch"
env = "soccer-2v2"
agents = { "*" = { kind = "random" } }
"#;

const RUN_ID: &str = "crash";

fn run_command(file: &Path, out: &Path) -> Command {
    let mut command = mosaic();
    command
        .arg("run")
        .arg(file)
        .arg("--out")
        .arg(out)
        .args(["--run-id", RUN_ID])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// The complete lines of a run's step log, compressed or not, read the way every command
/// reads it.
fn step_log_lines(run: &Path) -> Vec<String> {
    let path = RunDir::open(run).unwrap().steps_path();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut open_lines(&path).unwrap(), &mut text).unwrap();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete.lines().map(str::to_owned).collect()
}

/// When to kill the run.
#[derive(Clone, Copy, Debug)]
enum KillPoint {
    /// This long after the start.
    After(Duration),
    /// Once `episodes.jsonl` holds this many lines.
    Episodes(usize),
    /// Once `steps.jsonl` holds this many lines.
    Steps(usize),
}

/// Complete lines of `episodes.jsonl` (0 while it does not exist).
fn episode_lines(run: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(run.join("episodes.jsonl")).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Starts the run, kills it (SIGKILL) at `point`, and returns the units whose episode line
/// was in the log at the moment of the kill.
fn run_and_kill(file: &Path, out: &Path, point: KillPoint) -> BTreeSet<Unit> {
    let started = Instant::now();
    let mut child = run_command(file, out).spawn().expect("mosaic run starts");
    let run = out.join(RUN_ID);
    loop {
        let due = match point {
            KillPoint::After(delay) => started.elapsed() >= delay,
            KillPoint::Episodes(n) => episode_lines(&run).len() >= n,
            KillPoint::Steps(n) => {
                std::fs::read_to_string(run.join("steps.jsonl"))
                    .map_or(0, |text| text.lines().count())
                    >= n
            }
        };
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{point:?} never came"
        );
        if due {
            break;
        }
        if let Some(status) = child.try_wait().expect("child status") {
            panic!("the run ended ({status}) before {point:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    episode_lines(&run)
        .iter()
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).expect("a full line");
            Unit::new(
                record["operator_id"].as_str().expect("operator id"),
                record["episode_index"].as_u64().expect("index") as u32,
            )
        })
        .collect()
}

/// Checks that the resumed run at `path` holds exactly the clean run's records: every planned
/// unit equal, no step line lost or doubled, a consistent store. Answers the resumed store.
fn assert_resumed_like_clean(
    path: &Path,
    clean: &RunDir,
    clean_store: &RunStore,
    label: &str,
) -> RunStore {
    let run = RunDir::open(path).unwrap();
    let store = run.store().unwrap();
    for unit in &clean_store.planned_units() {
        assert_eq!(
            stable_records(&store, unit),
            stable_records(clean_store, unit),
            "{label}: resumed {unit} differs from the clean run"
        );
    }
    assert_eq!(
        step_log_lines(path).len(),
        step_log_lines(clean.path()).len(),
        "{label}: step lines lost or doubled"
    );
    assert!(run.check_consistency(&store).unwrap().is_empty(), "{label}");
    store
}

/// Whether an episode of `store` continued from a checkpoint after a resume.
fn continued_from_checkpoint(store: &RunStore) -> bool {
    store.complete_episodes().map(|e| e.unwrap()).any(|e| {
        e.restarts
            .iter()
            .any(|r| r.child == "run" && r.recovery.contains("checkpoint at step"))
    })
}

/// A unit's records without the volatile fields.
fn stable_records(store: &RunStore, unit: &Unit) -> (serde_json::Value, Vec<serde_json::Value>) {
    let mut episode = serde_json::to_value(store.episode(unit).unwrap().unwrap()).unwrap();
    strip_volatile(&mut episode);
    let steps = store
        .steps_of(unit)
        .unwrap()
        .iter()
        .map(|record| {
            let mut value = serde_json::to_value(record).unwrap();
            strip_volatile(&mut value);
            value
        })
        .collect();
    (episode, steps)
}

#[test]
fn a_killed_run_keeps_every_logged_episode_intact_and_resumes_to_the_clean_records() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("crash.toml");
    std::fs::write(&file, EXPERIMENT).unwrap();

    let clean_out = dir.path().join("clean");
    let status = run_command(&file, &clean_out).status().unwrap();
    assert!(status.success(), "the clean run failed");
    let clean = RunDir::open(&clean_out.join(RUN_ID)).unwrap();
    let clean_store = clean.store().unwrap();
    assert_eq!(clean_store.completed_count(), 200);

    let points = [
        KillPoint::After(Duration::from_millis(5)),
        KillPoint::After(Duration::from_millis(40)),
        KillPoint::After(Duration::from_millis(150)),
        KillPoint::Episodes(1),
        KillPoint::Episodes(3),
        KillPoint::Episodes(8),
        KillPoint::Episodes(15),
        KillPoint::Episodes(27),
        KillPoint::Episodes(42),
        KillPoint::Episodes(60),
        KillPoint::Episodes(85),
        KillPoint::Episodes(120),
    ];
    let mut kills_with_episodes = 0;
    for (number, point) in points.into_iter().enumerate() {
        let out = dir.path().join(format!("killed-{number}"));
        let logged = run_and_kill(&file, &out, point);
        let path = out.join(RUN_ID);
        if !path.join("run.json").exists() {
            // Killed before the run directory was made: nothing to recover.
            assert!(logged.is_empty());
            continue;
        }
        kills_with_episodes += usize::from(!logged.is_empty());

        let runs = mosaic().arg("runs").arg(&out).output().unwrap();
        assert!(runs.status.success(), "{point:?}: {}", text(&runs));
        let listed = String::from_utf8_lossy(&runs.stdout).into_owned();
        assert!(
            listed
                .lines()
                .any(|l| l.starts_with(RUN_ID) && l.contains("interrupted")),
            "{point:?}: {listed}"
        );
        let report = mosaic().arg("report").arg(&path).output().unwrap();
        assert!(report.status.success(), "{point:?}: {}", text(&report));

        let run = RunDir::open(&path).unwrap();
        let store = run.store().unwrap();
        let complete: BTreeSet<Unit> = store.completed_units().unwrap().into_iter().collect();
        assert!(
            logged.is_subset(&complete),
            "{point:?}: logged {logged:?}, complete {complete:?}"
        );
        assert!(complete.len() < 200, "{point:?}: the run finished");
        for unit in &complete {
            assert_eq!(
                stable_records(&store, unit),
                stable_records(&clean_store, unit),
                "{point:?}: {unit} differs from the clean run"
            );
        }
        let problems = run.check_consistency(&store).unwrap();
        assert!(problems.is_empty(), "{point:?}: {problems:?}");
        drop(store);

        let again = run_command(&file, &out)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(again.status.code(), Some(2), "{point:?}: {}", text(&again));
        assert!(
            text(&again).contains(&format!("mosaic resume {}", path.display())),
            "{point:?}: {}",
            text(&again)
        );
        let resumed = mosaic().arg("resume").arg(&path).output().unwrap();
        assert!(resumed.status.success(), "{point:?}: {}", text(&resumed));
        let store = run.store().unwrap();
        assert_eq!(store.completed_count(), 200, "{point:?}");
        for unit in clean_store.completed_units().unwrap() {
            assert_eq!(
                stable_records(&store, &unit),
                stable_records(&clean_store, &unit),
                "{point:?}: resumed {unit} differs from the clean run"
            );
        }
        assert_eq!(
            step_log_lines(&path).len(),
            step_log_lines(clean.path()).len(),
            "{point:?}: step lines lost or doubled"
        );
        assert_eq!(episode_lines(&path).len(), 200, "{point:?}");
        let problems = run.check_consistency(&store).unwrap();
        assert!(problems.is_empty(), "{point:?}: {problems:?}");
        drop(store);
        let finished = mosaic().arg("resume").arg(&path).output().unwrap();
        assert_eq!(finished.status.code(), Some(2), "{point:?}");
        assert!(
            text(&finished).contains("nothing to resume"),
            "{}",
            text(&finished)
        );
    }
    assert!(
        kills_with_episodes >= 9,
        "only {kills_with_episodes} kills came after an episode was logged"
    );
}

/// The records of a step line without its volatile fields.
fn stable_line(line: &str) -> serde_json::Value {
    let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
    strip_volatile(&mut value);
    value
}

#[test]
fn a_killed_compressed_run_keeps_its_frames_and_resumes_to_the_plain_records() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("crash.toml");
    std::fs::write(&file, EXPERIMENT).unwrap();
    // The clean run writes a plain log: the compressed runs must hold the same records.
    let clean_out = dir.path().join("clean");
    assert!(run_command(&file, &clean_out).status().unwrap().success());
    let clean = RunDir::open(&clean_out.join(RUN_ID)).unwrap();
    let clean_store = clean.store().unwrap();
    let clean_steps: Vec<_> = step_log_lines(clean.path())
        .iter()
        .map(|l| stable_line(l))
        .collect();

    let points = [
        KillPoint::After(Duration::from_millis(40)),
        KillPoint::Episodes(3),
        KillPoint::Episodes(27),
        KillPoint::Episodes(85),
    ];
    for (number, point) in points.into_iter().enumerate() {
        let out = dir.path().join(format!("compressed-{number}"));
        let started = Instant::now();
        let mut child = run_command(&file, &out)
            .arg("--compress")
            .spawn()
            .expect("mosaic run starts");
        let path = out.join(RUN_ID);
        loop {
            let due = match point {
                KillPoint::After(delay) => started.elapsed() >= delay,
                KillPoint::Episodes(n) => episode_lines(&path).len() >= n,
                KillPoint::Steps(_) => unreachable!("not used here"),
            };
            assert!(started.elapsed() < Duration::from_secs(30), "{point:?}");
            if due {
                break;
            }
            assert!(child.try_wait().unwrap().is_none(), "{point:?}: run ended");
            std::thread::sleep(Duration::from_millis(2));
        }
        child.kill().expect("SIGKILL");
        child.wait().unwrap();
        if !path.join("run.json").exists() {
            continue;
        }
        let log = path.join("steps.jsonl.zst");
        assert!(log.exists(), "{point:?}: no compressed log");
        assert!(!path.join("steps.jsonl").exists(), "{point:?}");
        let logged = episode_lines(&path).len();
        // The kill may or may not have cut a frame; make sure the last one is cut: half of
        // a frame glued on, as a write interrupted mid-way leaves it.
        let frame_path = dir.path().join("frame.jsonl.zst");
        let mut writer =
            mosaic_recorder::JsonlWriter::create(&frame_path, mosaic_recorder::Compression::Zstd)
                .unwrap();
        writer.append_lines(b"{\"not\":\"a record\"}\n").unwrap();
        writer.flush().unwrap();
        drop(writer);
        let frame = std::fs::read(&frame_path).unwrap();
        let mut bytes = std::fs::read(&log).unwrap();
        bytes.extend_from_slice(&frame[..frame.len() / 2]);
        std::fs::write(&log, &bytes).unwrap();

        let runs = mosaic().arg("runs").arg(&out).output().unwrap();
        assert!(runs.status.success(), "{point:?}: {}", text(&runs));
        assert!(
            String::from_utf8_lossy(&runs.stdout).contains("interrupted"),
            "{point:?}: {}",
            text(&runs)
        );
        let report = mosaic().arg("report").arg(&path).output().unwrap();
        assert!(report.status.success(), "{point:?}: {}", text(&report));
        let run = RunDir::open(&path).unwrap();
        let store = run.store().unwrap();
        assert!(store.completed_count() >= logged, "{point:?}");
        for unit in store.completed_units().unwrap() {
            assert_eq!(
                stable_records(&store, &unit),
                stable_records(&clean_store, &unit),
                "{point:?}: {unit} differs from the clean run"
            );
        }
        assert!(
            run.check_consistency(&store).unwrap().is_empty(),
            "{point:?}"
        );
        drop(store);

        let resumed = mosaic().arg("resume").arg(&path).output().unwrap();
        assert!(resumed.status.success(), "{point:?}: {}", text(&resumed));
        assert!(path.join("steps.jsonl.zst").exists(), "{point:?}");
        assert!(!path.join("steps.jsonl").exists(), "{point:?}");
        let store = assert_resumed_like_clean(&path, &clean, &clean_store, &format!("{point:?}"));
        assert_eq!(store.completed_count(), 200);
        let mut resumed_steps: Vec<_> = step_log_lines(&path)
            .iter()
            .map(|l| stable_line(l))
            .collect();
        let mut expected = clean_steps.clone();
        let key = |v: &serde_json::Value| {
            (
                v["episode_index"].as_u64(),
                v["step_index"].as_u64(),
                v["agent_id"].as_str().map(str::to_owned),
            )
        };
        resumed_steps.sort_by_key(key);
        expected.sort_by_key(key);
        assert!(resumed_steps == expected, "{point:?}: step records differ");
        let exported = mosaic()
            .args(["export", "--format", "jsonl"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(exported.status.success(), "{point:?}: {}", text(&exported));
        assert_eq!(
            String::from_utf8_lossy(&exported.stdout).lines().count(),
            expected.len(),
            "{point:?}"
        );
    }
}

/// Long, paced episodes with frequent checkpoints: kills land in the middle of episodes.
const CHECKPOINTED: &str = r#"
name = "checkpointed"
episodes = 6
parallelism = 2
pace_ms = 2
seeds = { plan = "procedural", base = 11 }
supervision = { checkpoint_interval_ms = 25 }

[[operators]]
id = "pitch"
env = "soccer-2v2"
agents = { "*" = { kind = "random" }, green_0 = { kind = "cycling" } }
"#;

#[test]
fn episodes_cut_short_continue_from_their_checkpoints_to_the_clean_records() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("checkpointed.toml");
    std::fs::write(&file, CHECKPOINTED).unwrap();
    let clean_out = dir.path().join("clean");
    assert!(run_command(&file, &clean_out).status().unwrap().success());
    let clean = RunDir::open(&clean_out.join(RUN_ID)).unwrap();
    let clean_store = clean.store().unwrap();
    let planned = clean_store.planned_units();
    assert_eq!(clean_store.completed_count(), planned.len());

    let mut continued = 0;
    let delays = [150, 350, 550, 750, 950, 1150, 1350, 1550, 1750, 1950];
    for (number, delay) in delays.into_iter().enumerate() {
        let point = KillPoint::After(Duration::from_millis(delay));
        let out = dir.path().join(format!("killed-{number}"));
        run_and_kill(&file, &out, point);
        let path = out.join(RUN_ID);
        let resumed = mosaic().arg("resume").arg(&path).output().unwrap();
        assert!(resumed.status.success(), "{point:?}: {}", text(&resumed));
        let store = assert_resumed_like_clean(&path, &clean, &clean_store, &format!("{point:?}"));
        continued += usize::from(continued_from_checkpoint(&store));
    }
    assert!(
        continued >= delays.len() / 2,
        "only {continued} of {} kills left an episode that continued from a checkpoint",
        delays.len()
    );
}

/// Two configurations side by side, one episode at a time: run order is visible in
/// `episodes.jsonl`.
const SIDE_BY_SIDE: &str = r#"
name = "order"
episodes = 8
parallelism = 1
pace_ms = 1
seeds = { plan = "procedural", base = 3 }

[[operators]]
id = "first"
env = "soccer-2v2"
agents = { "*" = { kind = "random" } }

[[operators]]
id = "second"
env = "soccer-2v2"
agents = { "*" = { kind = "cycling" } }
"#;

#[test]
fn a_resumed_run_keeps_the_run_order_of_configurations_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("order.toml");
    std::fs::write(&file, SIDE_BY_SIDE).unwrap();
    let out = dir.path().join("killed");
    let logged = run_and_kill(&file, &out, KillPoint::Episodes(3));
    assert!(logged.len() < 16, "the run finished before the kill");
    let path = out.join(RUN_ID);
    let resumed = mosaic().arg("resume").arg(&path).output().unwrap();
    assert!(resumed.status.success(), "{}", text(&resumed));
    let order: Vec<(u64, u64)> = episode_lines(&path)
        .iter()
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            let operator = match record["operator_id"].as_str() {
                Some("first") => 0,
                Some("second") => 1,
                other => panic!("unknown operator {other:?}"),
            };
            (record["episode_index"].as_u64().unwrap(), operator)
        })
        .collect();
    assert_eq!(order.len(), 16);
    assert!(
        order.windows(2).all(|pair| pair[0] < pair[1]),
        "episodes ran out of run order (episode, operator): {order:?}"
    );
}

/// An experiment on the Python environment `env`, every agent a Python policy worker, with
/// a durable checkpoint at every step.
fn python_experiment(env: &str) -> String {
    let py = python::python_env();
    format!(
        r#"
name = "python-crash"
episodes = 4
max_steps = 30
pace_ms = 2
seeds = {{ plan = "procedural", base = 21 }}
supervision = {{ checkpoint_interval_ms = 0 }}

[[operators]]
id = "game"
env = "{env}"
env_settings = {{ python = "{python}" }}
agents = {{ "*" = {{ kind = "worker", command = ["{python}", "-m", "mosaic_worker", "policy", "random"] }} }}
"#,
        python = py.python
    )
}

#[test]
fn python_families_killed_with_the_orchestrator_resume_to_the_clean_records() {
    let dir = tempfile::tempdir().unwrap();
    for env in [
        "gymnasium:MiniGrid-DoorKey-5x5-v0",
        "pettingzoo:classic/chess_v6",
        "pettingzoo:classic/connect_four_v3",
        "pettingzoo:classic/tictactoe_v3",
        "pettingzoo:mpe2/simple_spread_v3",
    ] {
        let name = env.replace([':', '/'], "_");
        let file = dir.path().join(format!("{name}.toml"));
        std::fs::write(&file, python_experiment(env)).unwrap();
        let clean_out = dir.path().join(format!("{name}-clean"));
        let clean_run = run_command(&file, &clean_out).status().unwrap();
        assert!(clean_run.success(), "{env}: the clean run failed");
        let clean = RunDir::open(&clean_out.join(RUN_ID)).unwrap();
        let clean_store = clean.store().unwrap();
        let planned = clean_store.planned_units();

        // Killed in the middle of the third episode.
        let steps = std::fs::read_to_string(clean.path().join("steps.jsonl")).unwrap();
        let episode_of = |line: &str| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["episode_index"].as_u64()
        };
        let before = steps.lines().filter(|l| episode_of(l) < Some(2)).count();
        let third = steps.lines().filter(|l| episode_of(l) == Some(2)).count();
        let out = dir.path().join(format!("{name}-killed"));
        let logged = run_and_kill(&file, &out, KillPoint::Steps(before + third / 2));
        assert!(logged.len() < planned.len(), "{env}: the run had ended");
        let path = out.join(RUN_ID);
        let resumed = mosaic().arg("resume").arg(&path).output().unwrap();
        assert!(resumed.status.success(), "{env}: {}", text(&resumed));
        let store = assert_resumed_like_clean(&path, &clean, &clean_store, env);
        assert!(
            continued_from_checkpoint(&store),
            "{env}: no episode continued from a checkpoint"
        );
    }
}
