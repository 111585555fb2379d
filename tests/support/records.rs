//! Comparing the records of two runs, with the real binary's run directories.

use mosaic_core::record::strip_volatile;
use std::path::Path;

/// The lines of a run's `steps.jsonl` and `episodes.jsonl` without their volatile fields,
/// sorted: equal for two runs of one experiment, however they were split and merged.
pub fn sorted_records(run: &Path) -> (Vec<String>, Vec<String>) {
    let read = |file: &str| {
        let mut lines: Vec<String> = std::fs::read_to_string(run.join(file))
            .unwrap_or_else(|e| panic!("{}: {e}", run.join(file).display()))
            .lines()
            .map(|line| {
                let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
                strip_volatile(&mut value);
                value.to_string()
            })
            .collect();
        lines.sort();
        lines
    };
    (read("steps.jsonl"), read("episodes.jsonl"))
}
