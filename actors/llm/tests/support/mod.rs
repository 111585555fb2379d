//! Shared by the LLM tests and benchmark: the local model (through the project's set-up
//! script), a fault-injecting HTTP proxy and a log collector.

#![allow(dead_code)]

pub mod proxy;

use mosaic_llm::server::{LlmServerConfig, MODEL_ENV, SERVER_ENV};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// The local model server's binary and model: from `MOSAIC_LLAMA_SERVER` and
/// `MOSAIC_LLM_MODEL` when both are set, else from `scripts/setup/llm-server.sh` (cached;
/// the first run builds llama-server, several minutes); threads from
/// `MOSAIC_LLAMA_THREADS` when set. Panics with the reason when neither works: these tests
/// never skip.
pub fn server_config() -> LlmServerConfig {
    static CONFIG: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    let (binary, model) = CONFIG.get_or_init(|| {
        if let (Some(binary), Some(model)) = (std::env::var_os(SERVER_ENV), std::env::var_os(MODEL_ENV)) {
            return (binary.into(), model.into());
        }
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/setup/llm-server.sh");
        assert!(
            script.is_file(),
            "{} is missing and {SERVER_ENV}/{MODEL_ENV} are not set: the local model cannot be set up",
            script.display()
        );
        let output = std::process::Command::new("bash")
            .arg(&script)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        assert!(
            output.status.success(),
            "{} failed:\n{}",
            script.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        let value = |name: &str| {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{name}=")))
                .map(PathBuf::from)
                .unwrap_or_else(|| panic!("{} printed no {name}=...:\n{stdout}", script.display()))
        };
        (value(SERVER_ENV), value(MODEL_ENV))
    });
    let mut config = LlmServerConfig::new(binary, model);
    config.threads = LlmServerConfig::threads_from_env().unwrap_or_else(|e| panic!("{e}"));
    config
}

/// One real-server test at a time: two cores do not serve several model servers well.
pub fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Collects log output: a `tracing_subscriber` writer.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Everything written so far.
    pub fn text(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
