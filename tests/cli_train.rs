//! `mosaic train` end to end with the real binary: a short training run, its policy played
//! by `kind = "rl"` in an experiment, a checkpoint that does not fit refused with exit 2,
//! and a policy trained alone (soccer-1v0) deployed in a team of four (soccer-2v2).

use std::path::Path;
use std::process::{Command, Output};

fn mosaic(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .args(args)
        .output()
        .expect("the mosaic binary runs")
}

/// (episode, step, agent, action, source) of every step record in `steps`.
fn actions(steps: &Path) -> Vec<(u64, u64, String, u64, String)> {
    std::fs::read_to_string(steps)
        .unwrap()
        .lines()
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            (
                record["episode_index"].as_u64().unwrap(),
                record["step_index"].as_u64().unwrap(),
                record["agent_id"].as_str().unwrap().to_owned(),
                record["action"].as_u64().unwrap(),
                record["decision_source"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn write(path: &Path, text: &str) -> String {
    std::fs::write(path, text).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn trained_policies_play_in_experiments_and_misfits_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_string_lossy().into_owned();
    let train = write(
        &dir.path().join("train.toml"),
        r#"
name = "tiny"
env = "soccer-2v2"
total_steps = 512
envs = 4
rollout = 32
checkpoint_every = 2
[agents]
green = "learn"
"*" = "random"
"#,
    );
    let output = mosaic(&["train", &train, "--out", &out, "--run-id", "tiny"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("trained 4 updates, 512 environment steps"),
        "{stdout}"
    );
    let policy = dir.path().join("tiny/policies/green");
    assert!(policy.with_extension("safetensors").is_file());

    let report = mosaic(&["report", &dir.path().join("tiny").to_string_lossy()]);
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );

    let experiment = |env: &str| {
        format!(
            r#"
name = "play"
episodes = 2
max_steps = 50
[[operators]]
id = "rl"
env = "{env}"
[operators.agents]
green_0 = {{ kind = "rl", checkpoint = "{}" }}
"*" = {{ kind = "random" }}
"#,
            policy.display()
        )
    };
    let fits = write(&dir.path().join("fits.toml"), &experiment("soccer-2v2"));
    let played = mosaic(&["run", &fits, "--out", &out, "--run-id", "play"]);
    assert!(
        played.status.success(),
        "{}",
        String::from_utf8_lossy(&played.stderr)
    );
    let steps = std::fs::read_to_string(dir.path().join("play/steps.jsonl")).unwrap();
    assert!(steps.contains(r#""kind":"rl""#));

    // Four agents on one checkpoint decide in one forward pass per step; on four copies
    // of it, each alone. The decisions (seeded draws) are the same.
    let four = |checkpoints: [&Path; 4], run: &str| {
        let slots: String = checkpoints
            .iter()
            .enumerate()
            .map(|(i, path)| {
                let id = ["green_0", "green_1", "blue_0", "blue_1"][i];
                format!(
                    "{id} = {{ kind = \"rl\", checkpoint = \"{}\" }}\n",
                    path.display()
                )
            })
            .collect();
        let file = write(
            &dir.path().join(format!("{run}.toml")),
            &format!(
                "name = \"four\"\nepisodes = 3\nmax_steps = 60\n[[operators]]\nid = \"rl\"\n\
                 env = \"soccer-2v2\"\n[operators.agents]\n{slots}"
            ),
        );
        let ran = mosaic(&["run", &file, "--out", &out, "--run-id", run]);
        assert!(
            ran.status.success(),
            "{}",
            String::from_utf8_lossy(&ran.stderr)
        );
        actions(&dir.path().join(run).join("steps.jsonl"))
    };
    let copies: Vec<_> = (0..4)
        .map(|i| {
            let copy = dir.path().join(format!("copies/{i}/green"));
            std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
            for extension in ["json", "safetensors"] {
                std::fs::copy(
                    policy.with_extension(extension),
                    copy.with_extension(extension),
                )
                .unwrap();
            }
            copy
        })
        .collect();
    let shared = four([&policy; 4], "shared");
    assert_eq!(
        shared.len(),
        3 * 60 * 4,
        "every agent decided at every step"
    );
    let separate = four([&copies[0], &copies[1], &copies[2], &copies[3]], "separate");
    assert_eq!(shared, separate);

    let misfit = write(
        &dir.path().join("misfit.toml"),
        &experiment("soccer-2v2").replace(
            r#"env = "soccer-2v2""#,
            r#"env = "soccer-2v2"
env_settings = { view_size = 7 }"#,
        ),
    );
    let refused = mosaic(&["run", &misfit, "--out", &out, "--run-id", "misfit"]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("field `obs_shape` differs"), "{stderr}");
    assert!(stderr.contains("green_0"), "{stderr}");

    let bad = write(
        &dir.path().join("bad.toml"),
        "name = \"x\"\nenv = \"soccer-2v2\"\ntotal_steps = 10\n[agents]\n\"*\" = \"random\"\n",
    );
    let refused = mosaic(&["train", &bad, "--out", &out]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("learn"));
}

#[test]
fn a_policy_trained_alone_plays_beside_a_scripted_teammate_in_2v2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_string_lossy().into_owned();
    // examples/training/soccer-solo.toml, shortened.
    let example = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/training/soccer-solo.toml"),
    )
    .unwrap();
    let tiny = example
        .replace("total_steps = 2000000", "total_steps = 512")
        .replace("envs = 16", "envs = 4")
        .replace("rollout = 128", "rollout = 32")
        .replace("checkpoint_every = 10", "checkpoint_every = 2");
    assert!(tiny.contains("total_steps = 512") && tiny.contains("rollout = 32"));
    let train = write(&dir.path().join("solo.toml"), &tiny);
    let output = mosaic(&["train", &train, "--out", &out, "--run-id", "solo"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let policy = dir.path().join("solo/policies/green");
    let manifest = std::fs::read_to_string(policy.with_extension("json")).unwrap();
    assert!(manifest.contains(r#""env": "soccer-1v0""#), "{manifest}");

    let experiment = |settings: &str, transfer: bool| {
        format!(
            r#"
name = "transfer"
episodes = 2
max_steps = 60
[[operators]]
id = "team"
env = "soccer-2v2"
env_settings = {{ {settings} }}
[operators.agents]
green_0 = {{ kind = "rl", checkpoint = "{}", transfer = {transfer} }}
green_1 = {{ kind = "scripted" }}
"*" = {{ kind = "random" }}
"#,
            policy.display()
        )
    };
    let fits = write(
        &dir.path().join("fits.toml"),
        &experiment(r#"observation = "reference""#, true),
    );
    let played = mosaic(&["run", &fits, "--out", &out, "--run-id", "team"]);
    assert!(
        played.status.success(),
        "{}",
        String::from_utf8_lossy(&played.stderr)
    );
    let steps = std::fs::read_to_string(dir.path().join("team/steps.jsonl")).unwrap();
    let kinds = |agent: &str| -> Vec<String> {
        steps
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .filter(|record| record["agent_id"] == agent)
            .filter_map(|record| record["kind"].as_str().map(str::to_owned))
            .collect()
    };
    let (rl, scripted) = (kinds("green_0"), kinds("green_1"));
    assert!(!rl.is_empty() && rl.iter().all(|k| k == "rl"), "{rl:?}");
    assert!(
        !scripted.is_empty() && scripted.iter().all(|k| k == "scripted"),
        "{scripted:?}"
    );

    // Without transfer the checkpoint stays in its own environment; with MOSAIC's
    // observation layout the shapes differ between team sizes.
    for (name, settings, transfer, expected) in [
        (
            "same-env",
            r#"observation = "reference""#,
            false,
            "field `env` differs",
        ),
        (
            "layout",
            r#"observation = "mosaic""#,
            true,
            "field `obs_shape` differs",
        ),
    ] {
        let misfit = write(
            &dir.path().join(format!("{name}.toml")),
            &experiment(settings, transfer),
        );
        let refused = mosaic(&["run", &misfit, "--out", &out, "--run-id", name]);
        assert_eq!(refused.status.code(), Some(2), "{name}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.contains(expected), "{name}: {stderr}");
    }
}
