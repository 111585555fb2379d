//! Training throughput of a recurrent (GRU) policy against a feed-forward one on the same
//! run: IPPO for soccer-2v2's green team against random blues, 16 environments × 128 steps
//! per update, 8 updates, two worker threads (the `rl` bench's training run).
//!
//! `cargo bench -p mosaic-rl --bench recurrent` trains both, interleaved, and prints each
//! one's environment steps/s, its milliseconds collecting and updating, and their ratio;
//! `-- mlp` or `-- gru` trains only that one (to read its CPU time, e.g. under
//! `/usr/bin/time`).

mod soccer_training;

use mosaic_rl::Architecture;

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
        let run = soccer_training::train(architecture, 2);
        println!(
            "recurrent: training soccer-2v2 (IPPO, {label}): {:.0} environment steps/s; {} ms collecting, {} ms updating",
            run.steps_per_s, run.collect_ms, run.update_ms
        );
        rates.push(run.steps_per_s);
    }
    if let [feed_forward, recurrent] = rates[..] {
        println!(
            "recurrent: the GRU run trains at {:.2}× the feed-forward run's steps/s",
            recurrent / feed_forward
        );
    }
}
