//! A language-model agent none of whose decisions came from the model, with the real
//! `mosaic` binary and a stub chat server in this test (no model): one that never answers
//! (every decision misses its deadline) and one that answers every request with an HTTP
//! error. The run warns; `--fail-on-model-failure` makes it exit with code 3; the report's
//! LLM usage section lists the agent whose every decision timed out, with its timeouts. A
//! model that answers passes with the flag.

// Shared by the binary's tests; each uses part of it.
#[allow(dead_code)]
#[path = "support/cli.rs"]
mod cli;

use cli::{mosaic, succeed, text};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;

/// How the stub chat server behaves.
#[derive(Clone, Copy)]
enum Stub {
    /// Reads each request and never answers.
    Silent,
    /// Answers every request with HTTP 500.
    Failing,
    /// Answers every request with a legal action.
    Answering,
}

/// Reads one HTTP request (head and body) from `stream`; `false` at its end.
fn read_request(reader: &mut BufReader<TcpStream>) -> bool {
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return false;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).is_ok()
}

/// Starts the stub on a loopback port; answers its base URL.
fn stub(behaviour: Stub) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let url = format!("http://{}/v1", listener.local_addr().expect("an address"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream);
                while read_request(&mut reader) {
                    let (status, body) = match behaviour {
                        // Hold the connection open without a word, until the client leaves.
                        Stub::Silent => continue,
                        Stub::Failing => ("500 Internal Server Error", "{\"error\": \"down\"}".to_owned()),
                        Stub::Answering => (
                            "200 OK",
                            serde_json::json!({
                                "choices": [{"message": {"role": "assistant", "content": "{\"action\": \"noop\"}"}, "finish_reason": "stop"}],
                                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                            })
                            .to_string(),
                        ),
                    };
                    let reply = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if reader.get_mut().write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

/// Runs a three-step soccer episode with green_0 an `llm` agent on the stub at `model`,
/// deciding within 300 ms; `flag` adds `--fail-on-model-failure`.
fn run(dir: &Path, id: &str, model: &str, flag: bool) -> std::process::Output {
    let file = dir.join(format!("{id}.toml"));
    std::fs::write(
        &file,
        format!(
            r#"name = "models"
episodes = 1
max_steps = 3
parallelism = 1
decision_timeout_ms = 300
seeds = {{ plan = "fixed", seed = 5 }}

[[operators]]
id = "pitch"
env = "soccer-2v2"

[operators.agents]
green_0 = {{ kind = "llm", backend = {{ base_url = {model:?}, model = "stub" }}, http_retries = 0 }}
"*" = {{ kind = "random" }}
"#
        ),
    )
    .unwrap();
    let mut command = mosaic();
    command
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(dir.join("runs"))
        .args(["--run-id", id]);
    if flag {
        command.arg("--fail-on-model-failure");
    }
    command.output().expect("mosaic runs")
}

#[test]
fn a_model_that_never_answers_is_warned_about_reported_and_fails_the_run_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let silent = stub(Stub::Silent);

    let warned = run(dir.path(), "silent", &silent, false);
    let said = text(&warned);
    assert_eq!(warned.status.code(), Some(0), "{said}");
    assert!(
        said.contains("warning: every decision of green_0 (operator pitch)")
            && said.contains("(3 of 3: 3 timed out, 0 failed)"),
        "{said}"
    );
    let report = succeed(mosaic().arg("report").arg(dir.path().join("runs/silent")));
    assert!(report.contains("## LLM usage"), "{report}");
    assert!(
        report.contains("| `pitch` | green_0 | llm/llm | 0 | 3 |"),
        "the agent is listed with its timeouts: {report}"
    );

    let failed = run(dir.path(), "silent-strict", &silent, true);
    let said = text(&failed);
    assert_eq!(failed.status.code(), Some(3), "{said}");
    assert!(said.contains("--fail-on-model-failure"), "{said}");
    assert!(
        said.contains("warning: every decision of green_0"),
        "{said}"
    );
    assert!(
        dir.path()
            .join("runs/silent-strict/episodes.jsonl")
            .is_file(),
        "the run is recorded all the same"
    );
}

#[test]
fn a_model_that_answers_only_errors_fails_the_run_on_request_and_one_that_answers_passes() {
    let dir = tempfile::tempdir().unwrap();
    let failed = run(dir.path(), "errors", &stub(Stub::Failing), true);
    let said = text(&failed);
    assert_eq!(failed.status.code(), Some(3), "{said}");
    assert!(said.contains("(3 of 3: 0 timed out, 3 failed)"), "{said}");

    let answered = run(dir.path(), "answers", &stub(Stub::Answering), true);
    let said = text(&answered);
    assert_eq!(answered.status.code(), Some(0), "{said}");
    assert!(!said.contains("every decision of"), "{said}");
}
