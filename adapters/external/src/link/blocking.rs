//! [`Link`]: the blocking driver of an [`Exchange`], over a worker process's pipes or a
//! socket. A reader thread frames the worker's output and hands lines over a channel, so
//! every wait has a deadline (`recv_timeout`) and a worker that floods or stalls cannot
//! block the caller past it.

use super::exchange::Exchange;
use super::handshake::handshake;
use super::{CLOSE_WAIT, Judge, Next, WRITE_WAIT, write_failed};
use super::{LinkOptions, Mode};
use crate::WorkerError;
use crate::process::{WorkerCommand, WorkerProcess};
use mosaic_protocols::codec::{FrameReader, ReadError};
use mosaic_protocols::message::Ack;
use mosaic_protocols::transport::{Endpoint, Stream};
use mosaic_protocols::{Message, mosaic};
use std::io::{Cursor, Read, Write};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::time::{Duration, Instant};

enum Incoming {
    Line(Vec<u8>),
    Failed(WorkerError),
    Eof,
    /// The process exited (a wake-up: its status is read from the process).
    Exited,
}

/// A connected, greeted worker.
pub struct Link {
    exchange: Exchange,
    writer: Box<dyn Write + Send>,
    incoming: Receiver<Incoming>,
    process: Option<WorkerProcess>,
    socket: Option<Stream>,
    grace: Duration,
    closed: bool,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("name", &self.exchange.name())
            .field("mode", self.exchange.mode())
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
        Self::open(name, stdout, Box::new(stdin), Some(process), None, options)
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
        // Over a socket the address is what tells one worker from another.
        Self::open(name, reader, Box::new(writer), None, Some(stream), options)
            .map_err(|e| connect_error(std::io::Error::other(e.to_string())))
    }

    fn open<R: Read + Send + 'static>(
        name: &str,
        reader: R,
        mut writer: Box<dyn Write + Send>,
        mut process: Option<WorkerProcess>,
        socket: Option<Stream>,
        options: &LinkOptions,
    ) -> Result<Link, WorkerError> {
        let greeted = match handshake(name, reader, &mut writer, process.as_ref(), options) {
            Ok(greeted) => greeted,
            Err(e) => {
                if let Some(socket) = &socket {
                    let _ = socket.shutdown();
                }
                if let Some(process) = process.as_mut() {
                    process.finish(options.grace);
                }
                return Err(e);
            }
        };
        // A small bound keeps a flooding worker from growing memory without limit.
        let (tx, rx) = sync_channel(64);
        let max_frame = options.max_frame;
        let output = Cursor::new(greeted.pending).chain(greeted.reader);
        let started = std::thread::Builder::new()
            .name(format!("stdout:{name}"))
            .spawn({
                let tx = tx.clone();
                move || read_frames(output, max_frame, tx)
            });
        if let Err(e) = started {
            if let Some(process) = process.as_mut() {
                process.kill();
            }
            return Err(WorkerError::Spawn {
                command: name.to_owned(),
                error: format!("cannot start the reader thread: {e}"),
            });
        }
        if let Some(process) = &process {
            // Never blocks: when the channel is full the consumer is busy reading, and it
            // checks the process before each wait anyway.
            process.on_exit(move |_| {
                let _ = tx.try_send(Incoming::Exited);
            });
        }
        Ok(Link {
            exchange: Exchange::new(name, greeted.mode, options.heartbeat_timeout),
            writer,
            incoming: rx,
            process,
            socket,
            grace: options.grace,
            closed: false,
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

    /// Sends the request built by `build` (given its id) and waits up to `timeout` for its
    /// reply, skipping heartbeats and answering unknown message types.
    pub fn request(
        &mut self,
        build: impl FnOnce(u64) -> Message,
        timeout: Duration,
    ) -> Result<Message, WorkerError> {
        let now = Instant::now();
        self.exchange.request(build, now + timeout, now);
        let result = self.round_trip(Exchange::on_line);
        self.finish(result)
    }

    /// Sends a MOSAIC command and waits up to `timeout` for its reply (of type `expected`).
    pub fn mosaic_request(
        &mut self,
        command: &mosaic::Command,
        expected: &'static str,
        timeout: Duration,
    ) -> Result<mosaic::Reply, WorkerError> {
        let now = Instant::now();
        self.exchange
            .mosaic_request(command, expected, now + timeout, now);
        let result = self.round_trip(Exchange::on_mosaic_line);
        self.finish(result)
    }

    /// Sends the request under way and reads lines until `judge` finds its reply.
    fn round_trip<R>(&mut self, judge: Judge<R>) -> Result<R, WorkerError> {
        write(
            &mut self.writer,
            self.process.as_ref(),
            self.exchange.outgoing(),
        )?;
        loop {
            let line = self.recv()?;
            match judge(&mut self.exchange, &line, Instant::now())? {
                Next::Reply(reply) => return Ok(reply),
                Next::ReadOn => {}
                Next::Answer(answer) => {
                    write(&mut self.writer, self.process.as_ref(), &answer)?;
                }
            }
        }
    }

    fn finish<T>(&mut self, result: Result<T, WorkerError>) -> Result<T, WorkerError> {
        self.exchange.finish(result).inspect_err(|error| {
            tracing::warn!(target: "mosaic::worker", worker = %self.exchange.name(), %error, "request failed");
        })
    }

    fn recv(&mut self) -> Result<Vec<u8>, WorkerError> {
        loop {
            let now = Instant::now();
            if !self.exchange.has_exited()
                && self
                    .process
                    .as_ref()
                    .is_some_and(|p| p.try_exit().is_some())
            {
                self.exchange.process_exited(now);
            }
            let (wait, expiry) = self.exchange.wait(now);
            match self.incoming.recv_timeout(wait) {
                Ok(Incoming::Line(line)) => return Ok(line),
                Ok(Incoming::Failed(e)) => return Err(e),
                Ok(Incoming::Exited) => {}
                Ok(Incoming::Eof) | Err(RecvTimeoutError::Disconnected) => {
                    let exit = self.process.as_ref().and_then(|p| p.wait_exit(CLOSE_WAIT));
                    return Err(self.exchange.closed(exit.map(|s| s.to_string())));
                }
                Err(RecvTimeoutError::Timeout) => {
                    let exit = self.process.as_ref().and_then(WorkerProcess::describe_exit);
                    return Err(self.exchange.expired(expiry, exit));
                }
            }
        }
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
        let polite = match self.exchange.mode() {
            Mode::Native { .. } => self
                .request(|id| Message::Stop(Ack { id }), grace)
                .map(drop),
            Mode::Mosaic { .. } => self
                .mosaic_request(&mosaic::Command::Stop, "stopped", grace)
                .map(drop),
        };
        if let Err(e) = polite {
            tracing::debug!(target: "mosaic::worker", worker = %self.exchange.name(), "no clean stop: {e}");
        }
        if let Some(socket) = &self.socket {
            let _ = socket.shutdown();
        }
        let process = self.process.as_mut()?;
        process.finish(grace).map(|s| s.to_string())
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.close();
    }
}

/// Writes `line` to the worker; a failure names the process's exit status when it has
/// exited.
fn write(
    writer: &mut dyn Write,
    process: Option<&WorkerProcess>,
    line: &[u8],
) -> Result<(), WorkerError> {
    let result = writer.write_all(line).and_then(|()| writer.flush());
    result.map_err(|e| {
        let exit = process.and_then(|p| p.wait_exit(WRITE_WAIT));
        write_failed(&e, exit.map(|s| s.to_string()))
    })
}

fn read_frames(reader: impl Read, max_frame: usize, tx: SyncSender<Incoming>) {
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
