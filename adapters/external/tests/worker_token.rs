//! The token of listening workers, end to end with the `mosaic_worker` package over TCP: the
//! right token plays, a wrong or missing one is refused with an error naming the worker's
//! address, a worker that does not check a token is refused by mosaic, and the token shows
//! in no error, log line or worker log.

// Shared by several test crates; each uses part of it.
use mosaic_test_kit::python;
#[path = "support/registry.rs"]
mod registry;

use mosaic_core::{Environment, Settings, Transition};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

const TOKEN: &str = "tok-5b1e0d-must-not-leak";

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

/// A `mosaic_worker` gymnasium worker listening on a free TCP port, started by hand as on
/// another machine, with `MOSAIC_WORKER_TOKEN` set to `token` (when given); its stderr goes
/// to `log`.
struct ListeningWorker {
    address: String,
    child: Child,
    log: PathBuf,
}

impl ListeningWorker {
    fn start(token: Option<&str>, dir: &Path) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let address = format!("tcp://127.0.0.1:{port}");
        let argv = python::python_env().mosaic_worker(&[
            "gymnasium",
            "MiniGrid-Empty-5x5-v0",
            "--listen",
            &address,
        ]);
        let log = dir.join(format!("worker-{port}.log"));
        let mut command = Command::new(&argv[0]);
        command
            .args(&argv[1..])
            // Started by hand, not by mosaic: it needs the package on its path itself.
            .env("PYTHONPATH", mosaic_external::embedded::install().unwrap())
            .env_remove("MOSAIC_WORKER_TOKEN")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        if let Some(token) = token {
            command.env("MOSAIC_WORKER_TOKEN", token);
        }
        let child = command.spawn().unwrap();
        ListeningWorker {
            address,
            child,
            log,
        }
    }

    /// Waits (a while) for the worker to exit; its status.
    fn wait(&mut self) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap()
    }
}

impl Drop for ListeningWorker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
    let mut worker = ListeningWorker::start(Some(TOKEN), dir.path());
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
    let worker = ListeningWorker::start(Some(TOKEN), dir.path());
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
    let mut worker = ListeningWorker::start(None, dir.path());
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
