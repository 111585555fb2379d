//! A Python policy worker and a language-model agent talk in one team: `mosaic run` on
//! soccer with green_0 served by a `mosaic_worker` policy that announces the `messages`
//! capability and green_1 an `llm` agent whose backend is a stub chat server in this test
//! (no model). Each reads what the other posted the step before, addresses its answer, and
//! both sides' messages are recorded the same way. The LLM agent's requests carry its
//! backend pass-through settings (`reasoning_effort`, `extra_body`).

// Shared with the adapters tests; this test uses only part of it.
use mosaic_test_kit::{chat_stub, python};

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// What the stub model always answers: stay, and tell green_0 something.
const ANSWER: &str = r#"{"action": "noop", "message": "@green_0 llm says hi"}"#;

const STEPS: u64 = 4;

fn experiment(python: &str, worker: &Path, model: &str) -> String {
    format!(
        r#"name = "worker-messages"
episodes = 1
max_steps = {STEPS}
parallelism = 1
seeds = {{ plan = "fixed", seed = 5 }}

[[operators]]
id = "talk"
env = "soccer-2v2"

[operators.agents]
green_0 = {{ kind = "worker", command = [{python:?}, {worker:?}], message_cap = 12 }}
green_1 = {{ kind = "llm", backend = {{ base_url = {model:?}, model = "stub" }}, record_prompt = true, http_retries = 0, reasoning_effort = "low", extra_body = {{ top_k = 5 }} }}
"*" = {{ kind = "random" }}
"#,
        worker = worker.to_string_lossy(),
    )
}

#[test]
fn a_python_worker_and_an_llm_agent_exchange_recorded_messages() {
    let py = python::python_env();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("talk.toml");
    let worker = py.workers_dir.join("talking_policy.py");
    let stub = chat_stub::start(|_| ANSWER.to_owned());
    std::fs::write(&file, experiment(&py.python, &worker, &stub.url)).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .args(["run", &file.to_string_lossy(), "--out"])
        .arg(dir.path().join("runs"))
        .args(["--run-id", "talk"])
        .output()
        .expect("mosaic runs");
    assert!(
        output.status.success(),
        "mosaic run failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let steps: Vec<Value> = std::fs::read_to_string(dir.path().join("runs/talk/steps.jsonl"))
        .expect("step records")
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON"))
        .collect();
    let decision = |agent: &str, step: u64| -> &Value {
        let record = steps
            .iter()
            .find(|s| s["agent_id"] == agent && s["step_index"] == step)
            .unwrap_or_else(|| panic!("no record of {agent} at step {step}"));
        assert_eq!(record["decision_source"], "policy", "{record}");
        &record["decision"]
    };

    for step in 0..STEPS {
        let worker = decision("green_0", step);
        let llm = decision("green_1", step);
        let first = step == 0;
        // The worker reads the LLM's message of the step before, and answers its sender;
        // its message ("green_0 at N ok") is cut to its cap of 12 characters once the
        // address is taken off.
        assert_eq!(worker["received"], u64::from(!first), "{worker}");
        let heard: &[&str] = if first {
            &[]
        } else {
            &["green_1: llm says hi"]
        };
        assert_eq!(worker["detail"]["heard"], serde_json::json!(heard));
        assert_eq!(worker["message"], format!("green_0 at {step}"));
        if first {
            assert!(worker.get("message_to").is_none(), "{worker}");
        } else {
            assert_eq!(worker["message_to"], "green_1");
        }
        // The LLM reads the worker's message in its prompt and addresses green_0.
        assert_eq!(llm["received"], u64::from(!first), "{llm}");
        assert_eq!(llm["message"], "llm says hi");
        assert_eq!(llm["message_to"], "green_0");
        if !first {
            let prompt = llm["prompt"].to_string();
            let said = format!("green_0 at {}", step - 1);
            assert!(prompt.contains(&said), "{said} not in {prompt}");
            assert!(!prompt.contains(&format!("{said} ok")), "not cut: {prompt}");
        }
    }
    let bodies: Vec<Value> = stub.bodies.try_iter().collect();
    assert_eq!(bodies.len() as u64, STEPS, "one request a step");
    for body in &bodies {
        assert_eq!(body["reasoning_effort"], "low", "{body}");
        assert_eq!(body["top_k"], 5, "{body}");
    }
    // The other team reads nothing and says nothing.
    for record in steps.iter().filter(|s| s["agent_id"] == "blue_0") {
        assert!(record["decision"].get("received").is_none(), "{record}");
    }
}
