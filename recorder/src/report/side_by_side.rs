//! Several runs side by side (`mosaic report RUN RUN…`): the configuration table of their
//! two-team games ([`Matrix::render_rows`]) and their scores by difficulty α
//! ([`DifficultyTable`], ALEM's Table 1), each present when some run has what it needs.

use super::Format;
use super::difficulty::{self, DifficultyTable};
use super::matrix::{Matrix, build_matrix};
use crate::error::Result;
use crate::run_dir::RunDir;
use mosaic_core::record::EpisodeRecord;
use serde::Serialize;

/// What several runs give side by side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SideBySide {
    /// Their two-team configurations, one cell per configuration: a run's experiment name,
    /// with `/operator` when the run has more than one operator.
    pub configurations: Option<Matrix>,
    /// Their scores by difficulty α, one row per run.
    pub difficulty: Option<DifficultyTable>,
}

/// Reads the complete episodes of `runs` and builds both tables. A run is labelled by its
/// experiment's name, or by its run id when two of the runs share a name.
pub fn side_by_side(runs: &[RunDir]) -> Result<SideBySide> {
    let mut episodes_of_runs = Vec::with_capacity(runs.len());
    for run in runs {
        episodes_of_runs.push(run.records()?.episodes()?);
    }
    let name_of = |run: &RunDir| run.manifest().experiment.name.clone();
    let labels: Vec<String> = runs
        .iter()
        .map(|run| {
            let shared = runs.iter().filter(|r| name_of(r) == name_of(run)).count() > 1;
            match shared {
                true => run.manifest().run_id.clone(),
                false => name_of(run),
            }
        })
        .collect();
    let mut by_operator: Vec<(String, &str, Vec<&EpisodeRecord>)> = Vec::new();
    for ((run, episodes), label) in runs.iter().zip(&episodes_of_runs).zip(&labels) {
        let operators = &run.manifest().experiment.operators;
        for op in operators {
            let label = match operators.len() {
                1 => label.clone(),
                _ => format!("{label}/{}", op.id),
            };
            let mine = episodes.iter().filter(|e| e.operator_id == op.id).collect();
            by_operator.push((label, op.env.as_str(), mine));
        }
    }
    let operators: Vec<(&str, &str, Vec<&EpisodeRecord>)> = by_operator
        .iter()
        .map(|(label, env, mine)| (label.as_str(), *env, mine.clone()))
        .collect();
    let by_run: Vec<(String, Vec<&EpisodeRecord>)> = labels
        .into_iter()
        .zip(&episodes_of_runs)
        .map(|(label, episodes)| (label, episodes.iter().collect()))
        .collect();
    Ok(SideBySide {
        configurations: build_matrix(&operators),
        difficulty: difficulty::build(&by_run),
    })
}

impl SideBySide {
    /// Whether neither table has anything.
    pub fn is_empty(&self) -> bool {
        self.configurations.is_none() && self.difficulty.is_none()
    }

    /// Both tables in `format`: Markdown one after the other; JSON one document with both;
    /// CSV each table's tidy rows, the two separated by an empty line.
    pub fn render(&self, format: Format) -> String {
        if let Format::Json = format {
            return serde_json::to_string_pretty(self).unwrap_or_default() + "\n";
        }
        let tables = [
            self.configurations.as_ref().map(|m| m.render_rows(format)),
            self.difficulty.as_ref().map(|d| d.render(format)),
        ];
        let rendered: Vec<String> = tables.into_iter().flatten().collect();
        match format {
            Format::Csv => rendered.join("\n"),
            _ => rendered.concat(),
        }
    }
}
