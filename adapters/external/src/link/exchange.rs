//! The sans-IO protocol state of a connection.

use super::{Abandoned, Expiry, Mode, Next, judge, judge_mosaic, silence_limit};
use crate::WorkerError;
use mosaic_protocols::{Message, mosaic};
use std::time::{Duration, Instant};

/// One wait for a reply: what is awaited, until when, and since when the worker has been
/// silent. The handshake waits for `hello` the same way.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Awaited {
    /// The request's id (`None` for MOSAIC commands and the handshake).
    id: Option<u64>,
    /// The reply's message type, for errors and logs.
    kind: &'static str,
    deadline: Instant,
    /// From the request to its deadline, for the timeout error.
    timeout: Duration,
    /// Silence counts from here: the request, or the last line received.
    since: Instant,
}

impl Awaited {
    pub(crate) fn new(
        id: Option<u64>,
        kind: &'static str,
        deadline: Instant,
        now: Instant,
    ) -> Self {
        Self {
            id,
            kind,
            deadline,
            timeout: deadline.saturating_duration_since(now),
            since: now,
        }
    }

    /// How long to wait at `now` and what it means when nothing comes (see
    /// [`Expiry::next`]); `silence` is the worker's silence limit.
    pub(crate) fn wait(
        &self,
        now: Instant,
        silence: Option<Duration>,
        exited: Option<Instant>,
    ) -> (Duration, Expiry) {
        let silence = silence.map(|limit| (self.since + limit).saturating_duration_since(now));
        Expiry::next(now, self.deadline, silence, exited)
    }

    /// The error of a wait that ended with nothing: the deadline, a silence of `silence`,
    /// or the exit of the process (described by `exit`).
    pub(crate) fn expired(
        &self,
        expiry: Expiry,
        silence: Option<Duration>,
        exit: Option<String>,
    ) -> WorkerError {
        match expiry {
            Expiry::Deadline => WorkerError::Timeout {
                awaiting: self.kind.to_owned(),
                after_ms: self.timeout.as_millis() as u64,
            },
            Expiry::Silence => WorkerError::Hung {
                awaiting: self.kind.to_owned(),
                silent_ms: silence.unwrap_or(self.timeout).as_millis() as u64,
            },
            Expiry::Exit => WorkerError::Exited {
                during: self.during(),
                exit: exit.unwrap_or_else(|| "status unknown".into()),
            },
        }
    }

    /// The error of an output that ended; `exit` describes the process's exit, if known.
    pub(crate) fn closed(&self, exit: Option<String>) -> WorkerError {
        WorkerError::Closed {
            during: self.during(),
            exit,
        }
    }

    fn during(&self) -> String {
        format!("awaiting `{}`", self.kind)
    }
}

/// The protocol state of a greeted worker's connection, without I/O. It numbers requests,
/// judges every line the worker writes while a reply is awaited (the reply, a heartbeat,
/// a late reply to a request given up on, a message type to answer with `error`, a
/// failure), says how long the next wait may last (the request's deadline, the silence
/// limit of a heartbeating worker, a short drain once the process has exited) and what its
/// end means. A driver moves the bytes: [`super::Link`] over blocking pipes and sockets,
/// `AsyncLink` (feature `tokio`) over tokio pipes.
#[derive(Debug)]
pub struct Exchange {
    name: String,
    mode: Mode,
    silence: Option<Duration>,
    next_id: u64,
    abandoned: Abandoned,
    /// The request being sent, encoded (one buffer for every request).
    outgoing: Vec<u8>,
    awaited: Awaited,
    /// When the process was seen to have exited.
    exited: Option<Instant>,
}

impl Exchange {
    /// The exchange with worker `name` (named in the log) greeted in `mode`; a worker that
    /// announced heartbeats is hung after `heartbeat_timeout` of silence.
    pub fn new(name: &str, mode: Mode, heartbeat_timeout: Duration) -> Self {
        let now = Instant::now();
        Self {
            name: name.to_owned(),
            silence: silence_limit(&mode, heartbeat_timeout),
            mode,
            next_id: 1,
            abandoned: Abandoned::default(),
            outgoing: Vec::with_capacity(256),
            awaited: Awaited::new(None, "nothing", now, now),
            exited: None,
        }
    }

    /// The dialect and handshake details.
    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// The worker's name in logs.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Starts a `mosaic/1` request: `build` makes it with the next id; it is encoded into
    /// [`Exchange::outgoing`], and its reply is awaited until `deadline`.
    pub fn request(&mut self, build: impl FnOnce(u64) -> Message, deadline: Instant, now: Instant) {
        let id = self.next_id;
        self.next_id += 1;
        let request = build(id);
        self.outgoing.clear();
        request.encode_into(&mut self.outgoing);
        self.awaited = Awaited::new(Some(id), request.kind(), deadline, now);
    }

    /// Starts a MOSAIC command, whose reply (of type `expected`) is awaited until
    /// `deadline`.
    pub fn mosaic_request(
        &mut self,
        command: &mosaic::Command,
        expected: &'static str,
        deadline: Instant,
        now: Instant,
    ) {
        self.outgoing = command.encode();
        self.awaited = Awaited::new(None, expected, deadline, now);
    }

    /// The encoded request to send.
    pub fn outgoing(&self) -> &[u8] {
        &self.outgoing
    }

    /// The deadline of the request under way.
    pub fn deadline(&self) -> Instant {
        self.awaited.deadline
    }

    /// How long to wait for the next line at `now`, and what it means when nothing comes.
    pub fn wait(&self, now: Instant) -> (Duration, Expiry) {
        self.awaited.wait(now, self.silence, self.exited)
    }

    /// Judges `line`, received at `now`, as a reply to the request under way.
    pub fn on_line(&mut self, line: &[u8], now: Instant) -> Result<Next<Message>, WorkerError> {
        self.awaited.since = now;
        // MOSAIC commands carry no id: a `mosaic/1` reply to one is out of order.
        let expected = self.awaited.id.unwrap_or_default();
        judge(line, expected, self.abandoned.ids()).next(&self.name)
    }

    /// Judges `line`, received at `now`, as a MOSAIC worker's reply to the command under
    /// way.
    pub fn on_mosaic_line(
        &mut self,
        line: &[u8],
        now: Instant,
    ) -> Result<Next<mosaic::Reply>, WorkerError> {
        self.awaited.since = now;
        Ok(match judge_mosaic(line)? {
            Some(reply) => Next::Reply(reply),
            None => Next::ReadOn,
        })
    }

    /// The error of a wait that ended with nothing (see [`Exchange::wait`]); `exit`
    /// describes the process's exit, if known.
    pub fn expired(&self, expiry: Expiry, exit: Option<String>) -> WorkerError {
        self.awaited.expired(expiry, self.silence, exit)
    }

    /// The error of a worker output that ended while a reply was awaited.
    pub fn closed(&self, exit: Option<String>) -> WorkerError {
        self.awaited.closed(exit)
    }

    /// Notes that the worker's process exited at `now` (lines it wrote before may still
    /// come, for a short while).
    pub fn process_exited(&mut self, now: Instant) {
        self.exited.get_or_insert(now);
    }

    /// Whether the process was seen to have exited.
    pub fn has_exited(&self) -> bool {
        self.exited.is_some()
    }

    /// Ends the request under way with `result`; a failed request is given up on, so its
    /// late reply will be skipped.
    pub fn finish<T>(&mut self, result: Result<T, WorkerError>) -> Result<T, WorkerError> {
        if result.is_err()
            && let Some(id) = self.awaited.id
        {
            self.abandoned.push(id);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_protocols::WorkerKind;
    use mosaic_protocols::handshake::Policy;
    use mosaic_protocols::message::{Ack, code};

    const SECOND: Duration = Duration::from_secs(1);

    fn greeted(hello: &[u8]) -> Exchange {
        let (mode, _) = super::super::greet(hello, &Policy::new(WorkerKind::Env), "s");
        Exchange::new("w", mode.unwrap(), 5 * SECOND)
    }

    fn heartbeating() -> Exchange {
        greeted(br#"{"type":"hello","protocol":"mosaic/1","worker_kind":"env","capabilities":["heartbeat"]}"#)
    }

    fn ping(exchange: &mut Exchange, now: Instant) {
        exchange.request(|id| Message::Ping(Ack { id }), now + 10 * SECOND, now);
    }

    #[test]
    fn requests_are_numbered_and_encoded() {
        let mut exchange = heartbeating();
        let now = Instant::now();
        ping(&mut exchange, now);
        assert_eq!(
            Message::decode(exchange.outgoing()).unwrap(),
            Message::Ping(Ack { id: 1 })
        );
        ping(&mut exchange, now);
        assert_eq!(
            Message::decode(exchange.outgoing()).unwrap(),
            Message::Ping(Ack { id: 2 })
        );
        assert_eq!(exchange.deadline(), now + 10 * SECOND);
    }

    #[test]
    fn lines_are_judged_against_the_request_under_way() {
        let mut exchange = heartbeating();
        let now = Instant::now();
        ping(&mut exchange, now);
        assert_eq!(
            exchange.on_line(br#"{"type":"heartbeat"}"#, now),
            Ok(Next::ReadOn)
        );
        assert!(matches!(
            exchange.on_line(br#"{"type":"dance"}"#, now),
            Ok(Next::Answer(ref line)) if matches!(Message::decode(line), Ok(Message::Error(ref e)) if e.code == code::UNKNOWN_TYPE)
        ));
        assert_eq!(
            exchange.on_line(br#"{"type":"pong","id":1}"#, now),
            Ok(Next::Reply(Message::Pong(Ack { id: 1 })))
        );
        assert_eq!(exchange.finish(Ok(())), Ok(()));
        // Request 2 fails: its late reply is skipped while request 3 is awaited; a reply to
        // request 1, which succeeded, is out of order.
        ping(&mut exchange, now);
        let failed: Result<(), _> = exchange.finish(Err(exchange.expired(Expiry::Deadline, None)));
        assert!(failed.is_err());
        ping(&mut exchange, now);
        assert_eq!(
            exchange.on_line(br#"{"type":"pong","id":2}"#, now),
            Ok(Next::ReadOn)
        );
        assert!(matches!(
            exchange.on_line(br#"{"type":"pong","id":1}"#, now),
            Err(WorkerError::OutOfOrder {
                expected: 3,
                got_id: Some(1),
                ..
            })
        ));
    }

    #[test]
    fn silence_counts_from_the_last_line() {
        let mut exchange = heartbeating();
        let start = Instant::now();
        ping(&mut exchange, start);
        assert_eq!(exchange.wait(start), (5 * SECOND, Expiry::Silence));
        assert_eq!(exchange.wait(start + 4 * SECOND), (SECOND, Expiry::Silence));
        exchange
            .on_line(br#"{"type":"heartbeat"}"#, start + 4 * SECOND)
            .unwrap();
        assert_eq!(
            exchange.wait(start + 6 * SECOND),
            (3 * SECOND, Expiry::Silence)
        );
        // Closer to the deadline than to the silence limit.
        exchange
            .on_line(br#"{"type":"heartbeat"}"#, start + 8 * SECOND)
            .unwrap();
        assert_eq!(
            exchange.wait(start + 8 * SECOND),
            (2 * SECOND, Expiry::Deadline)
        );
        let mut quiet = greeted(br#"{"type":"hello","protocol":"mosaic/1","worker_kind":"env"}"#);
        ping(&mut quiet, start);
        assert_eq!(quiet.wait(start), (10 * SECOND, Expiry::Deadline));
    }

    #[test]
    fn after_an_exit_the_wait_only_drains() {
        let mut exchange = heartbeating();
        let start = Instant::now();
        ping(&mut exchange, start);
        assert!(!exchange.has_exited());
        exchange.process_exited(start);
        exchange.process_exited(start + SECOND);
        assert!(exchange.has_exited());
        assert_eq!(
            exchange.wait(start),
            (super::super::EXIT_DRAIN, Expiry::Exit)
        );
    }

    #[test]
    fn the_end_of_a_wait_names_what_was_awaited() {
        let mut exchange = heartbeating();
        let start = Instant::now();
        ping(&mut exchange, start);
        assert_eq!(
            exchange.expired(Expiry::Deadline, None),
            WorkerError::Timeout {
                awaiting: "ping".into(),
                after_ms: 10_000
            }
        );
        assert_eq!(
            exchange.expired(Expiry::Silence, None),
            WorkerError::Hung {
                awaiting: "ping".into(),
                silent_ms: 5_000
            }
        );
        assert_eq!(
            exchange.expired(Expiry::Exit, Some("exit status: 3".into())),
            WorkerError::Exited {
                during: "awaiting `ping`".into(),
                exit: "exit status: 3".into()
            }
        );
        assert!(
            exchange
                .expired(Expiry::Exit, None)
                .to_string()
                .contains("status unknown")
        );
        assert_eq!(
            exchange.closed(None).to_string(),
            "worker closed its output while awaiting `ping`"
        );
    }

    #[test]
    fn mosaic_replies_skip_episode_notices() {
        let mut exchange = greeted(br#"{"type":"init","worker":"random_worker"}"#);
        assert!(matches!(exchange.mode(), Mode::Mosaic { .. }));
        let now = Instant::now();
        exchange.mosaic_request(&mosaic::Command::Stop, "stopped", now + SECOND, now);
        assert_eq!(exchange.outgoing(), mosaic::Command::Stop.encode());
        assert_eq!(exchange.wait(now), (SECOND, Expiry::Deadline));
        assert_eq!(
            exchange.on_mosaic_line(br#"{"type":"episode_done"}"#, now),
            Ok(Next::ReadOn)
        );
        assert_eq!(
            exchange.on_mosaic_line(br#"{"type":"pong"}"#, now),
            Ok(Next::Reply(mosaic::Reply::Pong))
        );
        assert!(matches!(
            exchange.on_mosaic_line(br#"{"type":"error","message":"m"}"#, now),
            Err(WorkerError::Remote { .. })
        ));
        // No id: a failed command leaves nothing to skip later.
        let failed: Result<(), _> = exchange.finish(Err(exchange.closed(None)));
        assert!(failed.is_err());
    }
}
