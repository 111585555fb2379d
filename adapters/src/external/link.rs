//! The blocking connection to a worker: handshake, requests with deadlines, heartbeats.
//!
//! A reader thread frames the worker's output and hands lines over a channel, so every
//! wait has a deadline (`recv_timeout`) and a worker that floods or stalls cannot block
//! the caller past it. The decisions about each incoming line ([`judge`], [`greet`],
//! [`judge_mosaic`]) are pure functions, shared with the async policy actor.

use super::WorkerError;
use super::process::{DEFAULT_GRACE, WorkerCommand, WorkerProcess};
use mosaic_protocols::codec::{FrameReader, ReadError};
use mosaic_protocols::handshake::{Greeting, Policy};
use mosaic_protocols::message::{Ack, Hello, Welcome, capability, code};
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
}

impl LinkOptions {
    /// Defaults for a worker of `kind`: 16 MiB frames, 60 s to start, 2 s grace.
    pub fn new(kind: WorkerKind) -> Self {
        Self {
            policy: Policy::new(kind),
            max_frame: mosaic_protocols::DEFAULT_MAX_FRAME,
            handshake_timeout: Duration::from_secs(60),
            grace: DEFAULT_GRACE,
        }
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

/// Judges `line` while the reply to request `expected` is awaited; `abandoned` lists
/// requests given up on earlier (their late replies are skipped).
pub fn judge(line: &[u8], expected: u64, abandoned: &[u64]) -> Verdict {
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

/// How long a heartbeat-capable worker may stay silent while a request is outstanding.
pub fn silence_limit(mode: &Mode) -> Option<Duration> {
    match mode {
        Mode::Native { hello, welcome } if hello.has(capability::HEARTBEAT) => Some(
            Duration::from_millis(welcome.heartbeat_ms.max(1).saturating_mul(3)),
        ),
        _ => None,
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
}

/// A connected, greeted worker.
pub struct Link {
    name: String,
    writer: Box<dyn Write + Send>,
    incoming: Receiver<Incoming>,
    next_id: u64,
    abandoned: Abandoned,
    silence: Option<Duration>,
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
            .spawn(move || read_frames(reader, max_frame, tx))
            .map_err(|e| WorkerError::Spawn {
                command: name.to_owned(),
                error: format!("cannot start the reader thread: {e}"),
            })?;
        let mut link = Link {
            name: name.to_owned(),
            writer,
            incoming: rx,
            next_id: 1,
            abandoned: Abandoned::default(),
            silence: None,
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
        link.silence = silence_limit(&link.mode);
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
            match judge(&line, id, self.abandoned.ids()) {
                Verdict::Reply(reply) => return Ok(reply),
                Verdict::Skip(None) => {}
                Verdict::Skip(Some(why)) => {
                    tracing::warn!(target: "mosaic::worker", worker = %self.name, "{why}")
                }
                Verdict::Answer(answer) => {
                    tracing::warn!(target: "mosaic::worker", worker = %self.name, "worker sent an unknown message type (answered with error)");
                    self.write(&answer.encode())?;
                }
                Verdict::Fail(e) => return Err(e),
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
                .as_mut()
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
            if now >= deadline {
                return Err(WorkerError::Timeout {
                    awaiting: awaiting.to_owned(),
                    after_ms: timeout.as_millis() as u64,
                });
            }
            let left = deadline - now;
            let wait = self.silence.map_or(left, |s| s.min(left));
            match self.incoming.recv_timeout(wait) {
                Ok(Incoming::Line(line)) => return Ok(line),
                Ok(Incoming::Failed(e)) => return Err(e),
                Ok(Incoming::Eof) | Err(RecvTimeoutError::Disconnected) => {
                    return Err(WorkerError::Closed {
                        during: format!("awaiting `{awaiting}`"),
                        exit: self
                            .process
                            .as_mut()
                            .and_then(|p| p.wait_exit(Duration::from_millis(500)))
                            .map(|s| s.to_string()),
                    });
                }
                Err(RecvTimeoutError::Timeout) => {
                    if wait < left {
                        return Err(WorkerError::Hung {
                            awaiting: awaiting.to_owned(),
                            silent_ms: wait.as_millis() as u64,
                        });
                    }
                }
            }
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
    fn greet_answers_and_detects_dialects() {
        let policy = Policy::new(WorkerKind::Env);
        let (mode, answer) = greet(br#"{"type":"hello","protocol":"mosaic/1","worker_kind":"env","capabilities":["heartbeat"]}"#, &policy, "s");
        let mode = mode.unwrap();
        assert!(matches!(answer, Some(Message::Welcome(ref w)) if w.frames == FrameEncoding::Png));
        assert_eq!(silence_limit(&mode), Some(Duration::from_millis(3000)));
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
        assert_eq!(silence_limit(&mode.unwrap()), None);
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
    fn abandoned_ids_are_bounded() {
        let mut abandoned = Abandoned::default();
        for id in 0..100 {
            abandoned.push(id);
        }
        assert_eq!(abandoned.ids().len(), Abandoned::KEEP);
        assert_eq!(abandoned.ids()[0], 100 - Abandoned::KEEP as u64);
    }
}
