//! [`AsyncLink`]: the tokio driver of an [`Exchange`], over a worker process's pipes or a
//! socket to a listening worker, for callers that must not block their thread while a
//! worker thinks (the `worker` policy decider answers on an actix arbiter). Only the
//! handshake blocks, as the decider is spawned.

use super::LinkOptions;
use super::Mode;
use super::exchange::Exchange;
use super::handshake::handshake;
use super::{CLOSE_WAIT, Judge, Next, WRITE_WAIT, write_failed};
use crate::WorkerError;
use crate::process::{WorkerCommand, WorkerProcess};
use mosaic_protocols::codec::{Decoded, LineDecoder};
use mosaic_protocols::transport::{Endpoint, Stream};
use mosaic_protocols::{FramingError, Message, mosaic};
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::oneshot;

/// Where requests go: the process's stdin or the socket.
type Output = Box<dyn AsyncWrite + Unpin + Send>;
/// Where replies come from: the process's stdout or the socket.
type Input = Box<dyn AsyncRead + Unpin + Send>;

/// A greeted worker (a process or a listening worker reached over a socket) whose requests
/// are awaited on the current tokio runtime. One request at a time (`&mut self`).
pub struct AsyncLink {
    exchange: Exchange,
    output: Output,
    reader: Reader,
    /// One timer for every wait, moved only when it would go off too late: a fresh timer
    /// per request costs a wake-up of the runtime's driver (an eventfd write and an extra
    /// epoll round), and moving it a timer-wheel update.
    timer: Pin<Box<tokio::time::Sleep>>,
    /// The deadline of one request.
    timeout: Duration,
    peer: Peer,
}

/// The other end of a link.
enum Peer {
    /// A worker process this link started.
    Process {
        process: WorkerProcess,
        /// Told when the process exits, so a pending request fails at once even when a
        /// process the worker started keeps its output open. A oneshot rather than a
        /// `Notify`: waiting on it again costs no waiter registration per wait.
        exit: oneshot::Receiver<()>,
    },
    /// A listening worker: a handle on the socket, to shut it down (the reading and the
    /// writing handles are the runtime's).
    Socket(Stream),
}

impl std::fmt::Debug for AsyncLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncLink")
            .field("name", &self.exchange.name())
            .field("mode", self.exchange.mode())
            .finish_non_exhaustive()
    }
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
        let input: Input = Box::new(ChildStdout::from_std(greeted.reader).map_err(to_io)?);
        let output: Output = Box::new(ChildStdin::from_std(stdin).map_err(to_io)?);
        let peer = Peer::Process { process, exit };
        Ok(Self::greeted(
            name,
            greeted.mode,
            &greeted.pending,
            (input, output),
            peer,
            options,
            timeout,
        ))
    }

    /// Connects to the worker listening at `endpoint` and greets it (blocking, within the
    /// handshake deadline of `options`, which carry the token if the worker asks for one);
    /// requests then have `timeout` each. Must be called within a tokio runtime, which the
    /// socket is registered with.
    pub fn connect(
        endpoint: &Endpoint,
        name: &str,
        options: &LinkOptions,
        timeout: Duration,
    ) -> Result<Self, WorkerError> {
        let connect_error = |e: std::io::Error| WorkerError::Connect {
            endpoint: endpoint.to_string(),
            error: e.to_string(),
        };
        let socket = endpoint
            .connect(options.handshake_timeout)
            .map_err(connect_error)?;
        let mut writer = socket.try_clone().map_err(connect_error)?;
        let reader = socket.try_clone().map_err(connect_error)?;
        let greeted = match handshake(name, reader, &mut writer, None, options) {
            Ok(greeted) => greeted,
            Err(e) => {
                let _ = socket.shutdown();
                return Err(connect_error(std::io::Error::other(e.to_string())));
            }
        };
        let (input, output) = halves(greeted.reader).map_err(connect_error)?;
        let peer = Peer::Socket(socket);
        Ok(Self::greeted(
            name,
            greeted.mode,
            &greeted.pending,
            (input, output),
            peer,
            options,
            timeout,
        ))
    }

    /// The link over a greeted worker's streams; `pending` is what was read past the
    /// handshake.
    fn greeted(
        name: &str,
        mode: Mode,
        pending: &[u8],
        (input, output): (Input, Output),
        peer: Peer,
        options: &LinkOptions,
        timeout: Duration,
    ) -> Self {
        let mut reader = Reader {
            input: BufReader::with_capacity(64 * 1024, input),
            decoder: LineDecoder::new(options.max_frame),
            ready: VecDeque::new(),
        };
        reader.feed(pending);
        Self {
            exchange: Exchange::new(name, mode, options.heartbeat_timeout),
            output,
            reader,
            timer: Box::pin(tokio::time::sleep(Duration::from_secs(3600))),
            timeout,
            peer,
        }
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

    /// Kills the process group at once (SIGKILL, no grace), or closes the socket of a
    /// listening worker: for a worker that died or hung.
    pub fn kill(&mut self) {
        match &mut self.peer {
            Peer::Process { process, .. } => {
                process.kill();
            }
            Peer::Socket(socket) => {
                let _ = socket.shutdown();
            }
        }
    }

    /// Closes the worker's input (a protocol worker finishes then), then stops its process
    /// group: SIGTERM and, after `grace`, SIGKILL. Off the caller's thread: that may take
    /// a while. A listening worker's connection is closed (the worker goes on listening
    /// or exits, as it was started).
    pub fn stop_in_background(self, grace: Duration) {
        let Self {
            output,
            peer,
            exchange,
            ..
        } = self;
        drop(output);
        let mut process = match peer {
            Peer::Process { process, .. } => process,
            Peer::Socket(socket) => {
                let _ = socket.shutdown();
                tracing::debug!(target: "mosaic::worker", worker = %exchange.name(), "connection closed");
                return;
            }
        };
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
        match write_within(&mut self.output, line, deadline).await {
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
                () = exited(&mut self.peer), if !self.exchange.has_exited() => Event::Exited,
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
                    return Err(self.exchange.expired(expiry, self.peer.describe_exit()));
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

    /// The process's exit status, waiting up to `wait` for its exit (`None` for a socket).
    async fn exit_status(&mut self, wait: Duration) -> Option<String> {
        let Peer::Process { process, exit } = &mut self.peer else {
            return None;
        };
        if process.try_exit().is_none()
            && !self.exchange.has_exited()
            && tokio::time::timeout(wait, exit).await.is_ok()
        {
            self.exchange.process_exited(Instant::now());
        }
        process.describe_exit()
    }
}

impl Peer {
    /// How the process ended, if it did.
    fn describe_exit(&self) -> Option<String> {
        match self {
            Peer::Process { process, .. } => process.describe_exit(),
            Peer::Socket(_) => None,
        }
    }
}

/// Returns when the worker process exits; never for a socket (its end is the end of the
/// input).
async fn exited(peer: &mut Peer) {
    match peer {
        // Only a send ends this wait: the sender is dropped unsent only with the process
        // handle, which the link holds.
        Peer::Process { exit, .. } => {
            let _ = exit.await;
        }
        Peer::Socket(_) => std::future::pending().await,
    }
}

/// The reading and writing halves of a connected socket, registered with the runtime.
fn halves(socket: Stream) -> std::io::Result<(Input, Output)> {
    Ok(match socket {
        Stream::Tcp(s) => {
            s.set_nonblocking(true)?;
            let (input, output) = tokio::net::TcpStream::from_std(s)?.into_split();
            (Box::new(input), Box::new(output))
        }
        Stream::Unix(s) => {
            s.set_nonblocking(true)?;
            let (input, output) = tokio::net::UnixStream::from_std(s)?.into_split();
            (Box::new(input), Box::new(output))
        }
    })
}

/// Why a line was not written.
enum Unwritten {
    /// The worker did not read its input for this long.
    Late(Duration),
    Failed(std::io::Error),
}

/// Writes `line` to the worker within `deadline`.
async fn write_within(stdin: &mut Output, line: &[u8], deadline: Instant) -> Result<(), Unwritten> {
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
struct Reader {
    input: BufReader<Input>,
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
            let chunk = match self.input.fill_buf().await {
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
            self.input.consume(used);
            match decoded {
                Decoded::Pending => {}
                Decoded::Line(line) => return Ok(Some(line)),
                Decoded::TooLong => return Err(self.too_long()),
            }
        }
    }
}
