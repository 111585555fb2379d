//! The Python that the external-worker tests run: the project's cached venv with gymnasium,
//! minigrid, pettingzoo, chess and mpe2, made by `scripts/setup/python-envs.sh`
//! (`MOSAIC_PY_ENVS` is the venv's interpreter; see [`crate::setup`]).

use crate::setup;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The interpreter and the test workers. `mosaic_worker` needs no `PYTHONPATH`: mosaic
/// puts the copy built into it on the path of the Python workers it starts.
#[derive(Debug)]
pub struct PythonEnv {
    /// The venv's `python`.
    pub python: String,
    /// The test workers (`adapters/external/tests/workers`).
    pub workers_dir: PathBuf,
}

/// Sets up (once per test process) and returns the Python environment, checked to hold
/// the environment packages.
pub fn python_env() -> &'static PythonEnv {
    static ENV: OnceLock<PythonEnv> = OnceLock::new();
    ENV.get_or_init(|| {
        let env = PythonEnv {
            python: setup::variable("python-envs.sh", "MOSAIC_PY_ENVS"),
            workers_dir: setup::repo_root().join("adapters/external/tests/workers"),
        };
        let probe = Command::new(&env.python)
            .args([
                "-c",
                "import gymnasium, minigrid, pettingzoo, chess, mpe2, numpy",
            ])
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", env.python));
        assert!(
            probe.status.success(),
            "{} lacks the environment packages: {}",
            env.python,
            String::from_utf8_lossy(&probe.stderr)
        );
        env
    })
}

impl PythonEnv {
    /// The argument vector running one of the test workers.
    pub fn worker(&self, script: &str, args: &[&str]) -> Vec<String> {
        let mut argv = vec![
            self.python.clone(),
            self.workers_dir.join(script).display().to_string(),
        ];
        argv.extend(args.iter().map(|a| a.to_string()));
        argv
    }

    /// The argument vector of `python -m mosaic_worker ARGS`.
    pub fn mosaic_worker(&self, args: &[&str]) -> Vec<String> {
        let mut argv = vec![self.python.clone(), "-m".into(), "mosaic_worker".into()];
        argv.extend(args.iter().map(|a| a.to_string()));
        argv
    }
}

/// A `mosaic_worker` listening on a free TCP port, started by hand as on another machine
/// (`python -m mosaic_worker ARGS --listen tcp://127.0.0.1:PORT`), with
/// `MOSAIC_WORKER_TOKEN` set to the token when one is given; its stderr goes to a log file
/// in the given directory. Killed when dropped.
#[derive(Debug)]
pub struct ListeningWorker {
    /// `tcp://127.0.0.1:PORT`.
    pub address: String,
    child: Child,
    log: PathBuf,
}

impl ListeningWorker {
    /// Starts `python -m mosaic_worker ARGS --listen ADDRESS`.
    pub fn start(args: &[&str], token: Option<&str>, dir: &Path) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|probe| probe.local_addr())
            .expect("a free port")
            .port();
        let address = format!("tcp://127.0.0.1:{port}");
        let mut args = args.to_vec();
        args.extend(["--listen", &address]);
        let argv = python_env().mosaic_worker(&args);
        let log = dir.join(format!("worker-{port}.log"));
        let mut command = Command::new(&argv[0]);
        command
            .args(&argv[1..])
            // Started by hand, not by mosaic: it needs the package on its path itself.
            .env(
                "PYTHONPATH",
                mosaic_external::embedded::install().expect("the embedded worker package"),
            )
            .env_remove("MOSAIC_WORKER_TOKEN")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("the worker's log file"));
        if let Some(token) = token {
            command.env("MOSAIC_WORKER_TOKEN", token);
        }
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {argv:?}: {e}"));
        ListeningWorker {
            address,
            child,
            log,
        }
    }

    /// Waits (up to 15 s) for the worker to exit; its status.
    pub fn wait(&mut self) -> Option<ExitStatus> {
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("the worker's status") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// What the worker logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for ListeningWorker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
