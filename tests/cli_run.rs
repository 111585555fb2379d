//! `mosaic run` end to end with the real binary: run directories, bad files, determinism.

use mosaic_core::record::strip_volatile;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn mosaic(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .args(args)
        .output()
        .expect("the mosaic binary runs")
}

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/experiments")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn run(file: &str, out: &Path, run_id: &str, extra: &[&str]) -> PathBuf {
    let out_s = out.to_string_lossy();
    let mut args = vec!["run", file, "--out", &out_s, "--run-id", run_id];
    args.extend_from_slice(extra);
    let output = mosaic(&args);
    assert!(
        output.status.success(),
        "mosaic run {file} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    out.join(run_id)
}

/// Lines of a JSONL file with volatile fields removed, sorted (parallel runs interleave).
fn stable_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("records file");
    let mut lines: Vec<String> = text
        .lines()
        .map(|line| {
            let mut value: serde_json::Value = serde_json::from_str(line).expect("JSON record");
            strip_volatile(&mut value);
            value.to_string()
        })
        .collect();
    lines.sort();
    lines
}

#[test]
fn logs_into_a_file_carry_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .args(["run", &example("side-by-side.toml"), "--out"])
        .arg(dir.path())
        .args(["--run-id", "r"])
        .env("MOSAIC_LOG", "debug")
        .output()
        .expect("the mosaic binary runs");
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("DEBUG"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr}");
}

#[test]
fn a_run_writes_its_directory_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = mosaic(&[
        "run",
        &example("side-by-side.toml"),
        "--out",
        &dir.path().to_string_lossy(),
        "--run-id",
        "r1",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = dir.path().join("r1");
    for file in ["run.json", "steps.jsonl", "episodes.jsonl"] {
        assert!(run.join(file).is_file(), "{file} missing");
    }
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(manifest["schema"], "mosaic.run/1");
    assert_eq!(
        manifest["seeds"],
        serde_json::json!([11, 23, 35, 47, 59, 61, 73, 85, 97, 109])
    );
    let episodes = std::fs::read_to_string(run.join("episodes.jsonl")).unwrap();
    assert_eq!(episodes.lines().count(), 20);
    let first: serde_json::Value = serde_json::from_str(episodes.lines().next().unwrap()).unwrap();
    assert_eq!(first["schema"], "mosaic.episode/1");
    let steps = std::fs::read_to_string(run.join("steps.jsonl")).unwrap();
    let step: serde_json::Value = serde_json::from_str(steps.lines().next().unwrap()).unwrap();
    for field in [
        "schema",
        "run_id",
        "operator_id",
        "episode_id",
        "step_index",
        "agent_id",
        "paradigm",
        "action",
        "reward",
        "terminated",
        "truncated",
        "seed",
        "decision_us",
        "timestamp",
    ] {
        assert!(
            step.get(field).is_some(),
            "step record lacks {field}: {step}"
        );
    }
    assert_eq!(step["schema"], "mosaic.step/1");
    let summary = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "scripted_green",
        "scripted_blue",
        "mean return [95% CI]",
        "win",
        "steps/s",
    ] {
        assert!(
            summary.contains(needle),
            "summary lacks {needle}:\n{summary}"
        );
    }
}

#[test]
fn the_same_experiment_gives_the_same_records() {
    let dir = tempfile::tempdir().unwrap();
    let file = example("side-by-side.toml");
    let a = run(
        &file,
        &dir.path().join("a"),
        "same",
        &["--parallelism", "1"],
    );
    let b = run(
        &file,
        &dir.path().join("b"),
        "same",
        &["--parallelism", "1"],
    );
    let c = run(
        &file,
        &dir.path().join("c"),
        "same",
        &["--parallelism", "4"],
    );
    for records in ["steps.jsonl", "episodes.jsonl"] {
        // Sequential runs are identical line for line, not only as sets.
        let strip = |p: &Path| -> Vec<String> {
            std::fs::read_to_string(p.join(records))
                .unwrap()
                .lines()
                .map(|l| {
                    let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                    strip_volatile(&mut v);
                    v.to_string()
                })
                .collect()
        };
        assert_eq!(
            strip(&a),
            strip(&b),
            "{records}: two sequential runs differ"
        );
        assert_eq!(
            stable_lines(&a.join(records)),
            stable_lines(&c.join(records)),
            "{records}: parallelism 1 and 4 differ"
        );
    }
}

#[test]
fn scripted_beats_random_in_a7() {
    let dir = tempfile::tempdir().unwrap();
    let run = run(
        &example("a7-scripted-vs-random.toml"),
        dir.path(),
        "a7",
        &[],
    );
    let text = std::fs::read_to_string(run.join("episodes.jsonl")).unwrap();
    let (mut green, mut blue) = (0, 0);
    for line in text.lines() {
        let episode: serde_json::Value = serde_json::from_str(line).unwrap();
        let outcome = |agent: &str| {
            episode["agents"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["agent_id"] == agent)
                .and_then(|a| a["outcome"].as_str().map(str::to_owned))
        };
        match outcome("green_0").as_deref() {
            Some("win") => green += 1,
            Some("loss") => blue += 1,
            _ => {}
        }
    }
    assert_eq!(text.lines().count(), 20);
    assert!(
        green > 2 * blue && green >= 10,
        "scripted won {green}, random won {blue}"
    );
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn bad_files_name_file_line_and_field_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(example("a7-scripted-vs-random.toml")).unwrap();
    let cases = [
        (
            "unknown-env.toml",
            good.replace("soccer-2v2", "soccer-11v11"),
            11,
            "operators[0].env",
            "unknown environment",
        ),
        (
            "unknown-kind.toml",
            good.replace("kind = \"random\"", "kind = \"genius\""),
            16,
            "operators[0].agents.*.kind",
            "unknown decider kind",
        ),
        (
            "unknown-slot.toml",
            good.replace("green_1 =", "green_7 ="),
            15,
            "operators[0].agents.green_7",
            "not an agent",
        ),
        (
            "wrong-type.toml",
            good.replace("episodes = 20", "episodes = \"twenty\""),
            4,
            "episodes",
            "invalid type",
        ),
        (
            "missing.toml",
            good.replace("name = \"a7-scripted-vs-random\"\n", ""),
            0,
            "",
            "missing field `name`",
        ),
        (
            "bad-setting.toml",
            good.replace(
                "env = \"soccer-2v2\"",
                "env = \"soccer-2v2\"\nenv_settings = { view_size = 4 }",
            ),
            12,
            "operators[0].env_settings.view_size",
            "must be odd",
        ),
    ];
    let out = dir.path().join("out");
    for (name, text, line, field, message) in cases {
        let file = write(dir.path(), name, &text);
        let output = mosaic(&["run", &file, "--out", &out.to_string_lossy()]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert!(stderr.contains(&file), "{name}: no file in {stderr}");
        if line > 0 {
            assert!(
                stderr.contains(&format!("{file}:{line}:")),
                "{name}: no line {line} in {stderr}"
            );
        }
        if !field.is_empty() {
            assert!(
                stderr.contains(&format!("field `{field}`")),
                "{name}: no field in {stderr}"
            );
        }
        assert!(stderr.contains(message), "{name}: {stderr}");
        assert!(!out.exists(), "{name}: something was written");
    }
}
