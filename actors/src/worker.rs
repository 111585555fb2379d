//! External policy workers: a decider in another process (any language) behind the worker
//! protocol, answering [`BeginEpisode`] and [`Decide`] like every operator.
//!
//! The worker is spawned in its own process group with its stderr in the run log. The
//! handshake happens when the operator is spawned (it tells what the worker reads and its
//! paradigm); afterwards every request is answered within its deadline or fails with a typed
//! error, which the session turns into the default action and records. Errors after which
//! the worker cannot be asked again (its process exited, it fell silent for
//! `heartbeat_timeout_ms` while heartbeating, its stream broke) are
//! [`OperatorError::Crashed`]; a process exit fails the pending request at once. Workers
//! announcing the `checkpoint` capability answer [`SaveState`] and [`LoadState`] through the
//! protocol's `checkpoint` and `restore`. Unmodified MOSAIC action-selector workers
//! (`init_agent` / `select_action`) are driven too, detected from their `init` line.
//!
//! In experiment files: `{ kind = "worker", command = ["python3", "-m", "mosaic_worker",
//! "policy", "random"] }`.

use crate::operator::{OperatorHandle, OperatorKind, OperatorRegistry, SpawnContext};
use crate::{BeginEpisode, Decide, LoadState, OperatorError, SaveState};
use actix::{Actor, Context, Handler, ResponseFuture};
use mosaic_adapters::external::link::{
    Abandoned, Expiry, LinkOptions, Mode, Next, greet, judge, judge_mosaic, silence_limit,
};
pub use mosaic_adapters::external::settings::WorkerSettings;
use mosaic_adapters::external::settings::{LINK_HELP, PROCESS_HELP, help_lines};
use mosaic_adapters::external::{WorkerError, WorkerProcess};
use mosaic_core::experiment::{SpecError, parse_settings};
use mosaic_core::{Action, Decision, ObsRequest, Observation, Paradigm};
use mosaic_protocols::codec::{Decoded, FrameReader, LineDecoder};
use mosaic_protocols::message::{Ack, FrameEncoding, InitAgent, State, capability, code};
use mosaic_protocols::wire::{WireObservation, legal_indices};
use mosaic_protocols::{Message, WorkerKind, mosaic};
use std::collections::VecDeque;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

/// Settings of the `worker` operator kind, one line each for `mosaic operators`.
pub const SETTINGS_HELP: &[&str] = &HELP;

const HELP: [&str; 10] = help_lines(&[
    &["command = [...]: the worker's argument vector (required)"],
    &PROCESS_HELP,
    &["timeout_ms = 60000: deadline of one request (the session's decision deadline also applies)"],
    &LINK_HELP,
]);

/// Adds the `worker` operator kind.
pub fn register(registry: &mut OperatorRegistry) {
    registry.register(OperatorKind {
        name: "worker",
        summary: "a policy in another process speaking the worker protocol (any language)",
        settings: SETTINGS_HELP,
        spawn: Arc::new(|cx: &SpawnContext<'_>| {
            let settings: WorkerSettings = parse_settings(&cx.slot.settings)?;
            let name = format!(
                "{}:{}",
                cx.env_name,
                cx.spec.agents.get(cx.agent).map_or("?", |a| a.id.as_str())
            );
            WorkerPolicy::spawn(&settings, &name).map_err(|e| match e {
                WorkerError::Config(_) | WorkerError::Package { .. } => {
                    SpecError::new("command", format!("{name}: {e}"))
                }
                _ => SpecError::start_failure("command", format!("{name}: {e}")),
            })
        }),
    });
}

/// The live connection; one request at a time (the mutex around it serialises them).
struct Conn {
    name: String,
    stdin: ChildStdin,
    reader: Reader,
    /// One timer for every wait, moved only when it would go off too late: a fresh timer
    /// per request costs a wake-up of the runtime's driver (an eventfd write and an extra
    /// epoll round), and moving it a timer-wheel update.
    timer: Pin<Box<tokio::time::Sleep>>,
    mode: Mode,
    silence: Option<Duration>,
    timeout: Duration,
    frames: FrameEncoding,
    next_id: u64,
    /// The request being sent, encoded (one buffer for every request).
    out: Vec<u8>,
    abandoned: Abandoned,
    process: WorkerProcess,
    /// Told when the process exits, so a pending request fails at once even when a
    /// process the worker started keeps its output open. A oneshot rather than a
    /// `Notify`: waiting on it again costs no waiter registration per wait.
    exit: tokio::sync::oneshot::Receiver<()>,
    /// When the exit was noticed (`exit` is not polled after that).
    exited: Option<Instant>,
    /// Whether the worker announced the `checkpoint` capability.
    checkpoints: bool,
    agent_id: String,
}

/// The actor around one policy worker.
pub struct WorkerPolicy {
    /// `None` once stopped.
    conn: Rc<tokio::sync::Mutex<Option<Conn>>>,
    grace: Duration,
}

impl WorkerPolicy {
    /// Starts the worker, completes the handshake (blocking, within `start_timeout_ms`),
    /// and starts the actor on the current arbiter.
    pub fn spawn(settings: &WorkerSettings, name: &str) -> Result<OperatorHandle, WorkerError> {
        let command = settings.worker_command()?;
        let options = settings.link_options(WorkerKind::Policy)?;
        let (mut process, stdin, stdout) = WorkerProcess::spawn(&command, name)?;
        let (mode, stdin, stdout, pending) = match handshake(name, stdin, stdout, &options) {
            Ok(parts) => parts,
            Err(e) => {
                process.stop(options.grace);
                return Err(e);
            }
        };
        let (paradigm, wants, frames, checkpoints) = match &mode {
            Mode::Native { hello, welcome } => {
                let schema = hello.policy_schema().map_err(WorkerError::Malformed)?;
                (
                    schema.paradigm.unwrap_or(Paradigm::External),
                    schema.wants,
                    welcome.frames,
                    hello.has(capability::CHECKPOINT),
                )
            }
            // MOSAIC workers read whatever they are sent: text when there is some, else the
            // symbolic tensor.
            Mode::Mosaic { .. } => (
                Paradigm::External,
                ObsRequest {
                    symbolic: true,
                    text: true,
                    frame: false,
                },
                FrameEncoding::Rgb,
                false,
            ),
        };
        let to_io = |e: std::io::Error| WorkerError::Spawn {
            command: command.display(),
            error: format!("cannot attach the worker's pipes: {e}"),
        };
        let (exited, exit) = tokio::sync::oneshot::channel();
        process.on_exit(move |_| {
            let _ = exited.send(());
        });
        let mut conn = Conn {
            name: name.to_owned(),
            stdin: ChildStdin::from_std(stdin).map_err(to_io)?,
            reader: Reader {
                stdout: BufReader::with_capacity(
                    64 * 1024,
                    ChildStdout::from_std(stdout).map_err(to_io)?,
                ),
                decoder: LineDecoder::new(options.max_frame),
                ready: VecDeque::new(),
            },
            timer: Box::pin(tokio::time::sleep(Duration::from_secs(3600))),
            silence: silence_limit(&mode, options.heartbeat_timeout),
            mode,
            timeout: settings.timeout(),
            frames,
            next_id: 1,
            out: Vec::with_capacity(256),
            abandoned: Abandoned::default(),
            process,
            exit,
            exited: None,
            checkpoints,
            agent_id: String::new(),
        };
        conn.reader.feed(&pending);
        let actor = WorkerPolicy {
            conn: Rc::new(tokio::sync::Mutex::new(Some(conn))),
            grace: options.grace,
        };
        let addr = actor.start();
        Ok(OperatorHandle::new("worker", paradigm, wants, &addr).with_state(&addr))
    }
}

/// Reads the worker's first line (on a helper thread, so the wait has a deadline) and
/// answers it; returns the pipes and any bytes read past the first line.
fn handshake(
    name: &str,
    mut stdin: std::process::ChildStdin,
    stdout: std::process::ChildStdout,
    options: &LinkOptions,
) -> Result<
    (
        Mode,
        std::process::ChildStdin,
        std::process::ChildStdout,
        Vec<u8>,
    ),
    WorkerError,
> {
    use std::io::Write as _;
    let (tx, rx) = std::sync::mpsc::channel();
    let max_frame = options.max_frame;
    std::thread::Builder::new()
        .name(format!("hello:{name}"))
        .spawn(move || {
            let mut reader = FrameReader::new(stdout, max_frame);
            let first = reader.next_line();
            let _ = tx.send((first, reader.into_parts()));
        })
        .map_err(|e| WorkerError::Handshake(format!("cannot start the handshake reader: {e}")))?;
    let (first, (stdout, pending)) =
        rx.recv_timeout(options.handshake_timeout)
            .map_err(|_| WorkerError::Timeout {
                awaiting: "hello".into(),
                after_ms: options.handshake_timeout.as_millis() as u64,
            })?;
    let first = match first {
        Ok(Some(line)) => line,
        Ok(None) => {
            return Err(WorkerError::Closed {
                during: "awaiting `hello`".into(),
                exit: None,
            });
        }
        Err(mosaic_protocols::codec::ReadError::Framing(e)) => return Err(WorkerError::Framing(e)),
        Err(e) => return Err(WorkerError::Handshake(e.to_string())),
    };
    let (mode, answer) = greet(
        &first,
        &options.policy,
        &format!("{name}-{}", std::process::id()),
    );
    if let Some(answer) = answer {
        stdin
            .write_all(&answer.encode())
            .and_then(|()| stdin.flush())
            .map_err(|e| WorkerError::Write(e.to_string()))?;
    }
    Ok((mode?, stdin, stdout, pending))
}

/// The worker's output, framed.
struct Reader {
    stdout: BufReader<ChildStdout>,
    decoder: LineDecoder,
    ready: VecDeque<Result<Vec<u8>, WorkerError>>,
}

impl Reader {
    fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (used, decoded) = self.decoder.feed(bytes);
            bytes = &bytes[used..];
            match decoded {
                Decoded::Pending => {}
                Decoded::Line(line) => self.ready.push_back(Ok(line)),
                Decoded::TooLong => self.ready.push_back(Err(self.too_long())),
            }
        }
    }

    fn too_long(&self) -> WorkerError {
        WorkerError::Framing(mosaic_protocols::FramingError::TooLong {
            limit: self.decoder.max(),
        })
    }

    /// The next line, `None` at the end of the output; cancel-safe (partial lines stay in
    /// the decoder).
    async fn next_line(&mut self) -> Result<Option<Vec<u8>>, WorkerError> {
        loop {
            if let Some(ready) = self.ready.pop_front() {
                return ready.map(Some);
            }
            let chunk = match self.stdout.fill_buf().await {
                Ok(chunk) => chunk,
                Err(e) => {
                    return Err(WorkerError::Closed {
                        during: format!("reading ({e})"),
                        exit: None,
                    });
                }
            };
            if chunk.is_empty() {
                self.decoder.finish().map_err(WorkerError::Framing)?;
                return Ok(None);
            }
            let (used, decoded) = self.decoder.feed(chunk);
            self.stdout.consume(used);
            match decoded {
                Decoded::Pending => {}
                Decoded::Line(line) => return Ok(Some(line)),
                Decoded::TooLong => return Err(self.too_long()),
            }
        }
    }
}

impl Conn {
    /// The exit status, waiting briefly for it: the output can end a moment before the
    /// process is reaped.
    async fn exit_status(&mut self) -> Option<String> {
        if self.process.try_exit().is_none()
            && self.exited.is_none()
            && tokio::time::timeout(Duration::from_millis(500), &mut self.exit)
                .await
                .is_ok()
        {
            self.exited = Some(Instant::now());
        }
        self.process.describe_exit()
    }

    async fn closed(&mut self) -> WorkerError {
        WorkerError::Closed {
            during: "a reply was awaited".into(),
            exit: self.exit_status().await,
        }
    }

    async fn recv(
        &mut self,
        awaiting: &str,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Vec<u8>, WorkerError> {
        enum Event {
            Line(Result<Option<Vec<u8>>, WorkerError>),
            Expired,
            Exited,
        }
        // Silence counts from the start of this wait: early timer wake-ups must not move it.
        let waiting_since = Instant::now();
        let mut now = waiting_since;
        loop {
            let silence = self
                .silence
                .map(|limit| (waiting_since + limit).saturating_duration_since(now));
            let (wait, expiry) = Expiry::next(now, deadline, silence, self.exited);
            let due = tokio::time::Instant::from_std(now + wait);
            // Moving the timer costs a lock and a timer-wheel update: one set to go off too
            // early is left alone (it wakes this loop, which moves it then), so that with
            // deadlines of seconds it moves about once per deadline, not once per message.
            if self.timer.deadline() > due {
                self.timer.as_mut().reset(due);
            }
            let event = tokio::select! {
                biased;
                line = self.reader.next_line() => Event::Line(line),
                () = &mut self.timer => Event::Expired,
                // Only a send ends this wait: the sender is dropped unsent only with the
                // process handle, which this connection holds.
                _ = &mut self.exit, if self.exited.is_none() => Event::Exited,
            };
            match event {
                Event::Line(line) => {
                    return match line? {
                        Some(line) => Ok(line),
                        None => Err(self.closed().await),
                    };
                }
                Event::Expired if tokio::time::Instant::now() < due => {
                    self.timer.as_mut().reset(due);
                }
                Event::Expired => {
                    // A silence is reported as the limit it passed.
                    let silent = self.silence.unwrap_or_else(|| waiting_since.elapsed());
                    return Err(expiry.error(awaiting, timeout, silent).unwrap_or_else(|| {
                        WorkerError::Exited {
                            during: format!("`{awaiting}` was awaited"),
                            exit: self
                                .process
                                .describe_exit()
                                .unwrap_or_else(|| "status unknown".into()),
                        }
                    }));
                }
                Event::Exited => self.exited = Some(Instant::now()),
            }
            now = Instant::now();
        }
    }

    /// Writes `self.out`, within `deadline`.
    async fn write_out(&mut self, deadline: Instant) -> Result<(), WorkerError> {
        // The usual case: the pipe has room and the line leaves in one system call, with no
        // timer to set up.
        let line = &self.out;
        let stdin = &mut self.stdin;
        let written = std::future::poll_fn(|cx| {
            Poll::Ready(match Pin::new(&mut *stdin).poll_write(cx, line) {
                Poll::Ready(result) => result,
                Poll::Pending => Ok(0),
            })
        })
        .await
        .map_err(|e| WorkerError::Write(e.to_string()))?;
        if written == line.len() {
            return Ok(());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let rest = async {
            stdin.write_all(&line[written..]).await?;
            stdin.flush().await
        };
        match tokio::time::timeout(left, rest).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(WorkerError::Write(e.to_string())),
            Err(_) => Err(WorkerError::Timeout {
                awaiting: "the worker to read its input".into(),
                after_ms: left.as_millis() as u64,
            }),
        }
    }

    /// Encodes `message` into `self.out` and writes it, within `deadline`.
    async fn write(&mut self, message: &Message, deadline: Instant) -> Result<(), WorkerError> {
        self.out.clear();
        message.encode_into(&mut self.out);
        self.write_out(deadline).await
    }

    /// The deadline of a request starting now (its own timeout, or the session's deadline
    /// if that comes first), and the time until then.
    fn deadline(&self, session_deadline: Option<Instant>) -> (Instant, Duration) {
        let now = Instant::now();
        let own = now + self.timeout;
        let deadline = session_deadline.map_or(own, |d| d.min(own));
        (deadline, deadline.saturating_duration_since(now))
    }

    /// Encodes the request `build` makes with the next id into `self.out`; returns its id
    /// and type for [`Conn::request`]. Apart from the exchange, so that the request is
    /// dropped before the first wait and the future of every exchange stays small.
    fn prepare(&mut self, build: impl FnOnce(u64) -> Message) -> (u64, &'static str) {
        let id = self.next_id;
        self.next_id += 1;
        let request = build(id);
        self.out.clear();
        request.encode_into(&mut self.out);
        (id, request.kind())
    }

    /// Sends the request [`Conn::prepare`]d and awaits its reply.
    async fn request(
        &mut self,
        (id, kind): (u64, &'static str),
        session_deadline: Option<Instant>,
    ) -> Result<Message, WorkerError> {
        let (deadline, timeout) = self.deadline(session_deadline);
        let result = self.exchange(id, kind, deadline, timeout).await;
        if result.is_err() {
            self.abandoned.push(id);
        }
        result
    }

    async fn exchange(
        &mut self,
        id: u64,
        kind: &'static str,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Message, WorkerError> {
        self.write_out(deadline).await?;
        loop {
            let line = self.recv(kind, deadline, timeout).await?;
            match judge(&line, id, self.abandoned.ids()).next(&self.name)? {
                Next::Reply(reply) => return Ok(reply),
                Next::ReadOn => {}
                Next::Answer(answer) => self.write(&answer, deadline).await?,
            }
        }
    }

    async fn mosaic_request(
        &mut self,
        command: &mosaic::Command,
        expected: &str,
        session_deadline: Option<Instant>,
    ) -> Result<mosaic::Reply, WorkerError> {
        let (deadline, timeout) = self.deadline(session_deadline);
        self.out = command.encode();
        self.write_out(deadline).await?;
        loop {
            let line = self.recv(expected, deadline, timeout).await?;
            if let Some(reply) = judge_mosaic(&line)? {
                return Ok(reply);
            }
        }
    }

    async fn begin(&mut self, msg: BeginEpisode) -> Result<(), WorkerError> {
        self.agent_id = msg.ctx.agent_id.clone();
        match self.mode {
            Mode::Native { .. } => {
                let request = self.prepare(|id| {
                    Message::InitAgent(InitAgent {
                        id,
                        agent_id: msg.ctx.agent_id.clone(),
                        agent: msg.ctx.agent,
                        seed: msg.ctx.seed,
                        episode_seed: msg.ctx.episode_seed,
                        env: mosaic_core::EnvSpec::clone(&msg.spec),
                    })
                });
                let reply = self.request(request, None).await?;
                match reply {
                    Message::AgentReady(_) => Ok(()),
                    other => Err(WorkerError::Unexpected {
                        expected: "agent_ready".into(),
                        got: other.kind().into(),
                    }),
                }
            }
            Mode::Mosaic { .. } => {
                let command = mosaic::Command::InitAgent {
                    game_name: msg.spec.name.clone(),
                    player_id: msg.ctx.agent_id.clone(),
                };
                match self.mosaic_request(&command, "agent_ready", None).await? {
                    mosaic::Reply::AgentReady => Ok(()),
                    other => Err(WorkerError::Unexpected {
                        expected: "agent_ready".into(),
                        got: format!("{other:?}"),
                    }),
                }
            }
        }
    }

    async fn save_state(&mut self) -> Result<Option<serde_json::Value>, WorkerError> {
        if !self.checkpoints {
            return Ok(None);
        }
        let request = self.prepare(|id| Message::Checkpoint(Ack { id }));
        match self.request(request, None).await {
            Ok(Message::State(state)) => Ok(Some(serde_json::Value::String(state.data))),
            Ok(other) => Err(WorkerError::Unexpected {
                expected: "state".into(),
                got: other.kind().into(),
            }),
            Err(WorkerError::Remote { code: c, message }) if c == code::UNSUPPORTED => {
                tracing::info!(target: "mosaic::worker", worker = %self.name, "cannot save its state now: {message}");
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    async fn load_state(&mut self, data: String) -> Result<(), WorkerError> {
        let request = self.prepare(|id| Message::Restore(State { id, data }));
        match self.request(request, None).await? {
            Message::Restored(_) => Ok(()),
            other => Err(WorkerError::Unexpected {
                expected: "restored".into(),
                got: other.kind().into(),
            }),
        }
    }

    async fn decide(&mut self, msg: Decide) -> Result<Decision, WorkerError> {
        let obs = &msg.obs;
        let action = match self.mode {
            Mode::Native { .. } => {
                let observation = WireObservation::from_observation(obs, self.frames)
                    .map_err(|e| WorkerError::Invalid(e.to_string()))?;
                let legal = legal_indices(&obs.legal);
                let deadline_ms = msg
                    .deadline
                    .map(|d| d.saturating_duration_since(Instant::now()).as_millis() as u64);
                let request = self.prepare(|id| {
                    Message::Decide(mosaic_protocols::message::Decide {
                        id,
                        step: msg.step,
                        observation,
                        legal,
                        deadline_ms,
                    })
                });
                let reply = self.request(request, msg.deadline).await?;
                let Message::Decision(reply) = reply else {
                    return Err(WorkerError::Unexpected {
                        expected: "decision".into(),
                        got: reply.kind().into(),
                    });
                };
                let mut detail = serde_json::Map::new();
                for (key, value) in [
                    ("text", reply.text.map(serde_json::Value::String)),
                    ("message", reply.message.map(serde_json::Value::String)),
                    ("usage", reply.usage),
                    ("detail", reply.detail),
                ] {
                    if let Some(value) = value {
                        detail.insert(key.into(), value);
                    }
                }
                check_legal(obs, reply.action)?;
                let mut decision = Decision::act(reply.action);
                if !detail.is_empty() {
                    decision.detail = Some(serde_json::Value::Object(detail));
                }
                return Ok(decision);
            }
            Mode::Mosaic { .. } => {
                let command = mosaic::Command::SelectAction {
                    observation: mosaic_observation(obs),
                    player_id: self.agent_id.clone(),
                    action_mask: Some(obs.legal.clone()),
                    info: obs.info.clone(),
                };
                match self
                    .mosaic_request(&command, "action_selected", msg.deadline)
                    .await?
                {
                    mosaic::Reply::ActionSelected { action } => {
                        u32::try_from(action).map(Action).map_err(|_| {
                            WorkerError::Invalid(format!("action {action} is not an action index"))
                        })?
                    }
                    other => {
                        return Err(WorkerError::Unexpected {
                            expected: "action_selected".into(),
                            got: format!("{other:?}"),
                        });
                    }
                }
            }
        };
        check_legal(obs, action)?;
        Ok(Decision::act(action))
    }
}

/// What MOSAIC workers get as `observation`: the text when there is one, else the symbolic
/// tensor as a flat list.
fn mosaic_observation(obs: &Observation) -> serde_json::Value {
    match (&obs.text, &obs.symbolic) {
        (Some(text), _) => serde_json::Value::String(text.clone()),
        (None, Some(tensor)) => serde_json::json!(tensor.data),
        (None, None) => serde_json::Value::Null,
    }
}

fn check_legal(obs: &Observation, action: Action) -> Result<(), WorkerError> {
    if obs.is_legal(action) {
        return Ok(());
    }
    let legal: Vec<u32> = legal_indices(&obs.legal).into_iter().take(20).collect();
    Err(WorkerError::Invalid(format!(
        "illegal action {} (legal: {legal:?}{})",
        action.0,
        if obs.legal.iter().filter(|l| **l).count() > 20 {
            " ..."
        } else {
            ""
        }
    )))
}

impl Actor for WorkerPolicy {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(1024);
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        // Closing stdin asks a protocol worker to finish; then the group gets SIGTERM and,
        // after the grace period, SIGKILL. Off the arbiter thread: that may take a while.
        let Some(Conn {
            stdin,
            mut process,
            name,
            ..
        }) = self.conn.try_lock().ok().and_then(|mut conn| conn.take())
        else {
            return;
        };
        drop(stdin);
        let grace = self.grace;
        let stopper = move || {
            process.wait_exit(Duration::from_millis(200));
            process.stop(grace);
            tracing::debug!(target: "mosaic::worker", worker = %name, "policy worker stopped");
        };
        if let Err(e) = std::thread::Builder::new()
            .name("worker-stop".into())
            .spawn(stopper)
        {
            tracing::warn!(target: "mosaic::worker", "cannot stop a policy worker in the background: {e}");
        }
    }
}

impl WorkerPolicy {
    /// Runs `work` on the connection, once the requests before it are done.
    fn with_conn<T: 'static>(
        &self,
        work: impl AsyncFnOnce(&mut Conn) -> Result<T, OperatorError> + 'static,
    ) -> ResponseFuture<Result<T, OperatorError>> {
        let conn = self.conn.clone();
        Box::pin(async move {
            let mut guard = conn.lock().await;
            let conn = guard
                .as_mut()
                .ok_or_else(|| OperatorError::Gone("policy worker stopped".into()))?;
            let result = work(conn).await;
            // A worker that died or hung is killed and dropped at once (no grace: it is
            // replaced); later requests answer `Gone`.
            if matches!(result, Err(OperatorError::Crashed(_)))
                && let Some(mut dead) = guard.take()
            {
                dead.process.kill();
            }
            result
        })
    }
}

impl Handler<BeginEpisode> for WorkerPolicy {
    type Result = ResponseFuture<Result<(), OperatorError>>;

    fn handle(&mut self, msg: BeginEpisode, _: &mut Context<Self>) -> Self::Result {
        self.with_conn(async |conn| {
            let result = conn.begin(msg).await;
            result.map_err(|e| failed(&conn.name, e))
        })
    }
}

impl Handler<Decide> for WorkerPolicy {
    type Result = ResponseFuture<Result<Decision, OperatorError>>;

    fn handle(&mut self, msg: Decide, _: &mut Context<Self>) -> Self::Result {
        self.with_conn(async |conn| {
            let result = conn.decide(msg).await;
            result.map_err(|e| failed(&conn.name, e))
        })
    }
}

/// The worker's `checkpoint` answer, as a JSON string (the base64 state); `None` when the
/// worker did not announce the capability or says it cannot save its state now.
impl Handler<SaveState> for WorkerPolicy {
    type Result = ResponseFuture<Result<Option<serde_json::Value>, OperatorError>>;

    fn handle(&mut self, _: SaveState, _: &mut Context<Self>) -> Self::Result {
        self.with_conn(async |conn| {
            let result = conn.save_state().await;
            result.map_err(|e| state_failed(&conn.name, e))
        })
    }
}

/// Sends a state answered by [`SaveState`] back with `restore`.
impl Handler<LoadState> for WorkerPolicy {
    type Result = ResponseFuture<Result<(), OperatorError>>;

    fn handle(&mut self, msg: LoadState, _: &mut Context<Self>) -> Self::Result {
        self.with_conn(async |conn| {
            let serde_json::Value::String(data) = msg.0 else {
                return Err(OperatorError::State(format!(
                    "{}: not a policy worker state (a base64 string)",
                    conn.name
                )));
            };
            if !conn.checkpoints {
                return Err(OperatorError::State(format!(
                    "{}: the worker does not announce the `checkpoint` capability",
                    conn.name
                )));
            }
            let result = conn.load_state(data).await;
            result.map_err(|e| state_failed(&conn.name, e))
        })
    }
}

fn failed(name: &str, error: WorkerError) -> OperatorError {
    tracing::warn!(target: "mosaic::worker", worker = name, %error, "decision failed");
    if error.is_fatal() {
        OperatorError::Crashed(format!("{name}: {error}"))
    } else {
        OperatorError::Failed(format!("{name}: {error}"))
    }
}

fn state_failed(name: &str, error: WorkerError) -> OperatorError {
    tracing::warn!(target: "mosaic::worker", worker = name, %error, "checkpoint failed");
    if error.is_fatal() {
        OperatorError::Crashed(format!("{name}: {error}"))
    } else {
        OperatorError::State(format!("{name}: {error}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_need_a_command_and_reject_typos() {
        let s = WorkerSettings::new(vec!["w".into()]);
        let mut only_command = mosaic_core::Settings::new();
        only_command.insert("command".into(), serde_json::json!(["w"]));
        let parsed: WorkerSettings = parse_settings(&only_command).unwrap();
        assert_eq!(format!("{s:?}"), format!("{parsed:?}"));
        assert_eq!(s.timeout_ms, 60_000);
        let mut bad = mosaic_core::Settings::new();
        bad.insert("command".into(), serde_json::json!(["w"]));
        bad.insert("timeout".into(), 5.into());
        assert!(
            parse_settings::<WorkerSettings>(&bad)
                .unwrap_err()
                .message
                .contains("timeout")
        );
        let no_command: WorkerSettings = parse_settings(&mosaic_core::Settings::new()).unwrap();
        let Err(err) = WorkerPolicy::spawn(&no_command, "t") else {
            panic!("a policy worker needs a command")
        };
        assert!(
            matches!(&err, WorkerError::Config(why) if why.contains("command")),
            "{err}"
        );
    }

    #[test]
    fn mosaic_observations_prefer_text() {
        let mut obs = Observation::with_mask(0, vec![true]);
        assert_eq!(mosaic_observation(&obs), serde_json::Value::Null);
        obs.symbolic = Some(mosaic_core::Tensor {
            shape: vec![2],
            data: vec![1.0, 2.0],
        });
        assert_eq!(mosaic_observation(&obs), serde_json::json!([1.0, 2.0]));
        obs.text = Some("board".into());
        assert_eq!(mosaic_observation(&obs), serde_json::json!("board"));
    }

    #[test]
    fn illegal_actions_are_errors() {
        let obs = Observation::with_mask(0, vec![false, true]);
        assert!(check_legal(&obs, Action(1)).is_ok());
        let err = check_legal(&obs, Action(0)).unwrap_err().to_string();
        assert!(
            err.contains("illegal action 0") && err.contains("[1]"),
            "{err}"
        );
        assert!(check_legal(&obs, Action(7)).is_err());
    }
}
