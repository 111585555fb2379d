//! The handshake, blocking for both drivers: the worker's first line is read on a helper
//! thread (so the wait has a deadline and notices the process's exit), judged by
//! [`greet`], and answered. The output is handed back with whatever was read past that
//! line, for the driver's own reader.

use super::exchange::Awaited;
use super::{CLOSE_WAIT, LinkOptions, Mode, WRITE_WAIT, greet, write_failed};
use crate::WorkerError;
use crate::process::WorkerProcess;
use mosaic_protocols::codec::{FrameReader, ReadError};
use std::io::{Read, Write};
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// How long a worker that failed to start may take to finish writing to stderr.
const STDERR_WAIT: Duration = Duration::from_millis(500);

/// A worker that answered the handshake.
#[derive(Debug)]
pub(crate) struct Greeted<R> {
    /// Its dialect.
    pub mode: Mode,
    /// Its output.
    pub reader: R,
    /// Bytes read from the output past the first line.
    pub pending: Vec<u8>,
}

enum Event<R> {
    First(Result<Option<Vec<u8>>, ReadError>, (R, Vec<u8>)),
    Exited,
}

/// Sends the `auth` line when the options hold a token, reads the first line of worker
/// `name` from `reader` within the handshake deadline, answers it on `writer` and returns
/// the dialect. `process`, when the worker is one, has its exit noticed during the wait.
pub(crate) fn handshake<R: Read + Send + 'static>(
    name: &str,
    reader: R,
    writer: &mut dyn Write,
    process: Option<&WorkerProcess>,
    options: &LinkOptions,
) -> Result<Greeted<R>, WorkerError> {
    if let Some(auth) = options.policy.auth() {
        writer
            .write_all(&auth.encode())
            .and_then(|()| writer.flush())
            .map_err(|e| write_failed(&e, None))?;
    }
    let (first, reader, pending) =
        first_line(name, reader, process, options).map_err(|e| with_stderr(e, process))?;
    let session = format!("{name}-{}", std::process::id());
    let (mode, answer) = greet(&first, &options.policy, &session);
    if let Some(answer) = answer {
        writer
            .write_all(&answer.encode())
            .and_then(|()| writer.flush())
            .map_err(|e| {
                write_failed(
                    &e,
                    process
                        .and_then(|p| p.wait_exit(WRITE_WAIT))
                        .map(|s| s.to_string()),
                )
            })?;
    }
    let mode = mode.map_err(|e| with_stderr(e, process))?;
    match &mode {
        Mode::Native { hello, .. } => {
            tracing::info!(target: "mosaic::worker", worker = name, protocol = %hello.protocol, "worker greeted")
        }
        Mode::Mosaic { init } => {
            tracing::info!(target: "mosaic::worker", worker = name, init = %serde_json::Value::Object(init.clone()), "MOSAIC worker detected: compatibility mode")
        }
    }
    Ok(Greeted {
        mode,
        reader,
        pending,
    })
}

/// The worker's first line, read within the handshake deadline, with its output and the
/// bytes read past that line.
fn first_line<R: Read + Send + 'static>(
    name: &str,
    reader: R,
    process: Option<&WorkerProcess>,
    options: &LinkOptions,
) -> Result<(Vec<u8>, R, Vec<u8>), WorkerError> {
    let (tx, rx) = channel();
    let max_frame = options.max_frame;
    let read_first = {
        let tx = tx.clone();
        move || {
            let mut frames = FrameReader::new(reader, max_frame);
            let first = frames.next_line();
            let _ = tx.send(Event::First(first, frames.into_parts()));
        }
    };
    std::thread::Builder::new()
        .name(format!("hello:{name}"))
        .spawn(read_first)
        .map_err(|e| WorkerError::Handshake(format!("cannot start the handshake reader: {e}")))?;
    if let Some(process) = process {
        process.on_exit(move |_| {
            let _ = tx.send(Event::Exited);
        });
    }
    let start = Instant::now();
    let awaited = Awaited::new(None, "hello", start + options.handshake_timeout, start);
    let mut exited = None;
    loop {
        let now = Instant::now();
        if exited.is_none() && process.is_some_and(|p| p.try_exit().is_some()) {
            exited = Some(now);
        }
        let (wait, expiry) = awaited.wait(now, None, exited);
        match rx.recv_timeout(wait) {
            Ok(Event::First(Ok(Some(line)), (reader, pending))) => {
                return Ok((line, reader, pending));
            }
            Ok(Event::First(Err(ReadError::Framing(e)), _)) => {
                return Err(WorkerError::Framing(e));
            }
            Ok(Event::First(Ok(None) | Err(ReadError::Io(_)), _))
            | Err(RecvTimeoutError::Disconnected) => {
                let exit = process.and_then(|p| p.wait_exit(CLOSE_WAIT));
                return Err(awaited.closed(exit.map(|s| s.to_string())));
            }
            Ok(Event::Exited) => {}
            Err(RecvTimeoutError::Timeout) => {
                let exit = process.and_then(WorkerProcess::describe_exit);
                return Err(awaited.expired(expiry, None, exit));
            }
        }
    }
}

/// `error` with the last lines of the worker's stderr when the worker never greeted (it
/// closed its output, exited, said nothing in time, or wrote something else first) and
/// wrote to stderr.
fn with_stderr(error: WorkerError, process: Option<&WorkerProcess>) -> WorkerError {
    let silent = matches!(
        error,
        WorkerError::Closed { .. }
            | WorkerError::Exited { .. }
            | WorkerError::Timeout { .. }
            | WorkerError::Handshake(_)
    );
    let Some(process) = process.filter(|_| silent) else {
        return error;
    };
    // All of it from a worker that exited; what there is from one that still runs.
    let wait = match process.try_exit() {
        Some(_) => STDERR_WAIT,
        None => Duration::ZERO,
    };
    let stderr = process.stderr_tail(wait);
    if stderr.is_empty() {
        return error;
    }
    WorkerError::Start {
        error: Box::new(error),
        stderr,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::WorkerCommand;
    use mosaic_protocols::{Message, WorkerKind};
    use std::io::Cursor;

    const HELLO: &[u8] = br#"{"type":"hello","protocol":"mosaic/1","worker_kind":"env"}"#;

    fn options(timeout: Duration) -> LinkOptions {
        let mut options = LinkOptions::new(WorkerKind::Env);
        options.handshake_timeout = timeout;
        options
    }

    #[test]
    fn the_first_line_is_answered_and_the_rest_handed_back() {
        let output = [HELLO, b"\n{\"type\":\"heartbeat\"}\n{\"ty"].concat();
        let mut answer = Vec::new();
        let mut greeted = handshake(
            "t",
            Cursor::new(output),
            &mut answer,
            None,
            &options(Duration::from_secs(10)),
        )
        .unwrap();
        assert!(matches!(greeted.mode, Mode::Native { .. }));
        assert!(matches!(Message::decode(&answer), Ok(Message::Welcome(_))));
        let mut rest = greeted.pending;
        greeted.reader.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, b"{\"type\":\"heartbeat\"}\n{\"ty");
    }

    #[test]
    fn a_token_goes_first_and_a_refusal_is_reported() {
        let mut options = options(Duration::from_secs(10));
        options.policy.token = Some(mosaic_protocols::message::Token::new("s3cret"));
        let hello = br#"{"type":"hello","protocol":"mosaic/1.2","worker_kind":"env","capabilities":["auth:token"]}"#;
        let mut sent = Vec::new();
        handshake(
            "t",
            Cursor::new([hello, &b"\n"[..]].concat()),
            &mut sent,
            None,
            &options,
        )
        .unwrap();
        let mut lines = sent.split(|b| *b == b'\n');
        assert!(matches!(
            Message::decode(lines.next().unwrap()),
            Ok(Message::Auth(auth)) if auth.token.expose() == "s3cret"
        ));
        assert!(matches!(
            Message::decode(lines.next().unwrap()),
            Ok(Message::Welcome(_))
        ));
        let refusal =
            br#"{"type":"reject","reason":"authentication failed: the token does not match"}"#;
        let err = handshake(
            "t",
            Cursor::new([refusal, &b"\n"[..]].concat()),
            &mut Vec::new(),
            None,
            &options,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the worker refused the connection: authentication failed: the token does not match"
        );
    }

    #[test]
    fn no_first_line_is_an_error_naming_the_handshake() {
        let closed = handshake(
            "t",
            Cursor::new(Vec::new()),
            &mut Vec::new(),
            None,
            &options(Duration::from_secs(10)),
        )
        .unwrap_err();
        assert_eq!(
            closed.to_string(),
            "worker closed its output while awaiting `hello`"
        );
        let (silent, _keep_open) = std::os::unix::net::UnixStream::pair().unwrap();
        let started = Instant::now();
        let timeout = handshake(
            "t",
            silent,
            &mut Vec::new(),
            None,
            &options(Duration::from_millis(50)),
        )
        .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(
            timeout,
            WorkerError::Timeout {
                awaiting: "hello".into(),
                after_ms: 50
            }
        );
        let garbage = handshake(
            "t",
            Cursor::new(b"Loading...\n".to_vec()),
            &mut Vec::new(),
            None,
            &options(Duration::from_secs(10)),
        )
        .unwrap_err();
        assert!(matches!(garbage, WorkerError::Handshake(_)), "{garbage}");
    }

    #[test]
    fn a_worker_that_dies_before_greeting_shows_the_end_of_its_stderr() {
        let script = "echo starting >&2; echo Traceback >&2; echo 'ValueError: boom' >&2; exit 1";
        let command = WorkerCommand::from_argv(&["sh".into(), "-c".into(), script.into()]).unwrap();
        let (process, mut stdin, stdout) = WorkerProcess::spawn(&command, "t").unwrap();
        let err = handshake(
            "t",
            stdout,
            &mut stdin,
            Some(&process),
            &options(Duration::from_secs(10)),
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("worker closed its output while awaiting `hello` (exit status: 1)"),
            "{text}"
        );
        assert!(
            text.ends_with(
                "the worker's stderr ended with:\n  starting\n  Traceback\n  ValueError: boom"
            ),
            "{text}"
        );
        assert!(err.is_fatal());
        // A worker that says nothing on stderr fails as before.
        let quiet = WorkerCommand::from_argv(&["sh".into(), "-c".into(), "exit 2".into()]).unwrap();
        let (process, mut stdin, stdout) = WorkerProcess::spawn(&quiet, "t").unwrap();
        let err = handshake(
            "t",
            stdout,
            &mut stdin,
            Some(&process),
            &options(Duration::from_secs(10)),
        )
        .unwrap_err();
        assert!(matches!(err, WorkerError::Closed { .. }), "{err}");
    }
}
