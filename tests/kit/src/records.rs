//! Records compared without their volatile fields (ids, times, latencies): two runs of one
//! experiment give equal lists, however they were parallelised, split, killed or resumed.

use mosaic_core::record::strip_volatile;
use std::path::Path;

/// Records as sorted JSON lines without their volatile fields.
pub fn stripped<T: serde::Serialize>(records: &[T]) -> Vec<String> {
    let values = records.iter().map(|record| {
        serde_json::to_value(record).unwrap_or_else(|e| panic!("a record that is not JSON: {e}"))
    });
    sorted_without_volatile(values)
}

/// The lines of a run directory's `steps.jsonl` and `episodes.jsonl`, each as
/// [`sorted_lines`].
pub fn sorted_records(run: &Path) -> (Vec<String>, Vec<String>) {
    (
        sorted_lines(&run.join("steps.jsonl")),
        sorted_lines(&run.join("episodes.jsonl")),
    )
}

/// The records of a JSON-lines file, stripped and sorted like [`stripped`].
pub fn sorted_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    sorted_without_volatile(text.lines().map(|line| {
        serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{}: a line that is not JSON: {e}", path.display()))
    }))
}

fn sorted_without_volatile(values: impl Iterator<Item = serde_json::Value>) -> Vec<String> {
    let mut lines: Vec<String> = values
        .map(|mut value| {
            strip_volatile(&mut value);
            value.to_string()
        })
        .collect();
    lines.sort();
    lines
}
