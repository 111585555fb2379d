//! Links to workers: the protocol state of a connection as a sans-IO [`Exchange`] (the
//! handshake, request ids, what each incoming line means, heartbeats and silence, requests
//! given up on, MOSAIC's dialect), and two drivers that move its bytes: [`Link`], blocking,
//! for environments, and `AsyncLink` (feature `tokio`), for the policy operator.
//!
//! The decisions about each incoming line (the reply, a heartbeat, a late reply, a failure)
//! and about each wait ([`Expiry`]) are pure functions; the [`Exchange`] keeps the state
//! they need.

mod blocking;
mod exchange;
mod handshake;

#[cfg(feature = "tokio")]
mod asynchronous;

#[cfg(feature = "tokio")]
pub use asynchronous::AsyncLink;
pub use blocking::Link;
pub use exchange::Exchange;

use crate::{WorkerError, defaults};
use mosaic_core::Action;
use mosaic_protocols::handshake::{Greeting, Policy};
use mosaic_protocols::message::{DecisionReply, Hello, Welcome, capability, code};
use mosaic_protocols::{DecodeError, Message, WorkerKind, mosaic};
use std::collections::VecDeque;
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

/// How long an output that ended may take to be followed by the process's exit status.
const CLOSE_WAIT: Duration = Duration::from_millis(500);

/// How long a write that failed may take to be explained by the process's exit.
const WRITE_WAIT: Duration = Duration::from_millis(100);

/// The error of a write to the worker that failed; `exit` describes the process's exit
/// (the usual reason) when it has exited.
fn write_failed(error: &std::io::Error, exit: Option<String>) -> WorkerError {
    WorkerError::Write(match exit {
        Some(status) => format!("{error} (worker {status})"),
        None => error.to_string(),
    })
}

/// What to do with one line that arrived while the reply to a request was awaited.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// The reply.
    Reply(Message),
    /// Not for us (heartbeat, late reply to an abandoned request): keep waiting.
    Skip(Option<String>),
    /// A message type we do not know: send this `error` back, keep waiting.
    Answer(Message),
    /// The request failed.
    Fail(WorkerError),
}

/// What a driver does next, once the [`Exchange`] has judged a line.
#[derive(Debug, PartialEq)]
pub enum Next<R> {
    /// Done: the reply.
    Reply(R),
    /// Wait for the next line.
    ReadOn,
    /// Send this line (an encoded `error`) back, then wait for the next line.
    Answer(Vec<u8>),
}

/// How a driver has the [`Exchange`] judge each line of a request of its kind:
/// [`Exchange::on_line`] or [`Exchange::on_mosaic_line`].
type Judge<R> = fn(&mut Exchange, &[u8], Instant) -> Result<Next<R>, WorkerError>;

impl Verdict {
    /// The next move of an exchange with `worker` (named in the log, where skipped lines
    /// and unknown message types are reported); a failure ends the exchange.
    fn next(self, worker: &str) -> Result<Next<Message>, WorkerError> {
        match self {
            Verdict::Reply(reply) => Ok(Next::Reply(reply)),
            Verdict::Skip(None) => Ok(Next::ReadOn),
            Verdict::Skip(Some(why)) => {
                tracing::warn!(target: "mosaic::worker", worker, "{why}");
                Ok(Next::ReadOn)
            }
            Verdict::Answer(answer) => {
                tracing::warn!(target: "mosaic::worker", worker, "worker sent an unknown message type (answered with error)");
                Ok(Next::Answer(answer.encode()))
            }
            Verdict::Fail(e) => Err(e),
        }
    }
}

/// Judges `line` while the reply to request `expected` is awaited; `abandoned` lists
/// requests given up on earlier (their late replies are skipped).
fn judge(line: &[u8], expected: u64, abandoned: &[u64]) -> Verdict {
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
fn judge_mosaic(line: &[u8]) -> Result<Option<mosaic::Reply>, WorkerError> {
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
fn greet(
    first: &[u8],
    policy: &Policy,
    session: &str,
) -> (Result<Mode, WorkerError>, Option<Message>) {
    match Greeting::parse(first) {
        Err(e) => (Err(WorkerError::Handshake(e.to_string())), None),
        Ok(Greeting::Mosaic(init)) => (Ok(Mode::Mosaic { init }), None),
        Ok(Greeting::Refused(reject)) => (Err(WorkerError::Refused(reject.reason)), None),
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
fn silence_limit(mode: &Mode, timeout: Duration) -> Option<Duration> {
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
}

/// Remembers the last few abandoned request ids.
#[derive(Debug, Default)]
struct Abandoned(VecDeque<u64>);

impl Abandoned {
    const KEEP: usize = 64;

    /// Marks `id` abandoned.
    fn push(&mut self, id: u64) {
        if self.0.len() == Self::KEEP {
            self.0.pop_front();
        }
        self.0.push_back(id);
    }

    /// The ids, for [`judge`].
    fn ids(&mut self) -> &[u64] {
        self.0.make_contiguous()
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
