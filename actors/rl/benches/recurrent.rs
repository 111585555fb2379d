//! Training throughput of a recurrent (GRU) policy against a feed-forward one on the same
//! run: IPPO for soccer-2v2's green team against random blues, 16 environments × 128 steps
//! per update, 8 updates, two worker threads (the `rl` bench's training run).
//!
//! `cargo bench -p mosaic-rl --bench recurrent` trains both, interleaved, and prints each
//! one's environment steps/s, its milliseconds collecting and updating, and their ratio;
//! `-- mlp` or `-- gru` trains only that one (to read its CPU time, e.g. under
//! `/usr/bin/time`).

use mosaic_core::SlotSpec;
use mosaic_rl::Architecture;
use mosaic_rl::train::{TrainOptions, Trainer};

/// Steps/s, milliseconds collecting and milliseconds updating of one training run.
fn train(architecture: Architecture) -> (f64, u64, u64) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let outcome = Trainer::builder("bench", "soccer-2v2")
        .learn("green")
        .agent("*", SlotSpec::kind("random"))
        .total_steps(16 * 128 * 8)
        .parallel(16, 2)
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
    (outcome.steps_per_s, collect_ms, update_ms)
}

fn main() {
    let networks = [
        ("mlp", "MLP 64-64", Architecture::default()),
        (
            "gru",
            "MLP 64 + GRU 64",
            Architecture::Mlp {
                hidden: vec![64],
                gru: Some(64),
            },
        ),
    ];
    // cargo passes `--bench`; any other argument picks one network.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let mut rates = Vec::new();
    for (key, label, architecture) in networks {
        if !only.is_empty() && !only.iter().any(|o| o == key) {
            continue;
        }
        let (rate, collect_ms, update_ms) = train(architecture);
        println!(
            "recurrent: training soccer-2v2 (IPPO, {label}): {rate:.0} environment steps/s; {collect_ms} ms collecting, {update_ms} ms updating"
        );
        rates.push(rate);
    }
    if let [feed_forward, recurrent] = rates[..] {
        println!(
            "recurrent: the GRU run trains at {:.2}× the feed-forward run's steps/s",
            recurrent / feed_forward
        );
    }
}
