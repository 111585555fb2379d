//! The Python that the external-worker tests run: the project's cached venv with gymnasium,
//! minigrid, pettingzoo, chess and mpe2, made by `scripts/setup/python-envs.sh`
//! (`MOSAIC_PY_ENVS` is the venv's interpreter; see [`crate::setup`]).

use crate::setup;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

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
