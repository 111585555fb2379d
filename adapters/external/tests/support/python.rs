//! The Python that the external-worker tests run: the project's cached venv with gymnasium,
//! minigrid, pettingzoo, chess and mpe2, made by `scripts/setup/python-envs.sh` (idempotent,
//! cached, locked). The script prints `KEY=VALUE` lines; `MOSAIC_PY_ENVS` is the venv's
//! interpreter. Setting `MOSAIC_PY_ENVS` in the environment skips the script. A missing or
//! failing setup fails the tests: they never pass without Python.

use std::path::{Path, PathBuf};
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

/// The repository root.
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .find(|dir| dir.join("adapters/external/python").is_dir())
        .unwrap_or(here)
        .to_path_buf()
}

/// Sets up (once per test process) and returns the Python environment.
pub fn python_env() -> &'static PythonEnv {
    static ENV: OnceLock<PythonEnv> = OnceLock::new();
    ENV.get_or_init(|| {
        let root = repo_root();
        let python = match std::env::var("MOSAIC_PY_ENVS") {
            Ok(python) if !python.is_empty() => python,
            _ => from_setup_script(&root),
        };
        let env = PythonEnv {
            python,
            workers_dir: root.join("adapters/external/tests/workers"),
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

fn from_setup_script(root: &Path) -> String {
    let script = root.join("scripts").join("setup").join("python-envs.sh");
    assert!(
        script.is_file(),
        "{} is missing: it creates the Python venv these tests need (or set MOSAIC_PY_ENVS)",
        script.display()
    );
    let output = Command::new("bash")
        .arg(&script)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        output.status.success(),
        "{} failed:\n{}",
        script.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("MOSAIC_PY_ENVS="))
        .map(|python| python.trim().trim_matches('"').to_owned())
        .unwrap_or_else(|| panic!("{} printed no MOSAIC_PY_ENVS=<python>", script.display()))
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
