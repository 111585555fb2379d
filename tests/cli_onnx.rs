//! ONNX policies in experiments, with the real binary: a CleanRL-style model built from
//! known weights plays gridworld in the example experiment, as `kind = "onnx"` and as an
//! `rl` checkpoint, and a policy that does not fit, or a file that is no model, is refused
//! at validation with exit 2 naming the slot and the file.

use mosaic_core::Settings;
use std::path::Path;
use std::process::{Command, Output};

fn mosaic(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .args(args)
        .output()
        .expect("the mosaic binary runs")
}

fn write(path: &Path, text: &str) -> String {
    std::fs::write(path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// Builds the `gemm` fixture for gridworld in `dir/policies` under the name the example
/// experiment reads; answers the `.onnx` path.
fn gridworld_policy(dir: &Path) -> std::path::PathBuf {
    let spec = mosaic_adapters::in_process_envs()
        .make("gridworld", &Settings::new())
        .unwrap()
        .spec()
        .clone();
    let python = mosaic_test_kit::setup::variable("python-envs.sh", "MOSAIC_PY_ENVS");
    let output = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("actors/rl/tests/onnx/policies.py"))
        .arg(dir.join("policies"))
        .args(["--model", "gemm", "--name", "gridworld-mlp"])
        .args(["--env", "gridworld", "--obs-shape", "148"])
        .args(["--actions", &spec.action_labels.join(",")])
        .output()
        .expect("the fixture script runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    dir.join("policies/gridworld-mlp.onnx")
}

/// Checks that every step of `operator` in the run at `dir` was decided by the policy of
/// `kind`, none by a fallback.
fn decided_by(dir: &Path, operator: &str, kind: &str) {
    let steps = std::fs::read_to_string(dir.join("steps.jsonl")).unwrap();
    let mut acted = 0;
    for line in steps.lines() {
        let step: serde_json::Value = serde_json::from_str(line).unwrap();
        if step["operator_id"] != operator {
            continue;
        }
        assert_eq!(step["kind"], kind, "{step}");
        if !step["action"].is_null() {
            assert_eq!(step["decision_source"], "policy", "{step}");
            acted += 1;
        }
    }
    assert!(acted > 0, "{steps}");
}

fn experiment(slot: &str) -> String {
    format!(
        r#"
name = "onnx"
episodes = 2
max_steps = 30
[[operators]]
id = "imported"
env = "gridworld"
[operators.agents]
agent_0 = {slot}
"#
    )
}

#[test]
fn onnx_policies_play_and_misfits_are_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_string_lossy().into_owned();
    let model = gridworld_policy(dir.path());

    // The example experiment, run where its relative path finds the policy.
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/experiments/onnx-gridworld.toml");
    let played = Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .arg("run")
        .arg(&example)
        .args(["--out", &out, "--run-id", "example"])
        .current_dir(dir.path())
        .output()
        .expect("the mosaic binary runs");
    assert!(
        played.status.success(),
        "{}",
        String::from_utf8_lossy(&played.stderr)
    );
    decided_by(&dir.path().join("example"), "onnx", "onnx");

    for (id, slot) in [
        (
            "as-onnx",
            format!(r#"{{ kind = "onnx", model = "{}" }}"#, model.display()),
        ),
        (
            "as-rl",
            format!(
                r#"{{ kind = "rl", checkpoint = "{}", greedy = true }}"#,
                model.display()
            ),
        ),
    ] {
        let file = write(&dir.path().join(format!("{id}.toml")), &experiment(&slot));
        let played = mosaic(&["run", &file, "--out", &out, "--run-id", id]);
        assert!(
            played.status.success(),
            "{}",
            String::from_utf8_lossy(&played.stderr)
        );
        let kind = if id == "as-onnx" { "onnx" } else { "rl" };
        decided_by(&dir.path().join(id), "imported", kind);
    }

    let slot = format!(r#"{{ kind = "onnx", model = "{}" }}"#, model.display());
    let refuse = |id: &str| {
        let file = write(&dir.path().join(format!("{id}.toml")), &experiment(&slot));
        let refused = mosaic(&["run", &file, "--out", &out, "--run-id", id]);
        assert_eq!(
            refused.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&refused.stderr)
        );
        String::from_utf8_lossy(&refused.stderr).into_owned()
    };

    let json = model.with_extension("json");
    let manifest = std::fs::read_to_string(&json).unwrap();
    std::fs::write(&json, manifest.replace("148", "147")).unwrap();
    let stderr = refuse("misfit");
    assert!(stderr.contains("field `obs_shape` differs"), "{stderr}");
    assert!(
        stderr.contains("gridworld-mlp.json") && stderr.contains("agent_0"),
        "{stderr}"
    );

    std::fs::write(&json, &manifest).unwrap();
    std::fs::write(&model, b"garbage").unwrap();
    let stderr = refuse("garbage");
    assert!(
        stderr.contains("gridworld-mlp.onnx: not a readable ONNX model"),
        "{stderr}"
    );
}
