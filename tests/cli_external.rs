//! `mosaic run` with third-party environments and a Python policy in worker processes,
//! named in an experiment file (real Gymnasium / PettingZoo packages from PyPI).

// Shared with the adapters tests; this test uses only part of it.
use mosaic_test_kit::python;

use mosaic_core::record::strip_volatile;
use std::path::Path;
use std::process::Command;

fn run(out: &Path) -> std::path::PathBuf {
    let py = python::python_env();
    let venv_bin = Path::new(&py.python).parent().expect("venv bin");
    let path = format!(
        "{}:{}",
        venv_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/experiments/external-workers.toml");
    let output = Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .args([
            "run",
            &file.to_string_lossy(),
            "--out",
            &out.to_string_lossy(),
            "--run-id",
            "ext",
        ])
        .env("PATH", path)
        .output()
        .expect("mosaic runs");
    assert!(
        output.status.success(),
        "mosaic run failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    out.join("ext")
}

fn stripped(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("records")
        .lines()
        .map(|line| {
            let mut value: serde_json::Value = serde_json::from_str(line).expect("JSON");
            strip_volatile(&mut value);
            value
        })
        .collect()
}

#[test]
fn external_envs_and_policies_run_from_an_experiment_file() {
    let dir = tempfile::tempdir().unwrap();
    let first = run(&dir.path().join("a"));
    let second = run(&dir.path().join("b"));
    let steps = stripped(&first.join("steps.jsonl"));
    let episodes = stripped(&first.join("episodes.jsonl"));
    assert_eq!(episodes.len(), 6, "3 chess and 3 DoorKey episodes");
    assert!(
        episodes.iter().all(|e| e["error"].is_null()),
        "{episodes:?}"
    );
    for step in &steps {
        if step["action"].is_number() {
            assert_eq!(
                step["decision_source"], "policy",
                "only legal, timely decisions: {step}"
            );
        }
    }
    let python_moves = steps
        .iter()
        .filter(|s| {
            s["operator_id"] == "chess" && s["agent_id"] == "player_1" && s["kind"] == "worker"
        })
        .filter(|s| s["action"].is_number())
        .count();
    assert!(
        python_moves > 10,
        "the Python policy played ({python_moves} moves)"
    );
    assert!(steps.iter().any(|s| s["operator_id"] == "doorkey"));
    assert_eq!(
        steps,
        stripped(&second.join("steps.jsonl")),
        "same seeds, same records"
    );
    assert_eq!(episodes, stripped(&second.join("episodes.jsonl")));
}

/// mosaic writes the `mosaic_worker` package it carries into its cache: a cache directory
/// that cannot be written stops the run with an error naming it.
#[test]
fn an_unwritable_cache_directory_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_directory = dir.path().join("file");
    std::fs::write(&not_a_directory, "").unwrap();
    let cache = not_a_directory.join("cache");
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/experiments/external-workers.toml");
    let output = Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .args(["run", &file.to_string_lossy(), "--out"])
        .arg(dir.path().join("runs"))
        .env("MOSAIC_CACHE", &cache)
        .output()
        .expect("mosaic runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains(&cache.join("python").display().to_string())
            && stderr.contains("MOSAIC_CACHE"),
        "{stderr}"
    );
}
