//! Shared by the LLM tests and benchmark: the local model (through the project's set-up
//! script), a fault-injecting HTTP proxy and a log collector.

#![allow(dead_code)]

pub(crate) mod proxy;

use mosaic_llm::server::{LlmServerConfig, MODEL_ENV, SERVER_ENV};
use std::sync::{Arc, Mutex, MutexGuard};

/// The local model server's binary and model (see `scripts/setup/llm-server.sh`; the first
/// run builds llama-server, several minutes); threads from `MOSAIC_LLAMA_THREADS` when
/// set. Panics with the reason when neither works: these tests never skip.
pub(crate) fn server_config() -> LlmServerConfig {
    let tools = mosaic_test_kit::setup::variables("llm-server.sh", &[SERVER_ENV, MODEL_ENV]);
    let mut config = LlmServerConfig::new(&tools[SERVER_ENV], &tools[MODEL_ENV]);
    config.threads = LlmServerConfig::threads_from_env().unwrap_or_else(|e| panic!("{e}"));
    config
}

/// One real-server test at a time: two cores do not serve several model servers well.
pub(crate) fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Collects log output: a `tracing_subscriber` writer.
#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Everything written so far.
    pub(crate) fn text(&self) -> String {
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
