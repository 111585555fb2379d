//! The token of listening workers, end to end with the `mosaic_worker` package over TCP: the
//! right token plays, a wrong or missing one is refused with an error naming the worker's
//! address, a worker that does not check a token is refused by mosaic, and the token shows
//! in no error, log line or worker log.

// Shared by several test crates; each uses part of it.
use mosaic_test_kit::python::ListeningWorker;
#[path = "support/registry.rs"]
mod registry;

use mosaic_core::{Environment, Settings, Transition};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

const TOKEN: &str = "tok-5b1e0d-must-not-leak";
/// The listening worker of these tests.
const GYMNASIUM: &[&str] = &["gymnasium", "MiniGrid-Empty-5x5-v0"];

/// Every log line of this test process, as text.
fn captured_logs() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&logs);
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || Sink(Arc::clone(&sink)))
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        logs
    })
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The settings of a `worker` env reaching `address`, with `extra` settings.
fn settings(address: &str, extra: serde_json::Value) -> Settings {
    let mut settings = serde_json::json!({ "connect": address, "start_timeout_ms": 30000 });
    if let (Some(base), serde_json::Value::Object(extra)) = (settings.as_object_mut(), extra) {
        base.extend(extra);
    }
    match settings {
        serde_json::Value::Object(map) => map,
        _ => unreachable!(),
    }
}

fn connect(address: &str, extra: serde_json::Value) -> Result<Box<dyn Environment>, String> {
    make(&settings(address, extra))
}

fn make(settings: &Settings) -> Result<Box<dyn Environment>, String> {
    registry::external_envs()
        .make("worker", settings)
        .map_err(|e| e.to_string())
}

/// The error of a connection that must fail.
fn refusal(address: &str, extra: serde_json::Value) -> String {
    match connect(address, extra) {
        Ok(_) => panic!("{address}: connected"),
        Err(e) => e,
    }
}

/// A file holding the token, as an operator would write it.
fn token_file(dir: &Path, token: &str) -> String {
    let path = dir.join(format!("token-{token}"));
    std::fs::write(&path, format!("{token}\n")).unwrap();
    path.display().to_string()
}

fn assert_no_token(what: &str, text: &str) {
    assert!(
        !text.contains(TOKEN),
        "the token leaked into {what}: {text}"
    );
}

#[test]
fn the_right_token_connects_and_plays() {
    captured_logs();
    let dir = tempfile::tempdir().unwrap();
    let mut worker = ListeningWorker::start(GYMNASIUM, Some(TOKEN), dir.path());
    let file = token_file(dir.path(), TOKEN);
    let mut env = connect(&worker.address, serde_json::json!({ "token_file": file }))
        .unwrap_or_else(|e| panic!("{e}"));
    env.reset(7).unwrap();
    let mut out = Transition::default();
    let mut steps = 0;
    while !env.acting().is_empty() && steps < 5 {
        let actions = vec![Some(mosaic_core::Action(2)); env.spec().agents.len()];
        env.step(&actions, &mut out).unwrap();
        steps += 1;
    }
    assert_eq!(steps, 5);
    drop(env);
    assert!(
        worker.wait().is_some_and(|s| s.success()),
        "{}",
        worker.log()
    );
    let log = worker.log();
    assert!(log.contains("(token required)"), "{log}");
    assert_no_token("the worker's log", &log);
    assert_no_token(
        "mosaic's log",
        &String::from_utf8_lossy(&captured_logs().lock().unwrap()),
    );
}

#[test]
fn a_wrong_or_missing_token_is_refused_naming_the_address() {
    captured_logs();
    let dir = tempfile::tempdir().unwrap();
    let worker = ListeningWorker::start(GYMNASIUM, Some(TOKEN), dir.path());
    let wrong = token_file(dir.path(), "not-the-token");
    let err = refusal(&worker.address, serde_json::json!({ "token_file": wrong }));
    assert!(
        err.contains(&format!("cannot connect to worker at {}", worker.address))
            && err.contains("the worker refused the connection: authentication failed"),
        "{err}"
    );
    assert!(!err.contains("not-the-token"), "{err}");
    // No token at all: the worker waits a few seconds for one, then refuses.
    let err = refusal(&worker.address, serde_json::json!({}));
    assert!(
        err.contains(&worker.address) && err.contains("authentication required"),
        "{err}"
    );
    let log = worker.log();
    assert_eq!(log.matches("refused a connection from").count(), 2, "{log}");
    assert_no_token("the worker's log", &log);
    assert!(!log.contains("not-the-token"), "{log}");
    assert_no_token(
        "mosaic's log",
        &String::from_utf8_lossy(&captured_logs().lock().unwrap()),
    );
}

#[test]
fn a_worker_that_does_not_check_the_token_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut worker = ListeningWorker::start(GYMNASIUM, None, dir.path());
    let file = token_file(dir.path(), TOKEN);
    let err = refusal(&worker.address, serde_json::json!({ "token_file": file }));
    assert!(
        err.contains(&worker.address) && err.contains("did not check it"),
        "{err}"
    );
    assert_no_token("the error", &err);
    assert_eq!(
        worker.wait().and_then(|s| s.code()),
        Some(3),
        "{}",
        worker.log()
    );
}

#[test]
fn a_token_source_that_fails_is_named_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent").display().to_string();
    let err = refusal(
        "tcp://127.0.0.1:1",
        serde_json::json!({ "token_file": missing }),
    );
    assert!(
        err.contains("token_file = ") && err.contains("absent"),
        "{err}"
    );
    // A setting to fix, not a start to retry: the run stops at once.
    let Err(unreadable) = registry::external_envs().make(
        "worker",
        &settings(
            "tcp://127.0.0.1:1",
            serde_json::json!({ "token_file": missing }),
        ),
    ) else {
        panic!("connected with an unreadable token")
    };
    assert!(!unreadable.start_failure, "{unreadable}");
    let mut spawned = Settings::new();
    spawned.insert("command".into(), serde_json::json!(["w"]));
    spawned.insert("token_env".into(), "X".into());
    let Err(err) = make(&spawned) else {
        panic!("a spawned worker took a token")
    };
    assert!(
        err.contains("token_env and token_file are for a listening worker"),
        "{err}"
    );
}
