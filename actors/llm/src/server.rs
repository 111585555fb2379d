//! The local model server: a supervised llama.cpp `llama-server` process.
//!
//! [`LlmServer`] starts the server on 127.0.0.1 on a free port, waits for `/health`,
//! restarts it when it dies (at most [`LlmServerConfig::max_restarts`] times per minute,
//! then it reports the failure), and stops it when the actor stops or on [`StopServer`].
//! [`GetEndpoint`] answers with the base URL once the server is healthy. The server runs in
//! a process group of its own, listed in the run's process list while it runs
//! (`mosaic_external::ledger`), so a killed `mosaic`'s next resume ends it.
//!
//! The binary and the model come from `scripts/setup/llm-server.sh`, which prints
//! `MOSAIC_LLAMA_SERVER=...` and `MOSAIC_LLM_MODEL=...` (see [`LlmServerConfig::from_env`]);
//! `MOSAIC_LLAMA_THREADS`, `MOSAIC_LLAMA_SLOTS`, `MOSAIC_LLAMA_CONTEXT` and
//! `MOSAIC_LLAMA_ARGS` optionally set its thread count, its parallel slots, each slot's
//! context and further `llama-server` arguments.

use actix::prelude::*;
use mosaic_external::ledger;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncBufReadExt;
use tokio::sync::oneshot;

/// Environment variable naming the `llama-server` binary.
pub const SERVER_ENV: &str = "MOSAIC_LLAMA_SERVER";
/// Environment variable naming the GGUF model.
pub const MODEL_ENV: &str = "MOSAIC_LLM_MODEL";
/// Environment variable with the number of threads of the server (optional; llama.cpp
/// uses the physical cores by default). Fewer threads than cores answer far faster when
/// other processes compete for the CPU: on two busy cores one thread answered about four
/// times faster than two.
pub const THREADS_ENV: &str = "MOSAIC_LLAMA_THREADS";
/// Environment variable with the number of parallel slots (optional; default 4).
pub const SLOTS_ENV: &str = "MOSAIC_LLAMA_SLOTS";
/// Environment variable with each slot's context in tokens (optional; default 2048). Long
/// prompts, such as ALEM's, need more than the default.
pub const CONTEXT_ENV: &str = "MOSAIC_LLAMA_CONTEXT";
/// Environment variable with further `llama-server` arguments, split at whitespace
/// (optional), e.g. `--rope-scaling yarn --rope-scale 2 --yarn-orig-ctx 8192` to stretch a
/// model's context. (Not `-n`: a request's `max_tokens` overrides it.)
pub const ARGS_ENV: &str = "MOSAIC_LLAMA_ARGS";

/// The local server failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerError {
    /// Not configured (binary or model unknown or missing).
    #[error("{0}")]
    Config(String),
    /// It did not start or become healthy.
    #[error("llama-server did not start: {0}")]
    Start(String),
    /// It died too often.
    #[error("llama-server died {restarts} times within a minute, giving up; last output: {output}")]
    Crashing {
        /// Restarts in the window.
        restarts: u32,
        /// The end of its output.
        output: String,
    },
    /// It was stopped.
    #[error("llama-server was stopped")]
    Stopped,
}

/// How to run the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LlmServerConfig {
    /// The `llama-server` binary.
    pub binary: PathBuf,
    /// The GGUF model.
    pub model: PathBuf,
    /// Parallel slots (`-np`): requests served at once.
    pub parallel: u32,
    /// Context size over all slots (`-c`).
    pub context: u32,
    /// Threads (`--threads`); `None`: llama.cpp's default.
    pub threads: Option<u32>,
    /// Extra command-line arguments.
    pub extra_args: Vec<String>,
    /// How long to wait for `/health`.
    pub ready_timeout: Duration,
    /// Restarts allowed within a minute before giving up.
    pub max_restarts: u32,
}

impl LlmServerConfig {
    /// A configuration for `binary` serving `model` with 4 slots of 2048 tokens.
    pub fn new(binary: impl Into<PathBuf>, model: impl Into<PathBuf>) -> Self {
        Self {
            binary: binary.into(),
            model: model.into(),
            parallel: 4,
            context: 8192,
            threads: None,
            extra_args: Vec::new(),
            ready_timeout: Duration::from_secs(60),
            max_restarts: 3,
        }
    }

    /// Binary and model from `MOSAIC_LLAMA_SERVER` and `MOSAIC_LLM_MODEL`.
    pub fn from_env() -> Result<Self, ServerError> {
        let var = |name: &str| {
            std::env::var_os(name).map(PathBuf::from).ok_or_else(|| {
                ServerError::Config(format!(
                    "{name} is not set: run scripts/setup/llm-server.sh and export what it prints"
                ))
            })
        };
        let mut config = Self::new(var(SERVER_ENV)?, var(MODEL_ENV)?);
        config.threads = Self::threads_from_env()?;
        let per_slot = count_from_env(CONTEXT_ENV, "tokens of context per slot")?
            .unwrap_or(config.context / config.parallel);
        config.parallel = count_from_env(SLOTS_ENV, "slots")?.unwrap_or(config.parallel);
        config.context = per_slot.checked_mul(config.parallel).ok_or_else(|| {
            ServerError::Config(format!(
                "{SLOTS_ENV} × {CONTEXT_ENV} = {} × {per_slot} tokens is too large",
                config.parallel
            ))
        })?;
        if let Some(args) = std::env::var_os(ARGS_ENV) {
            let args = args
                .to_str()
                .ok_or_else(|| ServerError::Config(format!("{ARGS_ENV} is not valid UTF-8")))?;
            config.extra_args = args.split_whitespace().map(str::to_owned).collect();
        }
        config.check()?;
        Ok(config)
    }

    /// The thread count in `MOSAIC_LLAMA_THREADS`, if it is set.
    pub fn threads_from_env() -> Result<Option<u32>, ServerError> {
        count_from_env(THREADS_ENV, "threads")
    }

    /// Checks that the binary and the model exist.
    pub fn check(&self) -> Result<(), ServerError> {
        for (what, path) in [
            ("llama-server binary", &self.binary),
            ("model", &self.model),
        ] {
            if !path.is_file() {
                return Err(ServerError::Config(format!(
                    "{what} {} does not exist",
                    path.display()
                )));
            }
        }
        Ok(())
    }

    /// The model's name as sent in requests and used in cache keys: its file name.
    pub fn model_name(&self) -> String {
        self.model
            .file_name()
            .map_or_else(|| "local".into(), |n| n.to_string_lossy().into_owned())
    }
}

/// The count in the environment variable `name`, if it is set.
fn count_from_env(name: &str, what: &str) -> Result<Option<u32>, ServerError> {
    std::env::var_os(name)
        .map(|value| parse_count(name, what, &value))
        .transpose()
}

/// A count of `what` (1 or more) as the environment variable `name` gives it.
fn parse_count(name: &str, what: &str, value: &std::ffi::OsStr) -> Result<u32, ServerError> {
    value
        .to_str()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|count| *count > 0)
        .ok_or_else(|| {
            ServerError::Config(format!(
                "{name}={}: expected a number of {what} (1 or more)",
                value.to_string_lossy()
            ))
        })
}

/// Asks for the server's base URL (`http://127.0.0.1:PORT/v1`), waiting until it is
/// healthy.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Result<String, ServerError>")]
pub struct GetEndpoint;

/// Stops the server process and the actor.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct StopServer;

/// How many times the server has been started (first start included).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "u32")]
pub struct Starts;

/// Kills the server process as if it had crashed (for supervision tests and drills).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "bool")]
pub struct KillProcess;

enum State {
    Starting,
    Ready(String),
    Failed(ServerError),
}

/// The supervised `llama-server` process.
pub struct LlmServer {
    config: LlmServerConfig,
    state: State,
    waiters: Vec<oneshot::Sender<Result<String, ServerError>>>,
    kill: Option<oneshot::Sender<()>>,
    crashes: VecDeque<Instant>,
    starts: u32,
    generation: u64,
    output: Arc<Mutex<VecDeque<String>>>,
}

impl std::fmt::Debug for LlmServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmServer").finish_non_exhaustive()
    }
}

/// The server's process group, listed in the run's process list. Dropped when the watcher
/// ends, or with the watcher when the actor stops first: either way, whatever is left of
/// the group is killed, then it leaves the list.
struct ServerGroup {
    pgid: u32,
    _listed: ledger::Registration,
}

impl Drop for ServerGroup {
    fn drop(&mut self) {
        ledger::kill_group(self.pgid);
    }
}

/// Lines of server output kept for error messages.
const OUTPUT_LINES: usize = 20;

fn free_port() -> Result<u16, ServerError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| ServerError::Start(format!("no free port on 127.0.0.1: {e}")))
}

impl LlmServer {
    /// A server actor (not started) for `config`.
    pub fn new(config: LlmServerConfig) -> Self {
        Self {
            config,
            state: State::Starting,
            waiters: Vec::new(),
            kill: None,
            crashes: VecDeque::new(),
            starts: 0,
            generation: 0,
            output: Arc::default(),
        }
    }

    fn last_output(&self) -> String {
        self.output
            .lock()
            .map(|lines| lines.iter().cloned().collect::<Vec<_>>().join(" | "))
            .unwrap_or_default()
    }

    fn settle(&mut self, result: Result<String, ServerError>) {
        self.state = match &result {
            Ok(url) => State::Ready(url.clone()),
            Err(e) => State::Failed(e.clone()),
        };
        for waiter in self.waiters.drain(..) {
            // A waiter that gave up needs no answer.
            let _ = waiter.send(result.clone());
        }
    }

    /// Spawns the process, watches it, and polls `/health`.
    fn launch(&mut self, ctx: &mut Context<Self>) {
        self.state = State::Starting;
        self.starts += 1;
        self.generation += 1;
        let generation = self.generation;
        let port = match free_port() {
            Ok(port) => port,
            Err(e) => return self.settle(Err(e)),
        };
        let config = &self.config;
        let mut command = tokio::process::Command::new(&config.binary);
        command
            .arg("-m")
            .arg(&config.model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["-c", &config.context.to_string()])
            .args(["-np", &config.parallel.to_string()])
            .args(
                config
                    .threads
                    .iter()
                    .flat_map(|n| ["--threads".to_owned(), n.to_string()]),
            )
            .args(&config.extra_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            // A group of its own, listed in the run's process list, like a worker's: a
            // killed mosaic's next resume ends it.
            .process_group(0);
        let tag = ledger::new_tag();
        command.env(ledger::TAG_ENV, &tag);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                let error = ServerError::Start(format!("{}: {e}", config.binary.display()));
                return self.settle(Err(error));
            }
        };
        let group = child.id().map(|pgid| {
            let command = format!("{} -m {}", config.binary.display(), config.model.display());
            ServerGroup {
                pgid,
                _listed: ledger::register(pgid, &tag, &command),
            }
        });
        tracing::info!(port, model = %config.model.display(), "starting llama-server");
        if let Some(stderr) = child.stderr.take() {
            let output = self.output.clone();
            actix::spawn(async move {
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Ok(mut kept) = output.lock() {
                        if kept.len() == OUTPUT_LINES {
                            kept.pop_front();
                        }
                        kept.push_back(line);
                    }
                }
            });
        }
        let (kill_tx, kill_rx) = oneshot::channel();
        self.kill = Some(kill_tx);
        // Watch the process until it exits or is killed. Deliberate stops bump the
        // generation first, so only unexpected exits count as crashes.
        let watch = async move {
            let status = tokio::select! {
                status = child.wait() => status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string()),
                _ = kill_rx => {
                    // Killing a process that already exited is not an error worth reporting.
                    let _ = child.kill().await;
                    "killed".to_owned()
                }
            };
            drop(group);
            status
        };
        ctx.spawn(watch.into_actor(self).map(move |status, act, ctx| {
            if act.generation == generation {
                act.crashed(status, ctx);
            }
        }));
        let base = format!("http://127.0.0.1:{port}");
        let timeout = config.ready_timeout;
        let health = async move {
            let client = crate::backend::http_client();
            let deadline = Instant::now() + timeout;
            loop {
                if let Ok(r) = client.get(format!("{base}/health")).send().await
                    && r.status().is_success()
                {
                    return Ok(format!("{base}/v1"));
                }
                if Instant::now() > deadline {
                    return Err(ServerError::Start(format!(
                        "no healthy /health within {timeout:?}"
                    )));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        ctx.spawn(health.into_actor(self).map(move |result, act, _| {
            if act.generation != generation {
                return;
            }
            if let Ok(url) = &result {
                tracing::info!(%url, "llama-server ready");
            }
            let result = result.map_err(|e| match e {
                ServerError::Start(m) => {
                    ServerError::Start(format!("{m}; output: {}", act.last_output()))
                }
                other => other,
            });
            act.settle(result);
        }));
    }

    fn crashed(&mut self, status: String, ctx: &mut Context<Self>) {
        let now = Instant::now();
        self.crashes.push_back(now);
        while self
            .crashes
            .front()
            .is_some_and(|t| now.duration_since(*t) > Duration::from_secs(60))
        {
            self.crashes.pop_front();
        }
        let output = self.last_output();
        tracing::warn!(%status, "llama-server exited: {output}");
        if self.crashes.len() as u32 > self.config.max_restarts {
            self.kill = None;
            self.settle(Err(ServerError::Crashing {
                restarts: self.crashes.len() as u32,
                output,
            }));
        } else {
            self.launch(ctx);
        }
    }
}

impl Actor for LlmServer {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(1024);
        // Stopped before it ever ran (an experiment checked and its actor system dropped):
        // there is no runtime left to launch a process on, and no request to serve.
        if ctx.state().stopping() {
            return;
        }
        if let Err(e) = self.config.check() {
            self.settle(Err(e));
            return;
        }
        self.launch(ctx);
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        if let Some(kill) = self.kill.take() {
            // The watcher may be gone with the actor; kill_on_drop covers that case.
            let _ = kill.send(());
        }
    }
}

impl Handler<GetEndpoint> for LlmServer {
    type Result = ResponseFuture<Result<String, ServerError>>;

    fn handle(&mut self, _: GetEndpoint, _: &mut Context<Self>) -> Self::Result {
        match &self.state {
            State::Ready(url) => {
                let url = url.clone();
                Box::pin(async move { Ok(url) })
            }
            State::Failed(e) => {
                let e = e.clone();
                Box::pin(async move { Err(e) })
            }
            State::Starting => {
                let (tx, rx) = oneshot::channel();
                self.waiters.push(tx);
                Box::pin(async move { rx.await.unwrap_or(Err(ServerError::Stopped)) })
            }
        }
    }
}

impl Handler<StopServer> for LlmServer {
    type Result = ();

    fn handle(&mut self, _: StopServer, ctx: &mut Context<Self>) {
        self.generation += 1;
        if let Some(kill) = self.kill.take() {
            let _ = kill.send(());
        }
        self.settle(Err(ServerError::Stopped));
        ctx.stop();
    }
}

impl Handler<Starts> for LlmServer {
    type Result = u32;

    fn handle(&mut self, _: Starts, _: &mut Context<Self>) -> u32 {
        self.starts
    }
}

impl Handler<KillProcess> for LlmServer {
    type Result = bool;

    fn handle(&mut self, _: KillProcess, _: &mut Context<Self>) -> bool {
        // Kill without bumping the generation: the watcher sees an unexpected exit.
        match self.kill.take() {
            Some(kill) => kill.send(()).is_ok(),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_external::ledger::{GroupEntry, live_members};
    use std::ffi::OsStr;
    use std::os::unix::fs::PermissionsExt as _;

    /// Waits up to 10 s for `done`.
    async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let since = Instant::now();
        while !done() {
            assert!(
                since.elapsed() < Duration::from_secs(10),
                "{what} never came"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[actix_rt::test]
    async fn the_server_runs_in_a_listed_group_of_its_own_that_ends_with_it() {
        let dir = tempfile::tempdir().unwrap();
        // A stand-in server that starts a helper of its own and never gets healthy.
        let binary = dir.path().join("llama-server");
        let helper = dir.path().join("helper.pid");
        std::fs::write(
            &binary,
            format!(
                "#!/bin/sh\nsleep 600 &\necho $! > {}\nexec sleep 600\n",
                helper.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
        let model = dir.path().join("model.gguf");
        std::fs::write(&model, b"").unwrap();
        let list = dir.path().join("processes.json");
        let recording = ledger::record_into(&list);
        let ours = |entry: &GroupEntry| entry.command.contains(&*binary.to_string_lossy());
        let listed = || -> Vec<GroupEntry> {
            std::fs::read(&list)
                .ok()
                .and_then(|text| serde_json::from_slice(&text).ok())
                .unwrap_or_default()
        };
        let server = LlmServer::new(LlmServerConfig::new(&binary, &model)).start();
        wait_for("the listed server and its helper", || {
            listed().iter().any(ours)
                && std::fs::read_to_string(&helper).is_ok_and(|pid| pid.ends_with('\n'))
        })
        .await;
        let group = listed().into_iter().find(ours).unwrap().pgid;
        let helper: u32 = std::fs::read_to_string(&helper)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            live_members(group).contains(&helper),
            "the helper is in the server's group"
        );
        assert!(
            !live_members(group).contains(&std::process::id()),
            "a group of its own"
        );

        server.send(StopServer).await.unwrap();
        wait_for("the end of the server's group", || {
            live_members(group).is_empty() && !listed().iter().any(ours)
        })
        .await;
        drop(recording);
    }

    #[test]
    fn counts_from_the_environment_are_checked() {
        assert_eq!(
            parse_count(THREADS_ENV, "threads", OsStr::new(" 1 ")),
            Ok(1)
        );
        for bad in ["0", "two", "-1", ""] {
            let error = parse_count(SLOTS_ENV, "slots", OsStr::new(bad)).unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains(&format!("{SLOTS_ENV}={bad}: expected a number of slots")),
                "{error}"
            );
        }
    }
}
