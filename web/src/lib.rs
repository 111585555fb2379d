//! The browser interface of mosaic (`mosaic serve`).
//!
//! - **Manual mode**: one viewport per operator configuration of the loaded experiment,
//!   side by side under one shared seed — the environment's frame, the agents with their
//!   paradigm badges, returns, last actions and, for LLM agents, their reasoning, messages
//!   and scratchpad. Reset All, Step All (every operator advances exactly one environment
//!   step), Run / Pause with a pacing slider. Agents of kind `human` take their actions
//!   from the keyboard or buttons of the page (legal actions only).
//! - **Recording**: with [`ServeConfig::record`], every episode played is recorded into a
//!   run directory (the layout `mosaic run` writes), which the runs browser, `mosaic
//!   report` and `mosaic replay` read like any other run.
//! - **Runs browser**: the recorded runs of a directory (sorted, filtered by text, status
//!   and date), paired comparisons of runs, their episode and per-agent tables,
//!   interactive charts of returns (and a training run's curves), and an episode viewer:
//!   a frame-by-frame replay of any episode, rebuilt from the recorded actions and
//!   checked against the recorded rewards, beside each agent's recorded decisions
//!   (actions, an LLM's reasoning, messages, scratchpad) and a timeline of the messages.
//!
//! The page is plain HTML, CSS and JavaScript embedded in the binary; live updates travel
//! as server-sent events, controls as small JSON posts. See `docs/manual-mode.md`.
//!
//! Security: the server listens on a loopback address unless given a token; with a token
//! every request must carry it (`Authorization: Bearer`, `X-Mosaic-Token`, the `token`
//! query parameter, or the cookie the page receives when it logs in at
//! [`WebServer::login_url`]; the page's own addresses never hold the token). No
//! endpoint runs anything that the loaded experiment file does not name; request bodies are
//! limited to [`MAX_BODY_BYTES`].
//!
//! ```no_run
//! use mosaic_web::{ServeConfig, serve};
//! # fn envs() -> mosaic_core::EnvRegistry { mosaic_adapters::native_envs() }
//! let mut config = ServeConfig::new(envs(), mosaic_actors::DeciderRegistry::baselines());
//! config.runs_dir = Some("runs".into());
//! actix_rt::System::new().block_on(serve(config)).unwrap();
//! ```

mod assets;
mod charts;
mod episode;
mod live;
mod record;
mod routes;
mod runs;
mod security;

use mosaic_actors::DeciderRegistry;
use mosaic_core::EnvRegistry;
use mosaic_core::{ExperimentSpec, SpecError};
use std::net::SocketAddr;
use std::path::PathBuf;

pub use record::RecordConfig;
pub use security::{TOKEN_ENV, resolve_token};

/// Turns the `seed` field of a JSON object into text: seeds are `u64`, and the page's
/// JavaScript numbers would round those above 2^53 (showing a seed that gives another
/// world).
pub(crate) fn seed_as_text(object: &mut serde_json::Value) {
    if let Some(seed) = object.get_mut("seed")
        && let Some(number) = seed.as_u64()
    {
        *seed = serde_json::Value::String(number.to_string());
    }
}

/// Serializes a seed as text (see [`seed_as_text`]).
pub(crate) fn serialize_seed<S: serde::Serializer>(seed: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(seed)
}

/// The largest request body accepted, in bytes (controls are a few numbers).
pub const MAX_BODY_BYTES: usize = 4096;

/// The address `mosaic serve` listens on by default.
pub const DEFAULT_BIND: &str = "127.0.0.1:8080";

/// What to serve.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// The experiment whose operator configurations are shown side by side; `None` serves
    /// only the runs browser.
    pub experiment: Option<ExperimentSpec>,
    /// The environments the experiment can name.
    pub envs: EnvRegistry,
    /// The decider kinds the experiment can name; `human` is added by the server.
    pub kinds: DeciderRegistry,
    /// Environments the runs browser may rebuild for replays of any recorded run; keep
    /// environments that start programs out of it (a run directory's settings are not
    /// vetted). An environment configured in the loaded experiment is always replayable.
    pub replay_envs: EnvRegistry,
    /// Where to listen.
    pub bind: SocketAddr,
    /// The token every request must carry; required unless `bind` is a loopback address.
    pub token: Option<String>,
    /// The directory of recorded runs shown by the runs browser.
    pub runs_dir: Option<PathBuf>,
    /// Where the experiment's episodes are recorded (a new run directory, typically in
    /// `runs_dir`); `None` records nothing.
    pub record: Option<RecordConfig>,
}

impl ServeConfig {
    /// No experiment, no runs directory, no recording, listening on [`DEFAULT_BIND`]
    /// without a token; replays may rebuild the in-process environments
    /// ([`mosaic_adapters::in_process_envs`]).
    pub fn new(envs: EnvRegistry, kinds: DeciderRegistry) -> Self {
        Self {
            experiment: None,
            replay_envs: mosaic_adapters::in_process_envs(),
            envs,
            kinds,
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            token: None,
            runs_dir: None,
            record: None,
        }
    }
}

/// The server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// A non-loopback address was asked for without a token.
    #[error(
        "listening on {bind} (not a loopback address) needs a token: pass --token or set {TOKEN_ENV}"
    )]
    TokenRequired {
        /// The address asked for.
        bind: SocketAddr,
    },
    /// The token is too short or has characters that cannot travel in a cookie or URL.
    #[error("bad token: {0}")]
    BadToken(String),
    /// The experiment does not fit the registered environments and decider kinds.
    #[error("experiment: {0}")]
    Experiment(#[from] SpecError),
    /// The first Reset All of the experiment failed.
    #[error("experiment: {0}")]
    Start(String),
    /// The manual episodes could not be recorded (the run directory could not be created,
    /// or writing it failed; what was made durable before is kept).
    #[error("recording: {0}")]
    Record(String),
    /// The runs directory is not a directory.
    #[error("runs directory {}: {message}", path.display())]
    RunsDir {
        /// The directory given.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The address could not be bound.
    #[error("cannot listen on {bind}: {source}")]
    Bind {
        /// The address asked for.
        bind: SocketAddr,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The HTTP server failed while running.
    #[error("web server: {0}")]
    Server(#[source] std::io::Error),
}

/// A started server: where it listens, and the future that runs it.
pub struct WebServer {
    addr: SocketAddr,
    server: actix_web::dev::Server,
    live: Option<std::sync::Arc<live::Live>>,
    token: Option<String>,
}

impl std::fmt::Debug for WebServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl WebServer {
    /// The address the server listens on (with the real port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address to open the page at: with a token, the login address that hands the
    /// browser its cookie (`http://ADDR/?token=...`; the page then moves to `/`).
    pub fn login_url(&self) -> String {
        match &self.token {
            Some(token) => format!("http://{}/?token={token}", self.addr),
            None => format!("http://{}/", self.addr),
        }
    }

    /// A handle that stops the server.
    pub fn handle(&self) -> actix_web::dev::ServerHandle {
        self.server.handle()
    }

    /// The run the experiment's episodes are recorded into: its id and directory.
    pub fn recording(&self) -> Option<(&str, &std::path::Path)> {
        self.live.as_deref().and_then(live::Live::recording)
    }

    /// Serves until stopped (Ctrl-C, `SIGTERM`, or [`WebServer::handle`]); then ends the
    /// episodes in progress and closes their recording.
    pub async fn run(self) -> Result<(), WebError> {
        let handle = self.server.handle();
        let watch = actix_rt::spawn(async move {
            match stop_signal().await {
                Ok(()) => handle.stop(false).await,
                Err(error) => tracing::warn!(%error, "cannot listen for Ctrl-C"),
            }
        });
        let served = self.server.await.map_err(WebError::Server);
        watch.abort();
        let closed = match &self.live {
            // A second Ctrl-C does not wait for the episodes in progress (a decision may take
            // long); every episode that ended before is durable already.
            Some(live) => tokio::select! {
                closed = live.close() => closed.unwrap_or(Ok(())),
                () = async {
                    if stop_signal().await.is_err() {
                        futures::future::pending::<()>().await;
                    }
                } => Err(WebError::Record(
                    "stopped again: the episodes in progress were not recorded".into(),
                )),
            },
            None => Ok(()),
        };
        served.and(closed)
    }
}

/// Ctrl-C, or on Unix `SIGTERM`.
async fn stop_signal() -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate())?;
        tokio::select! {
            interrupted = tokio::signal::ctrl_c() => interrupted,
            _ = terminate.recv() => Ok(()),
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c().await
}

/// Builds the experiment's sessions, resets them with the first planned seed and binds the
/// address. Must run inside an actix system (the sessions live on the current arbiter).
pub async fn start(config: ServeConfig) -> Result<WebServer, WebError> {
    security::check_bind(config.bind, config.token.as_deref())?;
    if let Some(dir) = &config.runs_dir
        && !dir.is_dir()
    {
        return Err(WebError::RunsDir {
            path: dir.clone(),
            message: "not a directory".into(),
        });
    }
    let live = match &config.experiment {
        Some(spec) => Some(
            live::Live::start(
                spec.clone(),
                &config.envs,
                &config.kinds,
                config.record.as_ref(),
            )
            .await?,
        ),
        None => None,
    };
    let runs = runs::Runs::new(&config);
    let security = security::Security::new(config.bind, config.token.clone());
    match routes::bind(config.bind, security, live.clone(), runs) {
        Ok(server) => Ok(server),
        Err(error) => {
            if let Some(live) = live {
                // Nothing was played: an empty recording goes again.
                live.close().await;
            }
            Err(error)
        }
    }
}

/// Starts the server and serves until Ctrl-C. Must run inside an actix system, e.g.
/// `actix_rt::System::new().block_on(mosaic_web::serve(config))`.
pub async fn serve(config: ServeConfig) -> Result<(), WebError> {
    let server = start(config).await?;
    tracing::info!(addr = %server.local_addr(), "serving");
    server.run().await
}
