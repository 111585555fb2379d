//! The blocking connection to a worker: handshake, requests with deadlines, heartbeats.
//!
//! A reader thread frames the worker's output and hands lines over a channel, so every
//! wait has a deadline (`recv_timeout`) and a worker that floods or stalls cannot block
//! the caller past it. The decisions about each incoming line ([`judge`], [`greet`],
//! [`judge_mosaic`]) are pure functions, shared with the async policy actor.

use crate::process::{WorkerCommand, WorkerProcess};
use crate::{WorkerError, defaults};
use mosaic_core::Action;
use mosaic_protocols::codec::{FrameReader, ReadError};
use mosaic_protocols::handshake::{Greeting, Policy};
use mosaic_protocols::message::{Ack, DecisionReply, Hello, Welcome, capability, code};
use mosaic_protocols::transport::{Endpoint, Stream};
use mosaic_protocols::{DecodeError, Message, WorkerKind, mosaic};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::time::{Duration, Instant};

/// Which dialect the worker speaks.
#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    /// `mosaic/1`, after a successful handshake.
    Native {
        /// What the worker said.
        hello: Hello,
        /// What it was told.
        welcome: Welcome,
    },
    /// MOSAIC's command set (detected from its `init` line).
    Mosaic {
        /// The `init` line.
        init: serde_json::Map<String, serde_json::Value>,
    },
}

/// How to open a link.
#[derive(Clone, Debug)]
pub struct LinkOptions {
    /// Worker kind expected and welcome contents.
    pub policy: Policy,
    /// Maximum frame length.
    pub max_frame: usize,
    /// Deadline for the worker's first line.
    pub handshake_timeout: Duration,
    /// Grace period between SIGTERM and SIGKILL on stop.
    pub grace: Duration,
    /// How long a heartbeating worker may stay silent while a request is outstanding.
    pub heartbeat_timeout: Duration,
}

impl LinkOptions {
    /// Defaults for a worker of `kind` (see [`crate::defaults`]): 16 MiB frames, 60 s to
    /// start, heartbeats every second, hung after 5 s of silence, 2 s grace.
    pub fn new(kind: WorkerKind) -> Self {
        Self {
            policy: Policy::new(kind),
            max_frame: defaults::max_frame(),
            handshake_timeout: Duration::from_millis(defaults::timeout_ms()),
            grace: Duration::from_millis(defaults::grace_ms()),
            heartbeat_timeout: Duration::from_millis(defaults::heartbeat_timeout_ms()),
        }
    }

    /// Sets the heartbeat interval asked of the worker and the silence after which it is
    /// declared hung. The timeout must be at least twice the interval: a busy worker's
    /// heartbeats arrive about once per interval, and one late heartbeat must not kill it.
    pub fn set_heartbeat(&mut self, interval_ms: u64, timeout_ms: u64) -> Result<(), WorkerError> {
        if interval_ms == 0 || timeout_ms < interval_ms.saturating_mul(2) {
            return Err(WorkerError::Config(format!(
                "heartbeat_timeout_ms = {timeout_ms} must be at least twice heartbeat_ms = {interval_ms} (and heartbeat_ms at least 1)"
            )));
        }
        self.policy.heartbeat_ms = interval_ms;
        self.heartbeat_timeout = Duration::from_millis(timeout_ms);
        Ok(())
    }
}

/// What to do with one line that arrived while the reply to a request was awaited.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// The reply.
    Reply(Message),
    /// Not for us (heartbeat, late reply to an abandoned request): keep waiting.
    Skip(Option<String>),
    /// A message type we do not know: send this `error` back, keep waiting.
    Answer(Message),
    /// The request failed.
    Fail(WorkerError),
}

/// What an exchange does next, once a line is judged.
#[derive(Debug, PartialEq)]
pub enum Next {
    /// Done: the reply.
    Reply(Message),
    /// Wait for the next line.
    ReadOn,
    /// Send this `error` back, then wait for the next line.
    Answer(Message),
}

impl Verdict {
    /// The next move of an exchange with `worker` (named in the log, where skipped lines
    /// and unknown message types are reported); a failure ends the exchange.
    pub fn next(self, worker: &str) -> Result<Next, WorkerError> {
        match self {
            Verdict::Reply(reply) => Ok(Next::Reply(reply)),
            Verdict::Skip(None) => Ok(Next::ReadOn),
            Verdict::Skip(Some(why)) => {
                tracing::warn!(target: "mosaic::worker", worker, "{why}");
                Ok(Next::ReadOn)
            }
            Verdict::Answer(answer) => {
                tracing::warn!(target: "mosaic::worker", worker, "worker sent an unknown message type (answered with error)");
                Ok(Next::Answer(answer))
            }
            Verdict::Fail(e) => Err(e),
        }
    }
}

/// Judges `line` while the reply to request `expected` is awaited; `abandoned` lists
/// requests given up on earlier (their late replies are skipped).
pub fn judge(line: &[u8], expected: u64, abandoned: &[u64]) -> Verdict {
    match plain_decision(line) {
        Some((id, action)) if id == expected => Verdict::Reply(Message::Decision(DecisionReply {
            id,
            action: Action(action),
            text: None,
            message: None,
            usage: None,
            detail: None,
        })),
        _ => judge_parsed(line, expected, abandoned),
    }
}

/// [`judge`] through the JSON parser.
fn judge_parsed(line: &[u8], expected: u64, abandoned: &[u64]) -> Verdict {
    let message = match Message::decode(line) {
        Ok(message) => message,
        Err(DecodeError::UnknownType { kind }) => {
            return Verdict::Answer(Message::error(
                None,
                code::UNKNOWN_TYPE,
                format!("unknown message type `{kind}`"),
            ));
        }
        Err(e) => return Verdict::Fail(WorkerError::Malformed(e)),
    };
    match (&message, message.id()) {
        (Message::Heartbeat, _) => Verdict::Skip(None),
        (Message::Error(e), id) if id == Some(expected) || id.is_none() => {
            Verdict::Fail(WorkerError::Remote {
                code: e.code.clone(),
                message: e.message.clone(),
            })
        }
        (_, Some(id)) if id == expected => Verdict::Reply(message),
        (_, Some(id)) if abandoned.contains(&id) => Verdict::Skip(Some(format!(
            "skipped a late `{}` for abandoned request {id}",
            message.kind()
        ))),
        (_, got_id) => Verdict::Fail(WorkerError::OutOfOrder {
            expected,
            got: message.kind().to_owned(),
            got_id,
        }),
    }
}

/// The id and action of the usual decision line, `{"type":"decision","id":N,"action":N}`
/// exactly (as `mosaic_worker` writes it), read without the JSON parser: a tenth of its
/// cost on the path of every decision. `None` for anything else, which takes the parser.
fn plain_decision(line: &[u8]) -> Option<(u64, u32)> {
    let rest = line.strip_prefix(br#"{"type":"decision","id":"#)?;
    let (id, rest) = json_uint(rest)?;
    let rest = rest.strip_prefix(br#","action":"#)?;
    let (action, rest) = json_uint(rest)?;
    (rest == b"}").then_some((id, u32::try_from(action).ok()?))
}

/// A JSON unsigned integer at the start of `bytes` (no leading zeros, no fraction or
/// exponent, at most `u64::MAX`) and the bytes after it.
fn json_uint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    let (number, rest) = bytes.split_at(digits);
    if number.is_empty() || (number[0] == b'0' && number.len() > 1) {
        return None;
    }
    let value = number.iter().try_fold(0u64, |value, digit| {
        value.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
    })?;
    Some((value, rest))
}

/// Judges a MOSAIC worker's line: `None` for lines to skip (`init`, `episode_end`).
pub fn judge_mosaic(line: &[u8]) -> Result<Option<mosaic::Reply>, WorkerError> {
    match mosaic::Reply::decode(line).map_err(WorkerError::Malformed)? {
        mosaic::Reply::Init | mosaic::Reply::EpisodeEnd => Ok(None),
        mosaic::Reply::Error { message } => Err(WorkerError::Remote {
            code: "error".into(),
            message,
        }),
        reply => Ok(Some(reply)),
    }
}

/// Judges the worker's first line: the dialect (or the failure) and the line to answer
/// with (`welcome`, `reject`, or nothing for MOSAIC workers).
pub fn greet(
    first: &[u8],
    policy: &Policy,
    session: &str,
) -> (Result<Mode, WorkerError>, Option<Message>) {
    match Greeting::parse(first) {
        Err(e) => (Err(WorkerError::Handshake(e.to_string())), None),
        Ok(Greeting::Mosaic(init)) => (Ok(Mode::Mosaic { init }), None),
        Ok(Greeting::Hello(hello)) => match policy.check(&hello) {
            Err(reject) => (
                Err(WorkerError::Rejected(reject.reason.clone())),
                Some(Message::Reject(reject)),
            ),
            Ok(()) => {
                let welcome = policy.welcome(&hello, session);
                let reply = Message::Welcome(welcome.clone());
                (Ok(Mode::Native { hello, welcome }), Some(reply))
            }
        },
    }
}

/// How long the worker may stay silent while a request is outstanding: `timeout` for a
/// worker that announced heartbeats, unbounded (the request's deadline only) otherwise.
pub fn silence_limit(mode: &Mode, timeout: Duration) -> Option<Duration> {
    match mode {
        Mode::Native { hello, .. } if hello.has(capability::HEARTBEAT) => Some(timeout),
        _ => None,
    }
}

/// How long lines the worker wrote just before its process exited may take to arrive. The
/// reader usually sees the end of the output at the same moment as the exit; the wait
/// matters only when a process the worker started still holds its output open.
pub const EXIT_DRAIN: Duration = Duration::from_millis(50);

/// What a wait for the worker's next line means when it ends with nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// The request's deadline passed.
    Deadline,
    /// A heartbeating worker fell silent for its silence limit.
    Silence,
    /// The process exited and nothing more came.
    Exit,
}

impl Expiry {
    /// How long to wait for the next line at `now`, and what it means when nothing comes:
    /// the request's `deadline`, the `silence` limit of a heartbeating worker, or, once the
    /// process has exited (at `exited`), [`EXIT_DRAIN`] for lines written before.
    pub fn next(
        now: Instant,
        deadline: Instant,
        silence: Option<Duration>,
        exited: Option<Instant>,
    ) -> (Duration, Expiry) {
        let mut wait = (deadline.saturating_duration_since(now), Expiry::Deadline);
        if let Some(silence) = silence
            && silence < wait.0
        {
            wait = (silence, Expiry::Silence);
        }
        if let Some(exited) = exited {
            let drain = (exited + EXIT_DRAIN).saturating_duration_since(now);
            if drain <= wait.0 {
                wait = (drain, Expiry::Exit);
            }
        }
        wait
    }

    /// The error of a wait that ended this way, except [`Expiry::Exit`] (`None`: the
    /// caller reports [`WorkerError::Exited`] with the exit status).
    pub fn error(self, awaiting: &str, timeout: Duration, waited: Duration) -> Option<WorkerError> {
        match self {
            Expiry::Deadline => Some(WorkerError::Timeout {
                awaiting: awaiting.to_owned(),
                after_ms: timeout.as_millis() as u64,
            }),
            Expiry::Silence => Some(WorkerError::Hung {
                awaiting: awaiting.to_owned(),
                silent_ms: waited.as_millis() as u64,
            }),
            Expiry::Exit => None,
        }
    }
}

/// Remembers the last few abandoned request ids.
#[derive(Debug, Default)]
pub struct Abandoned(VecDeque<u64>);

impl Abandoned {
    const KEEP: usize = 64;

    /// Marks `id` abandoned.
    pub fn push(&mut self, id: u64) {
        if self.0.len() == Self::KEEP {
            self.0.pop_front();
        }
        self.0.push_back(id);
    }

    /// The ids, for [`judge`].
    pub fn ids(&mut self) -> &[u64] {
        self.0.make_contiguous()
    }
}

enum Incoming {
    Line(Vec<u8>),
    Failed(WorkerError),
    Eof,
    /// The process exited (a wake-up: its status is read from the process).
    Exited,
}

/// A connected, greeted worker.
pub struct Link {
    name: String,
    writer: Box<dyn Write + Send>,
    incoming: Receiver<Incoming>,
    next_id: u64,
    abandoned: Abandoned,
    silence: Option<Duration>,
    heartbeat_timeout: Duration,
    /// When the process was seen to have exited.
    exited: Option<Instant>,
    mode: Mode,
    process: Option<WorkerProcess>,
    socket: Option<Stream>,
    grace: Duration,
    closed: bool,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("name", &self.name)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Link {
    /// Starts `command` and greets it.
    pub fn spawn(
        command: &WorkerCommand,
        name: &str,
        options: &LinkOptions,
    ) -> Result<Link, WorkerError> {
        let (process, stdin, stdout) = WorkerProcess::spawn(command, name)?;
        Self::open(
            name,
            Box::new(stdout),
            Box::new(stdin),
            Some(process),
            None,
            options,
        )
    }

    /// Connects to a listening worker and greets it.
    pub fn connect(
        endpoint: &Endpoint,
        name: &str,
        options: &LinkOptions,
    ) -> Result<Link, WorkerError> {
        let connect_error = |e: std::io::Error| WorkerError::Connect {
            endpoint: endpoint.to_string(),
            error: e.to_string(),
        };
        let stream = endpoint
            .connect(options.handshake_timeout)
            .map_err(connect_error)?;
        let reader = stream.try_clone().map_err(connect_error)?;
        let writer = stream.try_clone().map_err(connect_error)?;
        Self::open(
            name,
            Box::new(reader),
            Box::new(writer),
            None,
            Some(stream),
            options,
        )
    }

    fn open(
        name: &str,
        reader: Box<dyn Read + Send>,
        writer: Box<dyn Write + Send>,
        process: Option<WorkerProcess>,
        socket: Option<Stream>,
        options: &LinkOptions,
    ) -> Result<Link, WorkerError> {
        // A small bound keeps a flooding worker from growing memory without limit.
        let (tx, rx) = sync_channel(64);
        let max_frame = options.max_frame;
        std::thread::Builder::new()
            .name(format!("stdout:{name}"))
            .spawn({
                let tx = tx.clone();
                move || read_frames(reader, max_frame, tx)
            })
            .map_err(|e| WorkerError::Spawn {
                command: name.to_owned(),
                error: format!("cannot start the reader thread: {e}"),
            })?;
        if let Some(process) = &process {
            // Never blocks: when the channel is full the consumer is busy reading, and it
            // checks the process before each wait anyway.
            process.on_exit(move |_| {
                let _ = tx.try_send(Incoming::Exited);
            });
        }
        let mut link = Link {
            name: name.to_owned(),
            writer,
            incoming: rx,
            next_id: 1,
            abandoned: Abandoned::default(),
            silence: None,
            heartbeat_timeout: options.heartbeat_timeout,
            exited: None,
            mode: Mode::Mosaic {
                init: serde_json::Map::new(),
            },
            process,
            socket,
            grace: options.grace,
            closed: false,
        };
        let deadline = Instant::now() + options.handshake_timeout;
        let first = link.recv("hello", deadline, options.handshake_timeout)?;
        let session = format!("{name}-{}", std::process::id());
        let (mode, answer) = greet(&first, &options.policy, &session);
        if let Some(answer) = answer {
            link.write(&answer.encode())?;
        }
        link.mode = mode?;
        link.silence = silence_limit(&link.mode, link.heartbeat_timeout);
        match &link.mode {
            Mode::Native { hello, .. } => {
                tracing::info!(target: "mosaic::worker", worker = %link.name, protocol = %hello.protocol, "worker greeted")
            }
            Mode::Mosaic { init } => {
                tracing::info!(target: "mosaic::worker", worker = %link.name, init = %serde_json::Value::Object(init.clone()), "MOSAIC worker detected: compatibility mode")
            }
        }
        Ok(link)
    }

    /// The dialect and handshake details.
    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// The worker's name in logs.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sends the request built by `build` (given its id) and waits up to `timeout` for its
    /// reply, skipping heartbeats and answering unknown message types.
    pub fn request(
        &mut self,
        build: impl FnOnce(u64) -> Message,
        timeout: Duration,
    ) -> Result<Message, WorkerError> {
        let id = self.next_id;
        self.next_id += 1;
        let request = build(id);
        let awaiting = request.kind();
        let deadline = Instant::now() + timeout;
        let result = self.exchange(&request, id, deadline, timeout);
        if result.is_err() {
            self.abandoned.push(id);
        }
        result.map_err(|e| self.annotate(e, awaiting))
    }

    fn exchange(
        &mut self,
        request: &Message,
        id: u64,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Message, WorkerError> {
        self.write(&request.encode())?;
        loop {
            let line = self.recv(request.kind(), deadline, timeout)?;
            match judge(&line, id, self.abandoned.ids()).next(&self.name)? {
                Next::Reply(reply) => return Ok(reply),
                Next::ReadOn => {}
                Next::Answer(answer) => self.write(&answer.encode())?,
            }
        }
    }

    /// Sends a MOSAIC command and waits up to `timeout` for the reply `accept` takes.
    pub fn mosaic_request(
        &mut self,
        command: &mosaic::Command,
        expected: &str,
        accept: impl Fn(&mosaic::Reply) -> bool,
        timeout: Duration,
    ) -> Result<mosaic::Reply, WorkerError> {
        let deadline = Instant::now() + timeout;
        self.write(&command.encode())?;
        loop {
            let line = self.recv(expected, deadline, timeout)?;
            match judge_mosaic(&line)? {
                None => {}
                Some(reply) if accept(&reply) => return Ok(reply),
                Some(reply) => {
                    return Err(WorkerError::Unexpected {
                        expected: expected.to_owned(),
                        got: format!("{reply:?}").chars().take(80).collect(),
                    });
                }
            }
        }
    }

    fn write(&mut self, line: &[u8]) -> Result<(), WorkerError> {
        let result = self
            .writer
            .write_all(line)
            .and_then(|()| self.writer.flush());
        result.map_err(|e| {
            let exit = self
                .process
                .as_ref()
                .and_then(|p| p.wait_exit(Duration::from_millis(100)));
            WorkerError::Write(match exit {
                Some(status) => format!("{e} (worker {status})"),
                None => e.to_string(),
            })
        })
    }

    fn recv(
        &mut self,
        awaiting: &str,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Vec<u8>, WorkerError> {
        loop {
            let now = Instant::now();
            if self.exited.is_none()
                && self
                    .process
                    .as_ref()
                    .is_some_and(|p| p.try_exit().is_some())
            {
                self.exited = Some(now);
            }
            let (wait, expiry) = Expiry::next(now, deadline, self.silence, self.exited);
            match self.incoming.recv_timeout(wait) {
                Ok(Incoming::Line(line)) => return Ok(line),
                Ok(Incoming::Failed(e)) => return Err(e),
                Ok(Incoming::Exited) => {}
                Ok(Incoming::Eof) | Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.closed(awaiting));
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(expiry
                        .error(awaiting, timeout, wait)
                        .unwrap_or_else(|| self.exited(awaiting)));
                }
            }
        }
    }

    fn exited(&self, awaiting: &str) -> WorkerError {
        WorkerError::Exited {
            during: format!("awaiting `{awaiting}`"),
            exit: self
                .process
                .as_ref()
                .and_then(WorkerProcess::describe_exit)
                .unwrap_or_else(|| "status unknown".into()),
        }
    }

    fn closed(&mut self, awaiting: &str) -> WorkerError {
        WorkerError::Closed {
            during: format!("awaiting `{awaiting}`"),
            exit: self
                .process
                .as_ref()
                .and_then(|p| p.wait_exit(Duration::from_millis(500)))
                .map(|s| s.to_string()),
        }
    }

    fn annotate(&self, error: WorkerError, awaiting: &str) -> WorkerError {
        tracing::warn!(target: "mosaic::worker", worker = %self.name, awaiting, %error, "request failed");
        error
    }

    /// Gives up on a worker that died or hung: no goodbye, its process group is killed at
    /// once.
    pub fn abort(&mut self) {
        self.closed = true;
        if let Some(socket) = &self.socket {
            let _ = socket.shutdown();
        }
        if let Some(process) = self.process.as_mut() {
            process.kill();
        }
    }

    /// Asks the worker to stop (`stop`, waiting briefly for `stopped`), then stops its
    /// process group. Returns the exit status when the worker was a process.
    pub fn close(&mut self) -> Option<String> {
        if self.closed {
            return None;
        }
        self.closed = true;
        let grace = self.grace;
        let polite = match &self.mode {
            Mode::Native { .. } => self
                .request(|id| Message::Stop(Ack { id }), grace)
                .map(|_| ()),
            Mode::Mosaic { .. } => self
                .mosaic_request(
                    &mosaic::Command::Stop,
                    "stopped",
                    |r| matches!(r, mosaic::Reply::Stopped),
                    grace,
                )
                .map(|_| ()),
        };
        if let Err(e) = polite {
            tracing::debug!(target: "mosaic::worker", worker = %self.name, "no clean stop: {e}");
        }
        if let Some(socket) = &self.socket {
            let _ = socket.shutdown();
        }
        let process = self.process.as_mut()?;
        // A worker that answered `stopped` exits by itself; give it a moment first.
        process.wait_exit(Duration::from_millis(200));
        process.stop(grace).map(|s| s.to_string())
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.close();
    }
}

fn read_frames(reader: Box<dyn Read + Send>, max_frame: usize, tx: SyncSender<Incoming>) {
    let mut frames = FrameReader::new(reader, max_frame);
    loop {
        let incoming = match frames.next_line() {
            Ok(Some(line)) => Incoming::Line(line),
            Ok(None) => Incoming::Eof,
            Err(ReadError::Framing(e)) => Incoming::Failed(WorkerError::Framing(e)),
            Err(ReadError::Io(_)) => Incoming::Eof,
        };
        let last = matches!(incoming, Incoming::Eof);
        if tx.send(incoming).is_err() || last {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_protocols::message::FrameEncoding;

    #[test]
    fn judge_classifies_every_line() {
        let abandoned = [3];
        let reply = br#"{"type":"pong","id":5}"#;
        assert!(matches!(
            judge(reply, 5, &abandoned),
            Verdict::Reply(Message::Pong(_))
        ));
        assert_eq!(
            judge(br#"{"type":"heartbeat"}"#, 5, &abandoned),
            Verdict::Skip(None)
        );
        assert!(matches!(
            judge(br#"{"type":"pong","id":3}"#, 5, &abandoned),
            Verdict::Skip(Some(_))
        ));
        assert!(matches!(
            judge(br#"{"type":"pong","id":6}"#, 5, &abandoned),
            Verdict::Fail(WorkerError::OutOfOrder {
                expected: 5,
                got_id: Some(6),
                ..
            })
        ));
        assert!(matches!(
            judge(
                br#"{"type":"hello","protocol":"mosaic/1","worker_kind":"env"}"#,
                5,
                &abandoned
            ),
            Verdict::Fail(WorkerError::OutOfOrder { got_id: None, .. })
        ));
        assert!(matches!(
            judge(
                br#"{"type":"error","id":5,"code":"internal","message":"x"}"#,
                5,
                &abandoned
            ),
            Verdict::Fail(WorkerError::Remote { .. })
        ));
        assert!(matches!(
            judge(
                br#"{"type":"error","code":"bad_frame","message":"x"}"#,
                5,
                &abandoned
            ),
            Verdict::Fail(WorkerError::Remote { .. })
        ));
        let Verdict::Answer(Message::Error(answer)) = judge(br#"{"type":"dance"}"#, 5, &abandoned)
        else {
            panic!("unknown types are answered")
        };
        assert_eq!(answer.code, code::UNKNOWN_TYPE);
        assert!(matches!(
            judge(b"[1,2,3]", 5, &abandoned),
            Verdict::Fail(WorkerError::Malformed(DecodeError::NotAnObject { .. }))
        ));
        assert!(matches!(
            judge(b"garbage", 5, &abandoned),
            Verdict::Fail(WorkerError::Malformed(DecodeError::NotJson { .. }))
        ));
    }

    #[test]
    fn plain_decisions_are_judged_as_the_parser_would() {
        let lines: &[&[u8]] = &[
            br#"{"type":"decision","id":5,"action":3}"#,
            br#"{"type":"decision","id":5,"action":0}"#,
            br#"{"type":"decision","id":5,"action":4294967295}"#,
            br#"{"type":"decision","id":18446744073709551615,"action":1}"#,
            br#"{"type":"decision","id":18446744073709551616,"action":1}"#,
            br#"{"type":"decision","id":5,"action":4294967296}"#,
            br#"{"type":"decision","id":05,"action":1}"#,
            br#"{"type":"decision","id":5,"action":01}"#,
            br#"{"type":"decision","id":5,"action":-1}"#,
            br#"{"type":"decision","id":5,"action":1.0}"#,
            br#"{"type":"decision","id":5,"action":1e0}"#,
            br#"{"type":"decision","id":5,"action":}"#,
            br#"{"type":"decision","id":,"action":1}"#,
            br#"{"type":"decision","id":5,"action":1}x"#,
            br#"{"type":"decision","id":5,"action":1} "#,
            br#"{"type":"decision","id":5,"action":1,"text":"hi"}"#,
            br#"{"type":"decision","id":3,"action":1}"#,
            br#"{"type":"decision","id":6,"action":1}"#,
            br#"{"type": "decision", "id": 5, "action": 2}"#,
            br#"{"type":"decision","action":2,"id":5}"#,
        ];
        let abandoned = [3];
        for line in lines {
            assert_eq!(
                judge(line, 5, &abandoned),
                judge_parsed(line, 5, &abandoned),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        assert_eq!(plain_decision(lines[0]), Some((5, 3)));
        assert_eq!(plain_decision(lines[3]), Some((u64::MAX, 1)));
        for line in &lines[4..16] {
            assert_eq!(
                plain_decision(line),
                None,
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn greet_answers_and_detects_dialects() {
        let policy = Policy::new(WorkerKind::Env);
        let (mode, answer) = greet(br#"{"type":"hello","protocol":"mosaic/1","worker_kind":"env","capabilities":["heartbeat"]}"#, &policy, "s");
        let mode = mode.unwrap();
        assert!(matches!(answer, Some(Message::Welcome(ref w)) if w.frames == FrameEncoding::Png));
        let limit = Duration::from_millis(4321);
        assert_eq!(silence_limit(&mode, limit), Some(limit));
        let (mode, answer) = greet(
            br#"{"type":"hello","protocol":"mosaic/3","worker_kind":"env"}"#,
            &policy,
            "s",
        );
        assert!(
            matches!(mode, Err(WorkerError::Rejected(ref r)) if r.contains("mosaic/3") && r.contains("mosaic/1"))
        );
        assert!(matches!(answer, Some(Message::Reject(_))));
        let (mode, answer) = greet(br#"{"type":"init","worker":"random_worker"}"#, &policy, "s");
        assert!(matches!(mode, Ok(Mode::Mosaic { .. })));
        assert!(answer.is_none());
        assert_eq!(silence_limit(&mode.unwrap(), limit), None);
        let (mode, _) = greet(b"Loading...", &policy, "s");
        assert!(matches!(mode, Err(WorkerError::Handshake(_))));
    }

    #[test]
    fn mosaic_lines_are_judged() {
        assert_eq!(judge_mosaic(br#"{"type":"episode_done"}"#).unwrap(), None);
        assert_eq!(judge_mosaic(br#"{"type":"init"}"#).unwrap(), None);
        assert_eq!(
            judge_mosaic(br#"{"type":"pong"}"#).unwrap(),
            Some(mosaic::Reply::Pong)
        );
        assert!(matches!(
            judge_mosaic(br#"{"type":"error","message":"m"}"#),
            Err(WorkerError::Remote { .. })
        ));
        assert!(matches!(judge_mosaic(b"1"), Err(WorkerError::Malformed(_))));
    }

    #[test]
    fn waits_end_at_the_deadline_the_silence_limit_or_soon_after_an_exit() {
        let now = Instant::now();
        let deadline = now + Duration::from_secs(10);
        let silence = Some(Duration::from_secs(5));
        assert_eq!(
            Expiry::next(now, deadline, None, None),
            (Duration::from_secs(10), Expiry::Deadline)
        );
        assert_eq!(
            Expiry::next(now, deadline, silence, None),
            (Duration::from_secs(5), Expiry::Silence)
        );
        assert_eq!(
            Expiry::next(now, now + Duration::from_secs(1), silence, None),
            (Duration::from_secs(1), Expiry::Deadline)
        );
        assert_eq!(
            Expiry::next(now, deadline, silence, Some(now)),
            (EXIT_DRAIN, Expiry::Exit)
        );
        assert_eq!(
            Expiry::next(now + EXIT_DRAIN * 2, deadline, silence, Some(now)),
            (Duration::ZERO, Expiry::Exit)
        );
        assert_eq!(
            Expiry::next(deadline, deadline, silence, None),
            (Duration::ZERO, Expiry::Deadline)
        );
        let hung = Expiry::Silence.error("decide", Duration::from_secs(10), Duration::from_secs(5));
        assert!(matches!(
            hung,
            Some(WorkerError::Hung {
                silent_ms: 5000,
                ..
            })
        ));
        assert!(
            Expiry::Exit
                .error("decide", Duration::ZERO, Duration::ZERO)
                .is_none()
        );
    }

    #[test]
    fn heartbeat_timeouts_must_outlast_two_intervals() {
        let mut options = LinkOptions::new(WorkerKind::Policy);
        assert_eq!(options.heartbeat_timeout, Duration::from_secs(5));
        assert_eq!(options.policy.heartbeat_ms, 1000);
        options.set_heartbeat(200, 400).unwrap();
        assert_eq!(options.heartbeat_timeout, Duration::from_millis(400));
        let err = options.set_heartbeat(1000, 1500).unwrap_err().to_string();
        assert!(
            err.contains("heartbeat_timeout_ms = 1500") && err.contains("heartbeat_ms = 1000"),
            "{err}"
        );
        assert!(options.set_heartbeat(0, 1000).is_err());
    }

    #[test]
    fn abandoned_ids_are_bounded() {
        let mut abandoned = Abandoned::default();
        for id in 0..100 {
            abandoned.push(id);
        }
        assert_eq!(abandoned.ids().len(), Abandoned::KEEP);
        assert_eq!(abandoned.ids()[0], 100 - Abandoned::KEEP as u64);
    }
}
