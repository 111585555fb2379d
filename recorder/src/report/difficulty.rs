//! The per-difficulty table of several runs, shaped like ALEM's Table 1: one row per run
//! (a team or model configuration), one column per difficulty α, each cell Base%, Coord%
//! and Total% with 95% bootstrap intervals stratified over seeds.
//!
//! It reads the episode metrics a world reports for it: `alpha`, `base_pct`, `coord_pct`
//! and `total_pct` (the coordination world does, on the scale of its `scoring` setting).
//! Episodes without `alpha` are not in the table; every operator of a run counts towards
//! the run's row, grouped by the α its episodes report.

use super::{Format, csv_field, escape_controls};
use crate::stats::{MeanCi, bootstrap_mean};
use mosaic_core::record::EpisodeRecord;
use serde::Serialize;
use std::fmt::Write as _;

/// The table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DifficultyTable {
    /// The difficulties, ascending: one column each.
    pub alphas: Vec<f64>,
    /// One row per run.
    pub rows: Vec<DifficultyRow>,
}

/// One run's row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DifficultyRow {
    /// The run's label (its experiment's name, or its id).
    pub label: String,
    /// One cell per entry of [`DifficultyTable::alphas`]; `None` where the run has no
    /// episode at that difficulty.
    pub cells: Vec<Option<DifficultyCell>>,
}

/// The scores of one run at one difficulty.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DifficultyCell {
    /// Complete episodes averaged.
    pub episodes: usize,
    /// Base score, percent of its maximum.
    pub base_pct: Option<MeanCi>,
    /// Coordination score, percent of its maximum.
    pub coord_pct: Option<MeanCi>,
    /// Total score, percent of its maximum.
    pub total_pct: Option<MeanCi>,
}

/// The table of `runs` (label, complete episodes); `None` when no episode reports `alpha`.
pub fn build(runs: &[(String, Vec<&EpisodeRecord>)]) -> Option<DifficultyTable> {
    let metric = |episode: &EpisodeRecord, name: &str| {
        episode
            .metrics
            .get(name)
            .and_then(serde_json::Value::as_f64)
    };
    let mut alphas: Vec<f64> = runs
        .iter()
        .flat_map(|(_, episodes)| episodes.iter().filter_map(|e| metric(e, "alpha")))
        .collect();
    if alphas.is_empty() {
        return None;
    }
    alphas.sort_by(f64::total_cmp);
    alphas.dedup();
    let rows = runs
        .iter()
        .map(|(label, episodes)| DifficultyRow {
            label: label.clone(),
            cells: alphas
                .iter()
                .map(|alpha| {
                    let here: Vec<&EpisodeRecord> = episodes
                        .iter()
                        .copied()
                        .filter(|e| e.error.is_none() && metric(e, "alpha") == Some(*alpha))
                        .collect();
                    let score = |name: &str| {
                        let values: Vec<(u64, f64)> = here
                            .iter()
                            .filter_map(|e| metric(e, name).map(|v| (e.seed, v)))
                            .collect();
                        bootstrap_mean(&values)
                    };
                    (!here.is_empty()).then(|| DifficultyCell {
                        episodes: here.len(),
                        base_pct: score("base_pct"),
                        coord_pct: score("coord_pct"),
                        total_pct: score("total_pct"),
                    })
                })
                .collect(),
        })
        .collect();
    Some(DifficultyTable { alphas, rows })
}

impl DifficultyTable {
    /// The table in `format`; CSV is tidy: `row,alpha,statistic,value`.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Markdown => escape_controls(&self.markdown()),
            Format::Json => serde_json::to_string_pretty(self).unwrap_or_default() + "\n",
            Format::Csv => escape_controls(&self.csv()),
        }
    }

    fn markdown(&self) -> String {
        let mut out = String::from(
            "## Scores by difficulty α\n\nEach cell: Base% / Coord% / Total% (percent of each score's maximum), with 95% bootstrap intervals over seeds, and the episodes averaged.\n\n| run |",
        );
        for alpha in &self.alphas {
            let _ = write!(out, " α = {alpha} |");
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(self.alphas.len()));
        out.push('\n');
        for row in &self.rows {
            let _ = write!(out, "| `{}` |", row.label);
            for cell in &row.cells {
                let text = cell.map_or("–".to_owned(), |cell| {
                    format!(
                        "{} / {} / {} ({} ep.)",
                        percent(cell.base_pct),
                        percent(cell.coord_pct),
                        percent(cell.total_pct),
                        cell.episodes
                    )
                });
                let _ = write!(out, " {text} |");
            }
            out.push('\n');
        }
        out.push('\n');
        out
    }

    fn csv(&self) -> String {
        let mut out = String::from("row,alpha,statistic,value\n");
        for row in &self.rows {
            for (alpha, cell) in self.alphas.iter().zip(&row.cells) {
                let Some(cell) = cell else { continue };
                let mut put = |statistic: &str, value: String| {
                    let _ = writeln!(out, "{},{alpha},{statistic},{value}", csv_field(&row.label));
                };
                put("episodes", cell.episodes.to_string());
                for (name, ci) in [
                    ("base_pct", cell.base_pct),
                    ("coord_pct", cell.coord_pct),
                    ("total_pct", cell.total_pct),
                ] {
                    if let Some(ci) = ci {
                        put(name, ci.mean.to_string());
                        put(&format!("{name}_ci_low"), ci.low.to_string());
                        put(&format!("{name}_ci_high"), ci.high.to_string());
                    }
                }
            }
        }
        out
    }
}

/// A percentage with its interval, e.g. `12.3 [10.1, 14.0]`.
fn percent(ci: Option<MeanCi>) -> String {
    ci.map_or("–".to_owned(), |ci| {
        format!("{:.1} [{:.1}, {:.1}]", ci.mean, ci.low, ci.high)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic;

    /// Episodes of one operator with the given (seed, α, base%, coord%) metrics.
    fn episodes(scores: &[(u64, f64, f64, f64)]) -> Vec<EpisodeRecord> {
        scores
            .iter()
            .map(|&(seed, alpha, base, coord)| {
                let unit = synthetic::unit("r", "op", seed as u32, seed);
                let mut record = synthetic::episode(&unit, 3, 2).record;
                for (name, value) in [
                    ("alpha", alpha),
                    ("base_pct", base),
                    ("coord_pct", coord),
                    ("total_pct", (base + coord) / 2.0),
                ] {
                    record.metrics.insert(name.into(), value.into());
                }
                record
            })
            .collect()
    }

    #[test]
    fn one_row_per_run_one_column_per_alpha() {
        let team = episodes(&[
            (1, 0.9, 10.0, 2.0),
            (1, 0.3, 40.0, 20.0),
            (2, 0.3, 60.0, 30.0),
            (2, 0.9, 20.0, 4.0),
        ]);
        let solo = episodes(&[(1, 0.3, 50.0, 0.0)]);
        let table = build(&[
            ("team".to_owned(), team.iter().collect()),
            ("solo".to_owned(), solo.iter().collect()),
        ])
        .unwrap();
        assert_eq!(table.alphas, [0.3, 0.9]);
        let easy = table.rows[0].cells[0].unwrap();
        assert_eq!(easy.episodes, 2);
        assert_eq!(easy.base_pct.unwrap().mean, 50.0);
        assert_eq!(easy.coord_pct.unwrap().mean, 25.0);
        assert_eq!(easy.total_pct.unwrap().mean, 37.5);
        let base = easy.base_pct.unwrap();
        assert!(base.low >= 40.0 && base.high <= 60.0 && base.low < base.high);
        assert_eq!(table.rows[1].cells[1], None);
        let md = table.render(Format::Markdown);
        assert!(md.contains("| run | α = 0.3 | α = 0.9 |"), "{md}");
        assert!(
            md.contains(
                "| `solo` | 50.0 [50.0, 50.0] / 0.0 [0.0, 0.0] / 25.0 [25.0, 25.0] (1 ep.) | – |"
            ),
            "{md}"
        );
        let csv = table.render(Format::Csv);
        assert!(csv.contains("team,0.9,base_pct,15\n"), "{csv}");
        assert!(!csv.contains("solo,0.9"), "{csv}");
    }

    #[test]
    fn runs_without_alpha_have_no_table() {
        let unit = synthetic::unit("r", "op", 0, 1);
        let record = synthetic::episode(&unit, 3, 2).record;
        assert_eq!(build(&[("plain".to_owned(), vec![&record])]), None);
    }
}
