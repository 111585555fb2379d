//! `mosaic run --llm-cache`: a run with an LLM agent on the real local model is recorded,
//! then replayed with no model available at all, and the records are equal. A replay killed
//! in the middle of its episodes resumes from its checkpoints to the same records: the LLM
//! agent's restored history asks exactly the recorded questions.

use mosaic_test_kit::records::sorted_lines;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `MOSAIC_LLAMA_SERVER` and `MOSAIC_LLM_MODEL` (see `scripts/setup/llm-server.sh`; its
/// first run builds llama-server).
fn local_model() -> std::collections::BTreeMap<String, String> {
    mosaic_test_kit::setup::variables(
        "llm-server.sh",
        &["MOSAIC_LLAMA_SERVER", "MOSAIC_LLM_MODEL"],
    )
}

/// Runs `mosaic` with the local model configured, or (`offline`) with no model at all.
fn mosaic<S: AsRef<std::ffi::OsStr>>(args: &[S], offline: bool) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mosaic"));
    command.args(args);
    for (name, value) in local_model() {
        if offline {
            command.env_remove(name);
        } else {
            command.env(name, value);
        }
    }
    command.output().expect("the mosaic binary runs")
}

/// One LLM agent (with a scripted teammate) against random, short episodes; `extra` adds
/// top-level settings.
fn experiment_with(dir: &Path, history: u32, extra: &str) -> PathBuf {
    let path = dir.join(format!("llm-history-{history}-{}.toml", extra.len()));
    let text = format!(
        r#"name = "llm-cache"
{extra}
episodes = 2
max_steps = 5
parallelism = 2
seeds = {{ plan = "procedural", base = 77 }}

[[operators]]
id = "mixed"
env = "soccer-2v2"

[operators.agents]
green_0 = {{ kind = "llm", format = "grammar", history = {history}, max_tokens = 48, message_cap = 40, scratchpad_cap = 40 }}
green_1 = {{ kind = "scripted" }}
"*" = {{ kind = "random" }}
"#
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn experiment(dir: &Path, history: u32) -> PathBuf {
    experiment_with(dir, history, "")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// green_0's row of the report's LLM usage (`mosaic report --format json`).
fn llm_usage(run: &Path) -> serde_json::Value {
    let output = mosaic(
        &["report", &run.to_string_lossy(), "--format", "json"],
        true,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    report["operators"][0]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "green_0")
        .expect("green_0 in the report")["llm"]
        .clone()
}

#[test]
fn a_recorded_run_replays_without_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let file = experiment(dir.path(), 2);
    let file = file.to_string_lossy();
    let recorded_out = dir.path().join("recorded");
    let replayed_out = dir.path().join("replayed");
    let recorded = recorded_out.join("r");
    let args = |out: &Path| -> Vec<String> {
        [
            "run",
            &file,
            "--out",
            &out.to_string_lossy(),
            "--run-id",
            "r",
        ]
        .map(str::to_owned)
        .to_vec()
    };

    let record = mosaic(&args(&recorded_out), false);
    assert!(record.status.success(), "{}", stderr(&record));

    // Replay: the model is not even configured, so any request would fail.
    let mut replay_args = args(&replayed_out);
    replay_args.extend(
        [
            "--llm-cache",
            "replay",
            "--llm-cache-from",
            &recorded.to_string_lossy(),
        ]
        .map(str::to_owned),
    );
    let replay = mosaic(&replay_args, true);
    assert!(replay.status.success(), "{}", stderr(&replay));
    let replayed = replayed_out.join("r");
    for file in ["steps.jsonl", "episodes.jsonl"] {
        assert_eq!(
            sorted_lines(&recorded.join(file)),
            sorted_lines(&replayed.join(file)),
            "{file} differs"
        );
    }
    // The report's LLM figures trace to the same records: same decisions and tokens, every
    // answer of the replay from the cache — one per decision and re-prompt. (HTTP attempts
    // that failed while recording, e.g. timeouts on a loaded machine, count as requests
    // there but were never answered, so they are neither cached nor replayed.)
    let (original, again) = (llm_usage(&recorded), llm_usage(&replayed));
    let figure = |usage: &serde_json::Value, name: &str| usage[name].as_u64().unwrap_or(0);
    assert_eq!(figure(&original, "decisions"), 10);
    assert_eq!(figure(&original, "cache_hits"), 0);
    let answered = figure(&original, "decisions") + figure(&original, "retries");
    assert_eq!(figure(&again, "cache_hits"), answered);
    assert!(figure(&original, "requests") >= answered);
    for figure in ["decisions", "retries", "prompt_tokens", "completion_tokens"] {
        assert_eq!(original[figure], again[figure], "{figure}");
    }

    // The replayed run carries the cache too: it replays in turn.
    let mut again_args = args(&dir.path().join("again"));
    again_args.extend(
        [
            "--llm-cache",
            "replay",
            "--llm-cache-from",
            &replayed.to_string_lossy(),
        ]
        .map(str::to_owned),
    );
    let again = mosaic(&again_args, true);
    assert!(again.status.success(), "{}", stderr(&again));

    killed_replay_resumes_from_checkpoints(dir.path(), &recorded);

    // A changed prompt (longer history) is not in the cache: the run fails naming the
    // agent and the request.
    let changed = experiment(dir.path(), 3);
    let changed_out = dir.path().join("changed").to_string_lossy().into_owned();
    let miss = mosaic(
        &[
            "run",
            &changed.to_string_lossy(),
            "--out",
            &changed_out,
            "--llm-cache",
            "replay",
            "--llm-cache-from",
            &recorded.to_string_lossy(),
        ],
        true,
    );
    assert_eq!(miss.status.code(), Some(1), "{}", stderr(&miss));
    let error = stderr(&miss);
    assert!(
        error.contains("agent `green_0`") && error.contains("not hold"),
        "{error}"
    );
}

#[test]
fn cache_options_that_cannot_work_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = experiment(dir.path(), 1);
    let file = file.to_string_lossy();
    let out = dir.path().to_string_lossy();
    let no_source = mosaic(
        &["run", &file, "--out", &out, "--llm-cache", "replay"],
        true,
    );
    assert_eq!(no_source.status.code(), Some(2));
    assert!(stderr(&no_source).contains("--llm-cache-from"));
    let not_a_run = mosaic(
        &[
            "run",
            &file,
            "--out",
            &out,
            "--llm-cache",
            "replay",
            "--llm-cache-from",
            &dir.path().join("nothing").to_string_lossy(),
        ],
        true,
    );
    assert_eq!(not_a_run.status.code(), Some(2), "{}", stderr(&not_a_run));
    assert!(stderr(&not_a_run).contains("nothing"));
    // Nothing was written for either.
    let written: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .collect();
    assert!(written.is_empty(), "{written:?}");
}

/// Replays `recorded` slowly with a checkpoint at every step, kills the replay once some
/// steps are durable, and resumes it with the same cache and no model: every request after
/// the resume must be one the recorded run made, and the records end equal.
fn killed_replay_resumes_from_checkpoints(dir: &Path, recorded: &Path) {
    let slow = experiment_with(
        dir,
        2,
        "pace_ms = 250\nsupervision = { checkpoint_interval_ms = 0 }",
    );
    let out = dir.join("killed");
    let run = out.join("r");
    let cache = ["--llm-cache", "replay", "--llm-cache-from"];
    let mut command = Command::new(env!("CARGO_BIN_EXE_mosaic"));
    command
        .arg("run")
        .arg(&slow)
        .arg("--out")
        .arg(&out)
        .args(["--run-id", "r"])
        .args(cache)
        .arg(recorded)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    for name in local_model().keys() {
        command.env_remove(name);
    }
    let mut child = command.spawn().unwrap();
    let started = std::time::Instant::now();
    // Step lines reach the file when a checkpoint makes them durable: once step 1's are
    // there, the checkpoint before step 1 is stored (the sink handles events in order).
    let second_step = |text: String| text.contains("\"step_index\":1,");
    while !std::fs::read_to_string(run.join("steps.jsonl")).is_ok_and(second_step) {
        let running = child.try_wait().unwrap().is_none();
        assert!(running, "the replay ended early");
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    let mut args = vec!["resume".to_owned(), run.to_string_lossy().into_owned()];
    args.extend(cache.map(str::to_owned));
    args.push(recorded.to_string_lossy().into_owned());
    let resumed = mosaic(&args, true);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    for file in ["steps.jsonl", "episodes.jsonl"] {
        let (clean, resumed) = (
            sorted_lines(&recorded.join(file)),
            sorted_lines(&run.join(file)),
        );
        assert_eq!(clean.len(), resumed.len(), "{file}: lines lost or doubled");
        if let Some((clean, resumed)) = clean.iter().zip(&resumed).find(|(a, b)| a != b) {
            panic!("{file} differs after the resume:\n{resumed}\n{clean}");
        }
    }
    let episodes = std::fs::read_to_string(run.join("episodes.jsonl")).unwrap();
    assert!(
        episodes.contains("resumed from the checkpoint at step"),
        "no episode continued from a checkpoint: {episodes}"
    );
}
