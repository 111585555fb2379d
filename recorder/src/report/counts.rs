//! Count tables: episode metrics that are objects of numbers, such as the coordination
//! world's `achievements` (per achievement, how many agents earned it). Each entry gets
//! two figures with stratified bootstrap intervals: the share of episodes in which it is
//! above zero (ALEM's per-achievement success rate) and its mean, an entry missing from an
//! episode's object counting as zero there.

use super::format::fmt_ci;
use crate::stats::{MeanCi, bootstrap_mean};
use mosaic_core::record::EpisodeRecord;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One entry of a count table.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CountRow {
    /// Share (0–1) of the episodes in which the entry is above zero.
    pub share: MeanCi,
    /// Mean of the entry over those episodes (zero where missing).
    pub mean: MeanCi,
}

/// Per metric, per entry, its row.
pub type CountTables = BTreeMap<String, BTreeMap<String, CountRow>>;

/// One object-valued metric as gathered: the seed of each episode that has it, and per
/// entry the (episode, value) pairs where the entry is present.
#[derive(Default)]
struct Gathered {
    seeds: Vec<u64>,
    columns: BTreeMap<String, Vec<(usize, f64)>>,
}

/// Per object-valued metric, per entry, its row; from the episodes whose metric is an
/// object (an episode without the metric does not count for it).
pub(super) fn count_tables<'a>(
    episodes: impl IntoIterator<Item = &'a EpisodeRecord>,
) -> CountTables {
    let mut tables: BTreeMap<String, Gathered> = BTreeMap::new();
    for episode in episodes {
        for (name, value) in &episode.metrics {
            let Some(object) = value.as_object() else {
                continue;
            };
            let entries: Vec<(&String, f64)> = object
                .iter()
                .filter_map(|(key, v)| Some((key, v.as_f64()?)))
                .collect();
            // An object holding anything but numbers is not a count table.
            if entries.len() != object.len() {
                continue;
            }
            let gathered = tables.entry(name.clone()).or_default();
            let row = gathered.seeds.len();
            gathered.seeds.push(episode.seed);
            for (key, v) in entries {
                gathered
                    .columns
                    .entry(key.clone())
                    .or_default()
                    .push((row, v));
            }
        }
    }
    tables
        .into_iter()
        .map(|(name, Gathered { seeds, columns })| {
            let rows = columns
                .into_iter()
                .filter_map(|(key, present)| {
                    let mut values: Vec<(u64, f64)> = seeds.iter().map(|s| (*s, 0.0)).collect();
                    for (row, v) in present {
                        values[row].1 = v;
                    }
                    let shares: Vec<(u64, f64)> = values
                        .iter()
                        .map(|(s, v)| (*s, f64::from(u8::from(*v > 0.0))))
                        .collect();
                    let row = CountRow {
                        share: bootstrap_mean(&shares)?,
                        mean: bootstrap_mean(&values)?,
                    };
                    Some((key, row))
                })
                .collect();
            (name, rows)
        })
        .collect()
}

/// An operator's count tables in Markdown, one table per metric.
pub(super) fn count_tables_markdown(tables: &CountTables) -> String {
    let mut out = String::new();
    for (name, rows) in tables {
        let _ = write!(
            out,
            "\n| {name} | episodes with it, % [95% CI] | mean [95% CI] |\n|---|---|---|\n"
        );
        for (key, row) in rows {
            let share = MeanCi {
                mean: 100.0 * row.share.mean,
                low: 100.0 * row.share.low,
                high: 100.0 * row.share.high,
                n: row.share.n,
            };
            let _ = writeln!(
                out,
                "| {key} | {} | {} |",
                fmt_ci(Some(share)),
                fmt_ci(Some(row.mean))
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn episode(seed: u64, achievements: serde_json::Value) -> EpisodeRecord {
        let mut metrics = serde_json::Map::new();
        metrics.insert("achievements".into(), achievements);
        metrics.insert("base_pct".into(), json!(4.0));
        EpisodeRecord {
            schema: String::new(),
            run_id: "r".into(),
            operator_id: "op".into(),
            episode_id: format!("r/op/{seed}"),
            episode_index: seed as u32,
            seed,
            env: "coord".into(),
            steps: 1,
            terminated: true,
            truncated: false,
            agents: Vec::new(),
            metrics,
            error: None,
            restarts: Vec::new(),
            duration_ms: 1,
            steps_per_s: 1.0,
            timestamp: 0,
        }
    }

    #[test]
    fn missing_entries_count_as_zero_and_shares_are_per_episode() {
        let episodes = [
            episode(1, json!({"collect_wood": 2, "place_table": 1})),
            episode(2, json!({"collect_wood": 1})),
            episode(3, json!({})),
            episode(4, json!({"collect_wood": 3})),
        ];
        let tables = count_tables(&episodes);
        assert_eq!(tables.len(), 1, "only the object-valued metric: {tables:?}");
        let rows = &tables["achievements"];
        let wood = rows["collect_wood"];
        assert_eq!((wood.share.mean, wood.share.n), (0.75, 4));
        assert_eq!(wood.mean.mean, 1.5);
        assert!(wood.mean.low < 1.5 && 1.5 < wood.mean.high);
        let table = rows["place_table"];
        assert_eq!((table.share.mean, table.mean.mean), (0.25, 0.25));
        let text = count_tables_markdown(&tables);
        assert!(
            text.contains("| achievements | episodes with it, %"),
            "{text}"
        );
        assert!(text.contains("| collect_wood | 75.000 ["), "{text}");
    }

    #[test]
    fn objects_of_other_values_are_not_tables() {
        let episodes = [episode(1, json!({"collect_wood": "yes"}))];
        assert!(count_tables(&episodes).is_empty());
    }
}
