//! `mosaic replay` with the real binary on a real soccer run: a faithful replay with text
//! views and PNG frames, records that the environment contradicts (exit 1, naming the first
//! differing step, agent and field), and bad input (exit 2).

use mosaic_recorder::{RunDir, Unit};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn mosaic(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .args(args)
        .output()
        .expect("the mosaic binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A soccer run of the A7 configuration (scripted green against random blue) in `root/r`.
fn soccer_run(root: &Path) -> PathBuf {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/experiments/a7-scripted-vs-random.toml");
    let output = mosaic(&["run", path(&file), "--out", path(root), "--run-id", "r"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    root.join("r")
}

#[test]
fn a_recorded_episode_replays_with_text_views_and_frames() {
    let dir = tempfile::tempdir().unwrap();
    let run = soccer_run(dir.path());
    let frames = dir.path().join("frames");
    let output = mosaic(&[
        "replay",
        path(&run),
        "--episode",
        "r-a7-ep000004",
        "--frames",
        path(&frames),
    ]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let steps = {
        let run = RunDir::open(&run).unwrap();
        let store = run.store().unwrap();
        store.episode(&Unit::new("a7", 4)).unwrap().unwrap().steps
    };
    assert!(
        stdout.contains("== step 0\n-- green_0 sees:\n   You are green_0"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("== step ").count(), steps as usize);
    assert!(
        stdout.ends_with(&format!(
            "replay matches the records: {steps} steps, {} step records\n",
            steps * 4
        )),
        "{stdout}"
    );
    // One frame per step plus the final state, every one a PNG.
    let mut names: Vec<String> = std::fs::read_dir(&frames)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let expected: Vec<String> = (0..=steps).map(|i| format!("step-{i:06}.png")).collect();
    assert_eq!(names, expected);
    let png = std::fs::read(frames.join("step-000000.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn views_choose_whose_text_is_printed() {
    let dir = tempfile::tempdir().unwrap();
    let run = soccer_run(dir.path());
    let replay = |views: &str| {
        let output = mosaic(&[
            "replay",
            path(&run),
            "--episode",
            "r-a7-ep000001",
            "--views",
            views,
        ]);
        (
            output.status.code(),
            text(&output.stdout),
            text(&output.stderr),
        )
    };
    let (code, all, _) = replay("all");
    assert_eq!(code, Some(0));
    let (code, none, _) = replay("none");
    assert_eq!(code, Some(0));
    let (code, one, _) = replay("blue_1");
    assert_eq!(code, Some(0));
    let steps = all.matches("== step ").count();
    assert!(steps > 0);
    assert_eq!(all.matches(" sees:").count(), 4 * steps);
    assert_eq!(none.matches(" sees:").count(), 0);
    assert_eq!(one.matches("-- blue_1 sees:").count(), steps);
    assert_eq!(one.matches(" sees:").count(), steps);
    // Actions and rewards are printed whatever the views.
    for out in [&none, &one] {
        assert_eq!(out.matches("== step ").count(), steps);
        assert_eq!(
            out.matches(" action ").count(),
            all.matches(" action ").count()
        );
        assert!(out.contains("replay matches the records"), "{out}");
    }
    let (code, _, stderr) = replay("green_0,nobody");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("no agent `nobody`") && stderr.contains("green_0, green_1"),
        "{stderr}"
    );
}

#[test]
fn records_the_environment_contradicts_fail_loudly() {
    let dir = tempfile::tempdir().unwrap();
    let run = soccer_run(dir.path());
    {
        // Rewrite episode 2's log with one reward changed (readers of a finished run read
        // its logs).
        let log = run.join("steps.jsonl");
        let text = std::fs::read_to_string(&log).unwrap();
        let mut tampered = 0;
        let lines: Vec<String> = text
            .lines()
            .map(|line| {
                let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
                if record["operator_id"] == "a7"
                    && record["episode_index"] == 2
                    && record["step_index"] == 3
                    && record["agent_id"] == "blue_1"
                {
                    let reward = record["reward"].as_f64().unwrap();
                    record["reward"] = serde_json::json!(reward + 0.5);
                    tampered += 1;
                    record.to_string()
                } else {
                    line.to_owned()
                }
            })
            .collect();
        assert_eq!(tampered, 1);
        std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    }
    let output = mosaic(&["replay", path(&run), "--episode", "r-a7-ep000002"]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("r-a7-ep000002 step 3 agent blue_1: recorded reward 0.5, replayed 0"),
        "{stderr}"
    );
    // The steps before the difference were shown.
    assert!(text(&output.stdout).contains("== step 2\n"));
    // The other episodes are untouched.
    let output = mosaic(&["replay", path(&run), "--episode", "r-a7-ep000001"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
}

#[test]
fn bad_input_exits_with_2_and_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let run = soccer_run(dir.path());
    let run_s = path(&run).to_owned();
    let bad = |args: &[&str], needle: &str| {
        let output = mosaic(args);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "expected `{needle}` in: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    };
    bad(
        &["replay", &run_s, "--episode", "r-a7-ep000020"],
        "episode `r-a7-ep000020` is not an episode id in run",
    );
    bad(
        &["replay", &run_s, "--episode", "other-a7-ep000001"],
        "(e.g. `r-a7-ep000000`)",
    );
    bad(
        &["replay", path(dir.path()), "--episode", "r-a7-ep000001"],
        "is not a run directory",
    );
    // An episode that is not complete (dropped from the completion index).
    {
        let run = RunDir::open(&run).unwrap();
        let store = run.store().unwrap();
        store.discard(&Unit::new("a7", 5)).unwrap();
        store.flush().unwrap();
        // Keep the log in line with the store, as resuming would.
        run.discard_incomplete(&store).unwrap();
    }
    bad(
        &["replay", &run_s, "--episode", "r-a7-ep000005"],
        "episode `r-a7-ep000005` is not complete",
    );
    // A run of an environment this mosaic does not know.
    let manifest_path = run.join("run.json");
    let manifest = std::fs::read_to_string(&manifest_path).unwrap();
    std::fs::write(
        &manifest_path,
        manifest.replace("\"soccer-2v2\"", "\"soccer-9v9\""),
    )
    .unwrap();
    bad(
        &["replay", &run_s, "--episode", "r-a7-ep000001"],
        "unknown environment `soccer-9v9`",
    );
}
