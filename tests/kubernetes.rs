//! `mosaic cluster k8s`: the manifests validate against the Kubernetes schemas (the
//! `kubernetes-validate` package of the k8s venv that `scripts/setup/python-envs.sh` makes,
//! which ships them; a real cluster is not needed), and the containers' commands, run
//! here as a pod would run them (`JOB_COMPLETION_INDEX` set, the volume and the ConfigMap at
//! their mount paths), make the unsharded run's records, also when one shard's container
//! is killed and started again.

// Shared by the binary's tests; each uses part of it.
#[allow(dead_code)]
#[path = "support/cli.rs"]
mod cli;

use cli::{mosaic, succeed, text};
use mosaic_test_kit::records::sorted_records;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const EXPERIMENT: &str = r#"
name = "kube"
episodes = 40
max_steps = 150
parallelism = 1
seeds = { plan = "procedural", base = 31 }

[[operators]]
id = "pitch"
env = "soccer-2v2"
agents = { "*" = { kind = "random" } }

[[operators]]
id = "board"
env = "tic-tac-toe"
agents = { "*" = { kind = "scripted" } }
"#;

/// The k8s venv's Python (see `scripts/setup/python-envs.sh`).
fn k8s_python() -> String {
    mosaic_test_kit::setup::variable("python-envs.sh", "MOSAIC_PY_K8S")
}

/// The objects of a manifest file (JSON documents after `---` lines).
fn objects(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .split("---\n")
        .filter(|doc| !doc.trim().is_empty())
        .map(|doc| serde_json::from_str(doc).expect("a JSON document"))
        .collect()
}

/// The container's shell script of the Job named `name`.
fn script<'a>(objects: &'a [serde_json::Value], name: &str) -> &'a str {
    let job = objects
        .iter()
        .find(|o| o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no object {name}"));
    let command = &job["spec"]["template"]["spec"]["containers"][0]["command"];
    assert_eq!(command[0], "/bin/sh");
    command[2].as_str().expect("a script")
}

/// Runs a container's script as its pod would: the Indexed Job's index set, `mosaic` on the
/// PATH.
fn container(script: &str, index: Option<u32>) -> Command {
    let bin = Path::new(env!("CARGO_BIN_EXE_mosaic")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("/bin/sh");
    command.args(["-c", script]).env("PATH", path);
    if let Some(index) = index {
        command.env("JOB_COMPLETION_INDEX", index.to_string());
    }
    command
}

fn generate(dir: &Path, extra: &[&str]) -> PathBuf {
    let file = dir.join("kube.toml");
    std::fs::write(&file, EXPERIMENT).unwrap();
    let manifest = dir.join("kube.k8s.json");
    succeed(
        mosaic()
            .args(["cluster", "k8s"])
            .arg(&file)
            .args(["--shards", "4", "--run-id", "kube"])
            .args(["--image", "registry.example/mosaic:0.1"])
            .args(["--volume-claim", "mosaic-runs"])
            .args(["--env", "OPENAI_BASE_URL=http://vllm.llm.svc:8000/v1"])
            .args(extra)
            .arg("--write")
            .arg(&manifest),
    );
    manifest
}

#[test]
fn the_manifests_validate_against_the_kubernetes_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = generate(dir.path(), &["--cpus", "4", "--namespace", "sweeps"]);
    let kinds: Vec<String> = objects(&manifest)
        .iter()
        .map(|o| o["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["ConfigMap", "Job", "Job"]);
    let python = k8s_python();
    for version in ["1.30.0", "1.37.0"] {
        succeed(
            Command::new(&python)
                .args(["-m", "kubernetes_validate", "--strict", "-k", version])
                .arg(&manifest),
        );
    }
    // The validator does refuse what does not fit the schemas.
    let broken = dir.path().join("broken.json");
    let written = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &broken,
        written.replace("\"completionMode\"", "\"completion\""),
    )
    .unwrap();
    let output = Command::new(&python)
        .args(["-m", "kubernetes_validate", "--strict"])
        .arg(&broken)
        .output()
        .unwrap();
    assert!(!output.status.success(), "{}", text(&output));
}

#[test]
fn the_containers_commands_run_the_shards_and_merge_them_to_the_unsharded_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (runs, config) = (root.join("runs"), root.join("config"));
    let manifest = generate(
        root,
        &[
            "--mount",
            runs.to_str().unwrap(),
            "--config-mount",
            config.to_str().unwrap(),
        ],
    );
    let objects = objects(&manifest);
    // The ConfigMap's file, where its volume puts it.
    std::fs::create_dir_all(&config).unwrap();
    let data = objects[0]["data"].as_object().unwrap();
    for (name, text) in data {
        std::fs::write(config.join(name), text.as_str().unwrap()).unwrap();
    }
    let whole = root.join("whole");
    succeed(
        mosaic()
            .arg("run")
            .arg(root.join("kube.toml"))
            .arg("--out")
            .arg(&whole)
            .args(["--run-id", "kube"]),
    );

    let shards = script(&objects, "kube-shards");
    // Index 2's container is killed mid-run and started again (restartPolicy OnFailure).
    let mut killed = container(shards, Some(2))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let shard = runs.join("kube.shard-2-of-4");
    let started = Instant::now();
    while std::fs::read_to_string(shard.join("episodes.jsonl"))
        .unwrap_or_default()
        .lines()
        .count()
        < 2
    {
        assert!(started.elapsed() < Duration::from_secs(30), "no episodes");
        assert!(
            killed.try_wait().unwrap().is_none(),
            "ended before the kill"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    killed.kill().unwrap();
    killed.wait().unwrap();
    for index in 0..4 {
        succeed(&mut container(shards, Some(index)));
    }
    // A container started again after its shard finished leaves it alone.
    succeed(&mut container(shards, Some(1)));

    let merge = script(&objects, "kube-merge");
    succeed(&mut container(merge, None));
    assert!(sorted_records(&runs.join("kube")) == sorted_records(&whole.join("kube")));
    // Run again (the merge pod restarted), it finds the merged run and succeeds.
    succeed(&mut container(merge, None));
}
