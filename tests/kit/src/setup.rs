//! The tools the scripts in `scripts/setup/` install. Each script is idempotent and cached,
//! and prints `NAME=VALUE` lines; a test takes the values from its environment when every
//! name is set there (as `scripts/test` does), else runs the script once per process. A
//! missing script or a failing set-up fails the test: tests never pass without their tools.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

/// The repository root (the directory holding `scripts/setup`).
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .find(|dir| dir.join("scripts/setup").is_dir())
        .unwrap_or(here)
        .to_path_buf()
}

/// The values of `names` printed by `scripts/setup/<script>` (or set in the environment).
///
/// ```no_run
/// let vars = mosaic_test_kit::setup::variables("python-envs.sh", &["MOSAIC_PY_ENVS"]);
/// let python = &vars["MOSAIC_PY_ENVS"];
/// ```
pub fn variables(script: &str, names: &[&str]) -> BTreeMap<String, String> {
    let from_env: BTreeMap<String, String> = names
        .iter()
        .filter_map(|name| {
            let value = std::env::var(name).ok().filter(|v| !v.is_empty())?;
            Some((name.to_string(), value))
        })
        .collect();
    if from_env.len() == names.len() {
        return from_env;
    }
    let printed = printed_by(script);
    names
        .iter()
        .map(|name| {
            let value = printed.get(*name).unwrap_or_else(|| {
                panic!("scripts/setup/{script} printed no {name}=... (and {name} is not set)")
            });
            (name.to_string(), value.clone())
        })
        .collect()
}

/// One value of [`variables`].
pub fn variable(script: &str, name: &str) -> String {
    variables(script, &[name]).remove(name).unwrap_or_default()
}

/// Everything `script` printed, running it at most once per process.
fn printed_by(script: &str) -> BTreeMap<String, String> {
    static RUNS: OnceLock<Mutex<BTreeMap<String, BTreeMap<String, String>>>> = OnceLock::new();
    let runs = RUNS.get_or_init(Mutex::default);
    // Held while the script runs: a second test waits for the first set-up, never races it.
    let mut runs = runs.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    runs.entry(script.to_owned())
        .or_insert_with(|| run(script))
        .clone()
}

fn run(script: &str) -> BTreeMap<String, String> {
    let path = repo_root().join("scripts/setup").join(script);
    assert!(
        path.is_file(),
        "{} is missing: it installs what this test needs",
        path.display()
    );
    let output = Command::new("bash")
        .arg(&path)
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", path.display()));
    assert!(
        output.status.success(),
        "{} failed ({}); its messages are above",
        path.display(),
        output.status
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.to_owned(), value.trim().trim_matches('"').to_owned()))
        .collect()
}
