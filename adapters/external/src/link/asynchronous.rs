//! [`AsyncLink`]: the tokio driver of an [`Exchange`], over a worker process's pipes, for
//! callers that must not block their thread while a worker thinks (the `worker` policy
//! operator answers on an actix arbiter). Only the handshake blocks, as the operator is
//! spawned.

use super::LinkOptions;
use super::Mode;
use super::exchange::Exchange;
use super::handshake::handshake;
use super::{CLOSE_WAIT, Judge, Next, WRITE_WAIT, write_failed};
use crate::WorkerError;
use crate::process::{WorkerCommand, WorkerProcess};
use mosaic_protocols::codec::{Decoded, LineDecoder};
use mosaic_protocols::{FramingError, Message, mosaic};
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::oneshot;

/// A greeted worker process whose requests are awaited on the current tokio runtime. One
/// request at a time (`&mut self`).
#[derive(Debug)]
pub struct AsyncLink {
    exchange: Exchange,
    stdin: ChildStdin,
    reader: Reader,
    /// One timer for every wait, moved only when it would go off too late: a fresh timer
    /// per request costs a wake-up of the runtime's driver (an eventfd write and an extra
    /// epoll round), and moving it a timer-wheel update.
    timer: Pin<Box<tokio::time::Sleep>>,
    /// The deadline of one request.
    timeout: Duration,
    process: WorkerProcess,
    /// Told when the process exits, so a pending request fails at once even when a
    /// process the worker started keeps its output open. A oneshot rather than a
    /// `Notify`: waiting on it again costs no waiter registration per wait.
    exit: oneshot::Receiver<()>,
}

impl AsyncLink {
    /// Starts `command` and greets it (blocking, within the handshake deadline of
    /// `options`); requests then have `timeout` each. Must be called within a tokio
    /// runtime, which the pipes are registered with.
    pub fn spawn(
        command: &WorkerCommand,
        name: &str,
        options: &LinkOptions,
        timeout: Duration,
    ) -> Result<Self, WorkerError> {
        let (mut process, mut stdin, stdout) = WorkerProcess::spawn(command, name)?;
        let greeted = match handshake(name, stdout, &mut stdin, Some(&process), options) {
            Ok(greeted) => greeted,
            Err(e) => {
                process.finish(options.grace);
                return Err(e);
            }
        };
        let to_io = |e: std::io::Error| WorkerError::Spawn {
            command: command.display(),
            error: format!("cannot attach the worker's pipes: {e}"),
        };
        let (exited, exit) = oneshot::channel();
        process.on_exit(move |_| {
            let _ = exited.send(());
        });
        let mut reader = Reader {
            stdout: BufReader::with_capacity(
                64 * 1024,
                ChildStdout::from_std(greeted.reader).map_err(to_io)?,
            ),
            decoder: LineDecoder::new(options.max_frame),
            ready: VecDeque::new(),
        };
        reader.feed(&greeted.pending);
        Ok(Self {
            exchange: Exchange::new(name, greeted.mode, options.heartbeat_timeout),
            stdin: ChildStdin::from_std(stdin).map_err(to_io)?,
            reader,
            timer: Box::pin(tokio::time::sleep(Duration::from_secs(3600))),
            timeout,
            process,
            exit,
        })
    }

    /// The dialect and handshake details.
    pub fn mode(&self) -> &Mode {
        self.exchange.mode()
    }

    /// The worker's name in logs.
    pub fn name(&self) -> &str {
        self.exchange.name()
    }

    /// Sends the request `build` makes (given its id) and awaits its reply, until the
    /// request's own deadline or `deadline`, whichever comes first. The request is built
    /// and encoded at once, so the future holds none of it.
    pub fn request(
        &mut self,
        build: impl FnOnce(u64) -> Message,
        deadline: Option<Instant>,
    ) -> impl Future<Output = Result<Message, WorkerError>> {
        let now = Instant::now();
        self.exchange
            .request(build, self.deadline(now, deadline), now);
        async move {
            let result = self.round_trip(Exchange::on_line).await;
            self.exchange.finish(result)
        }
    }

    /// Sends a MOSAIC command and awaits its reply (of type `expected`), until the
    /// request's own deadline or `deadline`, whichever comes first.
    pub async fn mosaic_request(
        &mut self,
        command: &mosaic::Command,
        expected: &'static str,
        deadline: Option<Instant>,
    ) -> Result<mosaic::Reply, WorkerError> {
        let now = Instant::now();
        let deadline = self.deadline(now, deadline);
        self.exchange
            .mosaic_request(command, expected, deadline, now);
        let result = self.round_trip(Exchange::on_mosaic_line).await;
        self.exchange.finish(result)
    }

    /// Kills the process group at once (SIGKILL, no grace): for a worker that died or
    /// hung.
    pub fn kill(&mut self) {
        self.process.kill();
    }

    /// Closes the worker's input (a protocol worker finishes then), then stops its process
    /// group: SIGTERM and, after `grace`, SIGKILL. Off the caller's thread: that may take
    /// a while.
    pub fn stop_in_background(self, grace: Duration) {
        let Self {
            stdin,
            mut process,
            exchange,
            ..
        } = self;
        drop(stdin);
        let stopper = move || {
            process.finish(grace);
            tracing::debug!(target: "mosaic::worker", worker = %exchange.name(), "worker stopped");
        };
        if let Err(e) = crate::process::stop_in_background(stopper) {
            tracing::warn!(target: "mosaic::worker", "cannot stop a worker in the background: {e}");
        }
    }

    /// The deadline of a request starting at `now`: its own timeout, or `deadline` if that
    /// comes first.
    fn deadline(&self, now: Instant, deadline: Option<Instant>) -> Instant {
        let own = now + self.timeout;
        deadline.map_or(own, |d| d.min(own))
    }

    /// Sends the request under way and reads lines until `judge` finds its reply.
    async fn round_trip<R>(&mut self, judge: Judge<R>) -> Result<R, WorkerError> {
        self.send(None).await?;
        loop {
            let line = self.recv().await?;
            match judge(&mut self.exchange, &line, Instant::now())? {
                Next::Reply(reply) => return Ok(reply),
                Next::ReadOn => {}
                Next::Answer(answer) => self.send(Some(&answer)).await?,
            }
        }
    }

    /// Writes `answer`, or the request under way, within the request's deadline.
    async fn send(&mut self, answer: Option<&[u8]>) -> Result<(), WorkerError> {
        let deadline = self.exchange.deadline();
        let line = answer.unwrap_or(self.exchange.outgoing());
        match write_within(&mut self.stdin, line, deadline).await {
            Ok(()) => Ok(()),
            Err(Unwritten::Late(after)) => Err(WorkerError::Timeout {
                awaiting: "the worker to read its input".into(),
                after_ms: after.as_millis() as u64,
            }),
            Err(Unwritten::Failed(e)) => {
                let exit = self.exit_status(WRITE_WAIT).await;
                Err(write_failed(&e, exit))
            }
        }
    }

    async fn recv(&mut self) -> Result<Vec<u8>, WorkerError> {
        enum Event {
            Line(Result<Option<Vec<u8>>, WorkerError>),
            Expired,
            Exited,
        }
        let mut now = Instant::now();
        loop {
            let (wait, expiry) = self.exchange.wait(now);
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
                // process handle, which this link holds.
                _ = &mut self.exit, if !self.exchange.has_exited() => Event::Exited,
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
                    return Err(self.exchange.expired(expiry, self.process.describe_exit()));
                }
                Event::Exited => self.exchange.process_exited(Instant::now()),
            }
            now = Instant::now();
        }
    }

    /// The error of an output that ended, with the exit status: the output can end a moment
    /// before the process is reaped.
    async fn closed(&mut self) -> WorkerError {
        let exit = self.exit_status(CLOSE_WAIT).await;
        self.exchange.closed(exit)
    }

    /// The process's exit status, waiting up to `wait` for its exit.
    async fn exit_status(&mut self, wait: Duration) -> Option<String> {
        if self.process.try_exit().is_none()
            && !self.exchange.has_exited()
            && tokio::time::timeout(wait, &mut self.exit).await.is_ok()
        {
            self.exchange.process_exited(Instant::now());
        }
        self.process.describe_exit()
    }
}

/// Why a line was not written.
enum Unwritten {
    /// The worker did not read its input for this long.
    Late(Duration),
    Failed(std::io::Error),
}

/// Writes `line` to the worker within `deadline`.
async fn write_within(
    stdin: &mut ChildStdin,
    line: &[u8],
    deadline: Instant,
) -> Result<(), Unwritten> {
    // The usual case: the pipe has room and the line leaves in one system call, with no
    // timer to set up.
    let written = std::future::poll_fn(|cx| {
        Poll::Ready(match Pin::new(&mut *stdin).poll_write(cx, line) {
            Poll::Ready(result) => result,
            Poll::Pending => Ok(0),
        })
    })
    .await
    .map_err(Unwritten::Failed)?;
    if written == line.len() {
        return Ok(());
    }
    let left = deadline.saturating_duration_since(Instant::now());
    let rest = async {
        stdin.write_all(&line[written..]).await?;
        stdin.flush().await
    };
    match tokio::time::timeout(left, rest).await {
        Ok(result) => result.map_err(Unwritten::Failed),
        Err(_) => Err(Unwritten::Late(left)),
    }
}

/// The worker's output, framed.
#[derive(Debug)]
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
        WorkerError::Framing(FramingError::TooLong {
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
