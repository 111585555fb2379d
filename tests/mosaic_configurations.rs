//! MOSAIC's fifteen configurations (`examples/experiments/mosaic/`, the paper's Tables 4
//! and 5) against the reference policies: `scripts/setup/reference-policies.sh` trains them
//! (briefly here) and links them where the files look; every file then passes
//! `mosaic run --check` (checkpoints against the environment, backends' settings); the ones
//! this machine can play (RL, random, no-op, the local LLM) run, and `mosaic report` reads
//! them side by side as one configuration table.

// Shared by the binary's tests; each uses part of it.
#[allow(dead_code)]
#[path = "support/cli.rs"]
mod cli;

use cli::{mosaic, succeed, text};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The project's root (this package's directory).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The configuration files, by name without extension.
fn configuration_files() -> BTreeMap<String, PathBuf> {
    std::fs::read_dir(root().join("examples/experiments/mosaic"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .map(|path| {
            (
                path.file_stem().unwrap().to_string_lossy().into_owned(),
                path,
            )
        })
        .collect()
}

/// Trains every reference policy for a few thousand steps into `dir`'s own cache and links
/// them under `dir/policies`; answers what the script printed on stderr.
fn reference_policies(dir: &Path) -> String {
    let output = Command::new(root().join("scripts/setup/reference-policies.sh"))
        .env("MOSAIC_BIN", env!("CARGO_BIN_EXE_mosaic"))
        .env("MOSAIC_CACHE", dir.join("cache"))
        .env("MOSAIC_POLICIES_DIR", dir.join("policies"))
        .env("MOSAIC_REFERENCE_STEPS", "2048")
        .env(
            "MOSAIC_REFERENCE_ONLY",
            "soccer-2v2-ippo soccer-2v2-mappo soccer-2v2-mappo-reference soccer-solo-green soccer-solo-blue",
        )
        .output()
        .expect("the script runs");
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        stdout.trim(),
        format!("MOSAIC_POLICIES={}", dir.join("policies").display())
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `mosaic` run from `dir` (where `policies/` is), with the local model configured.
fn mosaic_in(dir: &Path, model: &BTreeMap<String, String>) -> Command {
    let mut command = mosaic();
    command.current_dir(dir).envs(model);
    command
}

/// A copy of configuration `file` in `dir` with fewer, shorter episodes (the soccer pitch's
/// own step limit, so every episode ends with an outcome).
fn shortened(file: &Path, dir: &Path, episodes: u32, steps: u32) -> PathBuf {
    let original = std::fs::read_to_string(file).unwrap();
    assert!(
        original.contains("\nepisodes = 100\n"),
        "{}",
        file.display()
    );
    let mut text = original.replace("\nepisodes = 100\n", &format!("\nepisodes = {episodes}\n"));
    text = match text.contains("env_settings = { observation = \"reference\" }") {
        true => text.replace(
            "env_settings = { observation = \"reference\" }",
            &format!("env_settings = {{ observation = \"reference\", max_steps = {steps} }}"),
        ),
        false => text.replace(
            "env = \"soccer-2v2\"\n",
            &format!("env = \"soccer-2v2\"\nenv_settings = {{ max_steps = {steps} }}\n"),
        ),
    };
    let path = dir.join(file.file_name().unwrap());
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn the_fifteen_configurations_check_run_and_report_side_by_side() {
    let files = configuration_files();
    let names: Vec<&str> = files.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "a1-rl-vs-rl",
            "a2-llm-vs-llm",
            "a3-vlm-vs-vlm",
            "a4-rl-vs-llm",
            "a5-rl-vs-vlm",
            "a6-llm-vs-vlm",
            "a7-rl-vs-random",
            "c1-rl-llm-vs-rl-random",
            "c2-rl-llm-vs-rl-noop",
            "c3-rl-vlm-vs-rl-random",
            "c4-rl-vlm-vs-rl-noop",
            "c5-solo-pair-vs-solo-pair",
            "c6-rl-llm-vs-cotrained",
            "c7-rl-vlm-vs-cotrained",
            "c8-rl-llm-vs-rl-vlm",
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    let model = mosaic_test_kit::setup::variables(
        "llm-server.sh",
        &["MOSAIC_LLAMA_SERVER", "MOSAIC_LLM_MODEL"],
    );

    // Without the policies, a configuration that needs one says which file is missing.
    let missing = mosaic_in(dir.path(), &model)
        .args(["run", "--check"])
        .arg(&files["a7-rl-vs-random"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    assert!(
        text(&missing).contains("policies/soccer-2v2-ippo/green.json"),
        "{}",
        text(&missing)
    );

    let first = reference_policies(dir.path());
    assert!(first.contains("soccer-solo-green: training"), "{first}");
    // Trained once: a second call only links the cached policies.
    let again = reference_policies(dir.path());
    assert!(!again.contains("training"), "{again}");

    for (name, file) in &files {
        let out = succeed(
            mosaic_in(dir.path(), &model)
                .args(["run", "--check"])
                .arg(file),
        );
        assert!(out.contains(": ok: `mosaic-"), "{name}: {out}");
    }

    // What this machine plays: RL, random and no-op players, and the local LLM.
    let played = [
        ("a1-rl-vs-rl", 4, "rl", "rl"),
        ("a4-rl-vs-llm", 1, "rl", "llm"),
        ("a7-rl-vs-random", 4, "rl", "random"),
        ("c2-rl-llm-vs-rl-noop", 1, "llm+rl", "noop+rl"),
        ("c5-solo-pair-vs-solo-pair", 4, "rl", "rl"),
    ];
    let mut runs = Vec::new();
    for (name, episodes, _, _) in played {
        let steps = if episodes == 1 { 4 } else { 40 };
        let file = shortened(&files[name], dir.path(), episodes, steps);
        let run_id = format!("run-{name}");
        succeed(
            mosaic_in(dir.path(), &model)
                .args(["run", "--out", "runs", "--run-id", &run_id])
                .arg(&file),
        );
        runs.push(dir.path().join("runs").join(run_id));
    }

    let table = succeed(mosaic().arg("report").args(&runs));
    for (name, episodes, green, blue) in played {
        let configuration = format!("mosaic-{}", &name[..2]);
        let row = format!("| `{configuration}` | {green} | {blue} | {episodes} |");
        assert!(table.contains(&row), "{row} in\n{table}");
    }
    let json: serde_json::Value = serde_json::from_str(&succeed(
        mosaic()
            .arg("report")
            .args(&runs)
            .args(["--format", "json"]),
    ))
    .unwrap();
    let cells = json["configurations"]["cells"].as_array().unwrap();
    assert_eq!(json["difficulty"], serde_json::Value::Null);
    assert_eq!(cells.len(), played.len());
    for cell in cells {
        // Every episode ended by the pitch's own limit or by goals: each has an outcome.
        let rate = |name: &str| cell[name]["mean"].as_f64().unwrap();
        let total = rate("win") + rate("draw") + rate("loss");
        assert!((total - 1.0).abs() < 1e-9, "{cell}");
    }

    // One run is a report of its own, not a table.
    let one = succeed(mosaic().arg("report").arg(&runs[0]));
    assert!(!one.contains("## Configurations"), "{one}");
    let refused = mosaic()
        .arg("report")
        .args(&runs)
        .args(["--gamma", "1"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
}
