//! The training run the `rl` and `recurrent` benches time: IPPO for soccer-2v2's green
//! team against random blues, 16 environments × 128 steps per update, 8 updates.

use mosaic_core::SlotSpec;
use mosaic_rl::Architecture;
use mosaic_rl::train::{TrainOptions, Trainer};

/// What one run measured.
pub(crate) struct Timing {
    /// Environment steps per second, collection and updates.
    pub(crate) steps_per_s: f64,
    /// Milliseconds collecting, over all updates.
    pub(crate) collect_ms: u64,
    /// Milliseconds updating, over all updates.
    pub(crate) update_ms: u64,
}

/// Trains `architecture` once on `threads` threads.
pub(crate) fn train(architecture: Architecture, threads: usize) -> Timing {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let outcome = Trainer::builder("bench", "soccer-2v2")
        .learn("green")
        .agent("*", SlotSpec::kind("random"))
        .total_steps(16 * 128 * 8)
        .parallel(16, threads)
        .checkpoint_every(8)
        .architecture(architecture)
        .build()
        .expect("a valid training spec")
        .run(&TrainOptions {
            dir: dir.path().join("run"),
            run_id: "bench".into(),
            versions: Default::default(),
            progress: false,
        })
        .expect("training runs");
    let updates = std::fs::read_to_string(outcome.dir.join("updates.jsonl"))
        .expect("the run logs its updates");
    let (mut collect_ms, mut update_ms) = (0, 0);
    for line in updates.lines() {
        let line: serde_json::Value = serde_json::from_str(line).expect("JSON lines");
        collect_ms += line["collect_ms"].as_u64().unwrap_or(0);
        update_ms += line["update_ms"].as_u64().unwrap_or(0);
    }
    Timing {
        steps_per_s: outcome.steps_per_s,
        collect_ms,
        update_ms,
    }
}
