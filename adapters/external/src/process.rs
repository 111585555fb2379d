//! Worker processes: spawned in their own process group, stderr routed to the log, stopped
//! as a group (SIGTERM, then SIGKILL after a grace period), listed in the run's process
//! list ([`crate::ledger`]) while the group may live.

use crate::ledger::{self, Registration, kill_group};
use crate::{WorkerError, embedded};
use mosaic_protocols::codec::{Decoded, LineDecoder};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::collections::VecDeque;
use std::io::Read;
use std::path::PathBuf;
use std::process::{ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How long a stopped worker gets between SIGTERM and SIGKILL by default.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);

/// How long a SIGKILLed worker may take to be reaped before its status is given up on.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// How long a worker asked to stop may take to exit by itself before it is signalled.
const SETTLE: Duration = Duration::from_millis(200);

/// Longest stderr line logged whole; longer ones are cut.
const MAX_LOG_LINE: usize = 64 * 1024;

/// What to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerCommand {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
}

impl WorkerCommand {
    /// A command from an argument vector (`["python3", "-m", "mosaic_worker", ...]`).
    pub fn from_argv(argv: &[String]) -> Result<Self, WorkerError> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| WorkerError::Config("`command` is empty".into()))?;
        Ok(Self {
            program: program.clone(),
            args: args.to_vec(),
            env: Vec::new(),
            cwd: None,
        })
    }

    /// The command line, for logs and errors.
    pub fn display(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| {
                if a.contains(' ') {
                    format!("'{a}'")
                } else {
                    a.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A [`Command`] with piped stdio, in a new process group, with `MOSAIC_PROTOCOL` set.
    /// A Python command also gets the embedded `mosaic_worker` package on its `PYTHONPATH`
    /// (see [`crate::embedded`]); failing to install it is an error naming the directory.
    pub fn to_command(&self) -> Result<Command, WorkerError> {
        use std::os::unix::process::CommandExt as _;
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("MOSAIC_PROTOCOL", mosaic_protocols::PROTOCOL)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if embedded::runs_python(&self.program, &self.args) {
            let own = self
                .env
                .iter()
                .rev()
                .find(|(k, _)| k == "PYTHONPATH")
                .map(|(_, v)| v.into())
                .or_else(|| std::env::var_os("PYTHONPATH"));
            command.env(
                "PYTHONPATH",
                embedded::python_path(own, &embedded::install()?)?,
            );
        }
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        Ok(command)
    }
}

/// Worker stops running off their caller's thread (see [`stop_in_background`]).
static BACKGROUND_STOPS: Mutex<Vec<std::thread::JoinHandle<()>>> = Mutex::new(Vec::new());

/// Runs `stop` (a worker's stop, bounded by its grace period) on a thread of its own, kept
/// so that [`wait_for_background_stops`] can wait for it. Only the asynchronous link
/// (feature `tokio`) stops workers this way.
#[cfg(feature = "tokio")]
pub(crate) fn stop_in_background(stop: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    let handle = std::thread::Builder::new()
        .name("worker-stop".into())
        .spawn(stop)?;
    let mut stops = BACKGROUND_STOPS
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    stops.retain(|stop| !stop.is_finished());
    stops.push(handle);
    Ok(())
}

/// Waits until the workers being stopped in the background are stopped, their process
/// groups with them: a process about to exit calls it, or what those workers started would
/// outlive it.
pub fn wait_for_background_stops() {
    let stops = std::mem::take(
        &mut *BACKGROUND_STOPS
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    );
    for stop in stops {
        let _ = stop.join();
    }
}

/// A running worker process. Dropping it stops the whole process group.
///
/// A thread waits for the process from the start, so its exit is known the moment it
/// happens (not when its pipes close: a helper process it started may hold them open), and
/// listeners registered with [`WorkerProcess::on_exit`] are told at once.
#[derive(Debug)]
pub struct WorkerProcess {
    pid: u32,
    name: String,
    exit: Arc<ExitWatch>,
    stderr: Arc<StderrTail>,
    /// Dropped after the group was ended (`Drop` runs before the fields are dropped).
    _listed: Registration,
}

/// Something to run once when the process exits.
type ExitListener = Box<dyn FnOnce(ExitStatus) + Send>;

/// The process's exit, published by the thread that waits for it.
#[derive(Default)]
struct ExitWatch {
    state: Mutex<ExitState>,
    exited: Condvar,
}

#[derive(Default)]
struct ExitState {
    status: Option<ExitStatus>,
    listeners: Vec<ExitListener>,
}

impl std::fmt::Debug for ExitWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExitWatch")
            .field("status", &self.lock().status)
            .finish_non_exhaustive()
    }
}

impl ExitWatch {
    fn lock(&self) -> MutexGuard<'_, ExitState> {
        // The state stays consistent even if a listener panicked while it was held.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn publish(&self, status: ExitStatus) {
        let listeners = {
            let mut state = self.lock();
            state.status = Some(status);
            std::mem::take(&mut state.listeners)
        };
        self.exited.notify_all();
        for listener in listeners {
            listener(status);
        }
    }
}

/// The last lines the process wrote to stderr, kept for errors about a worker that failed
/// before it could say why on the protocol (a Python traceback, a missing module).
#[derive(Debug, Default)]
struct StderrTail {
    state: Mutex<TailState>,
    ended: Condvar,
}

#[derive(Debug, Default)]
struct TailState {
    lines: VecDeque<String>,
    ended: bool,
}

impl StderrTail {
    /// Lines kept, and characters kept of each.
    const LINES: usize = 20;
    const CHARS: usize = 300;

    fn lock(&self) -> MutexGuard<'_, TailState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, line: &[u8]) {
        let line: String = String::from_utf8_lossy(line)
            .chars()
            .take(Self::CHARS)
            .collect();
        let mut state = self.lock();
        if state.lines.len() == Self::LINES {
            state.lines.pop_front();
        }
        state.lines.push_back(line);
    }

    fn end(&self) {
        self.lock().ended = true;
        self.ended.notify_all();
    }
}

impl WorkerProcess {
    /// Starts `command`; its stderr lines are logged (target `mosaic::worker`) with the
    /// worker's `name`.
    pub fn spawn(
        command: &WorkerCommand,
        name: &str,
    ) -> Result<(Self, ChildStdin, ChildStdout), WorkerError> {
        let spawn_error = |error: String| WorkerError::Spawn {
            command: command.display(),
            error,
        };
        let tag = ledger::new_tag();
        let mut child = command
            .to_command()?
            .env(ledger::TAG_ENV, &tag)
            .spawn()
            .map_err(|e| spawn_error(e.to_string()))?;
        let pid = child.id();
        let listed = ledger::register(pid, &tag, &command.display());
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            kill_group(pid);
            return Err(spawn_error("stdio pipes missing".into()));
        };
        let exit = Arc::new(ExitWatch::default());
        let watch = exit.clone();
        let waiter = std::thread::Builder::new()
            .name(format!("exit:{name}"))
            .spawn(move || match child.wait() {
                Ok(status) => watch.publish(status),
                Err(e) => {
                    tracing::warn!(target: "mosaic::worker", pid, "cannot wait for the worker: {e}")
                }
            });
        if let Err(e) = waiter {
            kill_group(pid);
            return Err(spawn_error(format!("cannot start the exit watcher: {e}")));
        }
        let log_name = name.to_owned();
        let tail = Arc::new(StderrTail::default());
        let kept = tail.clone();
        let logger = std::thread::Builder::new()
            .name(format!("stderr:{name}"))
            .spawn(move || log_lines(stderr, &log_name, &kept));
        if let Err(e) = logger {
            kill_group(pid);
            return Err(spawn_error(format!("cannot start the stderr logger: {e}")));
        }
        tracing::info!(target: "mosaic::worker", worker = name, pid, command = %command.display(), "worker started");
        Ok((
            Self {
                pid,
                name: name.to_owned(),
                exit,
                stderr: tail,
                _listed: listed,
            },
            stdin,
            stdout,
        ))
    }

    /// The process id (also the process group id).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The exit status, if the process has exited.
    pub fn try_exit(&self) -> Option<ExitStatus> {
        self.exit.lock().status
    }

    /// Runs `listener` once, as soon as the process exits (at once if it already has), on
    /// the thread that saw the exit: it must be quick and must not block.
    pub fn on_exit(&self, listener: impl FnOnce(ExitStatus) + Send + 'static) {
        let mut state = self.exit.lock();
        match state.status {
            Some(status) => {
                drop(state);
                listener(status);
            }
            None => state.listeners.push(Box::new(listener)),
        }
    }

    /// Waits up to `timeout` for the process to exit by itself.
    pub fn wait_exit(&self, timeout: Duration) -> Option<ExitStatus> {
        let state = self.exit.lock();
        let (state, _) = self
            .exit
            .exited
            .wait_timeout_while(state, timeout, |state| state.status.is_none())
            .unwrap_or_else(PoisonError::into_inner);
        state.status
    }

    /// Stops the whole process group: SIGTERM, then SIGKILL after `grace`. Returns the
    /// exit status (also logged).
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        let group = Pid::from_raw(self.pid as i32);
        if self.try_exit().is_none() {
            let _ = killpg(group, Signal::SIGTERM);
            if self.wait_exit(grace).is_none() {
                tracing::warn!(target: "mosaic::worker", worker = %self.name, "no exit {} ms after SIGTERM: SIGKILL", grace.as_millis());
                let _ = killpg(group, Signal::SIGKILL);
                self.wait_exit(KILL_WAIT);
            }
        }
        // Children the worker left behind in its group go too.
        let _ = killpg(group, Signal::SIGKILL);
        let exit = self.try_exit();
        match exit {
            Some(status) => {
                tracing::info!(target: "mosaic::worker", worker = %self.name, %status, "worker exited")
            }
            None => {
                tracing::warn!(target: "mosaic::worker", worker = %self.name, "worker exit status unknown")
            }
        }
        exit
    }

    /// Stops a worker that was asked to stop (or whose input was closed): a moment to exit
    /// by itself, then [`WorkerProcess::stop`].
    pub fn finish(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.wait_exit(SETTLE);
        self.stop(grace)
    }

    /// Kills the whole process group at once (SIGKILL, no grace): for a worker already
    /// declared dead or hung. Returns the exit status.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        kill_group(self.pid);
        self.wait_exit(KILL_WAIT)
    }

    /// The last lines (at most 20, each cut to 300 characters) the process wrote to stderr,
    /// waiting up to `wait` for the end of its stderr (all of it, from a process that exited).
    pub fn stderr_tail(&self, wait: Duration) -> Vec<String> {
        let state = self.stderr.lock();
        let (state, _) = self
            .stderr
            .ended
            .wait_timeout_while(state, wait, |state| !state.ended)
            .unwrap_or_else(PoisonError::into_inner);
        state.lines.iter().cloned().collect()
    }

    /// The exit status, described, once the process has exited.
    pub fn describe_exit(&self) -> Option<String> {
        self.try_exit().map(|s| s.to_string())
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        if self.try_exit().is_none() {
            self.stop(DEFAULT_GRACE);
        } else {
            // A worker that exited may have left processes it started in its group.
            kill_group(self.pid);
        }
    }
}

/// Logs the lines of `stderr` and keeps the last ones in `tail`.
fn log_lines(mut stderr: impl Read, name: &str, tail: &StderrTail) {
    let mut decoder = LineDecoder::new(MAX_LOG_LINE);
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match stderr.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut rest = &buf[..n];
        while !rest.is_empty() {
            let (used, decoded) = decoder.feed(rest);
            rest = &rest[used..];
            match decoded {
                Decoded::Pending => {}
                Decoded::Line(line) => {
                    tracing::info!(target: "mosaic::worker", worker = name, "{}", String::from_utf8_lossy(&line));
                    tail.push(&line);
                }
                Decoded::TooLong => {
                    tracing::info!(target: "mosaic::worker", worker = name, "(a log line longer than {MAX_LOG_LINE} bytes was skipped)")
                }
            }
        }
    }
    let unfinished = decoder.take_partial();
    if !unfinished.is_empty() {
        tracing::info!(target: "mosaic::worker", worker = name, "{} (no final newline)", String::from_utf8_lossy(&unfinished));
        tail.push(&unfinished);
    }
    tail.end();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::live_members;
    use std::time::Instant;

    fn sh(script: &str) -> WorkerCommand {
        WorkerCommand::from_argv(&["sh".into(), "-c".into(), script.into()]).unwrap()
    }

    #[test]
    fn stop_kills_the_whole_group_after_the_grace_period() {
        // The shell ignores SIGTERM and leaves a grandchild: both must die.
        let (mut worker, _stdin, stdout) = WorkerProcess::spawn(
            &sh("trap '' TERM; echo ready; sleep 30 & sleep 30; wait"),
            "t",
        )
        .unwrap();
        let mut ready = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut ready).unwrap();
        assert_eq!(ready, "ready\n");
        let started = Instant::now();
        let status = worker.stop(Duration::from_millis(200)).unwrap();
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(!status.success());
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            live_members(worker.pid()),
            Vec::<u32>::new(),
            "process group still alive"
        );
    }

    #[test]
    fn a_cooperative_worker_exits_on_sigterm() {
        let (mut worker, _stdin, _stdout) = WorkerProcess::spawn(&sh("sleep 30"), "t").unwrap();
        let started = Instant::now();
        worker.stop(Duration::from_secs(5)).unwrap();
        assert!(started.elapsed() < Duration::from_secs(4));
        assert!(worker.describe_exit().unwrap().contains("signal"));
    }

    #[test]
    fn spawn_failures_name_the_command() {
        let cmd = WorkerCommand::from_argv(&["/no/such/worker".into(), "a b".into()]).unwrap();
        let err = WorkerProcess::spawn(&cmd, "t").unwrap_err().to_string();
        assert!(err.contains("/no/such/worker 'a b'"), "{err}");
        assert!(WorkerCommand::from_argv(&[]).is_err());
    }

    #[test]
    fn what_an_exited_worker_left_behind_goes_with_it() {
        let (worker, _stdin, _stdout) =
            WorkerProcess::spawn(&sh("sleep 30 & exit 0"), "t").unwrap();
        assert_eq!(
            worker
                .wait_exit(Duration::from_secs(5))
                .and_then(|s| s.code()),
            Some(0)
        );
        let group = worker.pid();
        assert_eq!(live_members(group).len(), 1, "the sleep runs on");
        drop(worker);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(live_members(group), Vec::<u32>::new(), "the sleep is gone");
    }

    #[test]
    fn the_last_stderr_lines_are_kept() {
        let (worker, _stdin, _stdout) = WorkerProcess::spawn(
            &sh("for i in $(seq 1 30); do echo line $i >&2; done; printf 'cut' >&2; exit 1"),
            "t",
        )
        .unwrap();
        worker.wait_exit(Duration::from_secs(5));
        let tail = worker.stderr_tail(Duration::from_secs(5));
        assert_eq!(tail.len(), 20, "{tail:?}");
        assert_eq!(tail[0], "line 12");
        assert_eq!(tail[18], "line 30");
        assert_eq!(tail[19], "cut", "the unfinished last line too");
    }

    #[test]
    fn exit_status_is_reported() {
        let (worker, _stdin, _stdout) = WorkerProcess::spawn(&sh("exit 7"), "t").unwrap();
        let status = worker.wait_exit(Duration::from_secs(5)).unwrap();
        assert_eq!(status.code(), Some(7));
    }

    #[test]
    fn exit_listeners_hear_of_the_exit_though_a_child_holds_the_output() {
        // The worker exits when told; the `sleep` it leaves keeps its stdout open.
        let (mut worker, mut stdin, _stdout) =
            WorkerProcess::spawn(&sh("sleep 30 & read line; exit 3"), "t").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        worker.on_exit(move |status| tx.send((status, Instant::now())).unwrap());
        assert!(worker.try_exit().is_none());
        std::io::Write::write_all(&mut stdin, b"go\n").unwrap();
        let asked = Instant::now();
        let (status, heard) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(status.code(), Some(3));
        assert!(
            heard - asked < Duration::from_secs(2),
            "{:?}",
            heard - asked
        );
        assert_eq!(worker.try_exit().and_then(|s| s.code()), Some(3));
        // Registered after the exit: told at once.
        let (tx, rx) = std::sync::mpsc::channel();
        worker.on_exit(move |status| tx.send(status).unwrap());
        assert_eq!(rx.try_recv().unwrap().code(), Some(3));
        worker.stop(Duration::from_millis(100));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            live_members(worker.pid()),
            Vec::<u32>::new(),
            "the sleep is gone too"
        );
    }
}
