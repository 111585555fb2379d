//! The configuration matrix of two-team games (MOSAIC-style tables): rows are what team A
//! plays (its agents' decider kinds), columns what team B plays, and each cell holds the
//! operator that pits them: team A's win, draw and loss rates and both teams' mean
//! returns, each with its 95% bootstrap interval (stratified over seeds).
//!
//! Team A is the team of the first agent in the episode records (e.g. `green` in soccer),
//! team B the other one. Operators whose games do not have exactly two teams are left out.
//!
//! [`super::side_by_side`] builds the same cells from several runs, one configuration per
//! run (or per operator of a run): MOSAIC's configuration tables, one experiment file each,
//! read side by side with [`Matrix::render_rows`].

use super::{Format, csv_field, escape_controls};
use crate::stats::{MeanCi, bootstrap_mean};
use mosaic_core::Outcome;
use mosaic_core::record::EpisodeRecord;
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The matrix.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Matrix {
    /// Team A (rows), e.g. `green`.
    pub row_team: String,
    /// Team B (columns).
    pub column_team: String,
    /// What team A plays, one row each, in order of first appearance.
    pub rows: Vec<String>,
    /// What team B plays, one column each.
    pub columns: Vec<String>,
    /// The filled cells, in operator order.
    pub cells: Vec<MatrixCell>,
}

/// One operator: what each team plays and how it went.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MatrixCell {
    /// Row: what team A plays.
    pub row: String,
    /// Column: what team B plays.
    pub column: String,
    /// The operator.
    pub operator_id: String,
    /// Its environment.
    pub env: String,
    /// Episodes averaged (complete, not failed).
    pub episodes: usize,
    /// Team A's win rate.
    pub win: Option<MeanCi>,
    /// Team A's draw rate.
    pub draw: Option<MeanCi>,
    /// Team A's loss rate.
    pub loss: Option<MeanCi>,
    /// Team A's mean return.
    pub row_return: Option<MeanCi>,
    /// Team B's mean return.
    pub column_return: Option<MeanCi>,
}

/// The matrix of `operators` (id, env, episodes); `None` when none has two teams.
pub(super) fn build_matrix(operators: &[(&str, &str, Vec<&EpisodeRecord>)]) -> Option<Matrix> {
    let mut matrix: Option<Matrix> = None;
    for (operator_id, env, episodes) in operators {
        let ok: Vec<&EpisodeRecord> = episodes
            .iter()
            .copied()
            .filter(|e| e.error.is_none())
            .collect();
        let Some(first) = ok.first() else { continue };
        let teams: Vec<&str> = first.agents.iter().filter_map(|a| a.team.as_deref()).fold(
            Vec::new(),
            |mut teams, team| {
                if !teams.contains(&team) {
                    teams.push(team);
                }
                teams
            },
        );
        let [team_a, team_b] = teams[..] else {
            continue;
        };
        let m = matrix.get_or_insert_with(|| Matrix {
            row_team: team_a.to_owned(),
            column_team: team_b.to_owned(),
            rows: Vec::new(),
            columns: Vec::new(),
            cells: Vec::new(),
        });
        // Another pair of teams than the matrix's: not in this table.
        let (a, b) = if (team_a, team_b) == (m.row_team.as_str(), m.column_team.as_str()) {
            (team_a, team_b)
        } else if (team_b, team_a) == (m.row_team.as_str(), m.column_team.as_str()) {
            (team_b, team_a)
        } else {
            continue;
        };
        let (row, column) = (plays(&ok, a), plays(&ok, b));
        if !m.rows.contains(&row) {
            m.rows.push(row.clone());
        }
        if !m.columns.contains(&column) {
            m.columns.push(column.clone());
        }
        let (mut wins, mut draws, mut losses) = (Vec::new(), Vec::new(), Vec::new());
        let (mut returns_a, mut returns_b) = (Vec::new(), Vec::new());
        for episode in &ok {
            let team_total = |team: &str| -> f64 {
                episode
                    .agents
                    .iter()
                    .filter(|agent| agent.team.as_deref() == Some(team))
                    .map(|agent| agent.total_reward)
                    .sum()
            };
            returns_a.push((episode.seed, team_total(a)));
            returns_b.push((episode.seed, team_total(b)));
            let outcome = episode
                .agents
                .iter()
                .find(|agent| agent.team.as_deref() == Some(a))
                .and_then(|agent| agent.outcome);
            if let Some(outcome) = outcome {
                let indicator =
                    |wanted: Outcome| (episode.seed, f64::from(u8::from(outcome == wanted)));
                wins.push(indicator(Outcome::Win));
                draws.push(indicator(Outcome::Draw));
                losses.push(indicator(Outcome::Loss));
            }
        }
        m.cells.push(MatrixCell {
            row,
            column,
            operator_id: (*operator_id).to_owned(),
            env: (*env).to_owned(),
            episodes: ok.len(),
            win: bootstrap_mean(&wins),
            draw: bootstrap_mean(&draws),
            loss: bootstrap_mean(&losses),
            row_return: bootstrap_mean(&returns_a),
            column_return: bootstrap_mean(&returns_b),
        });
    }
    matrix
}

/// What `team` plays: the decider kinds of its agents, e.g. `scripted` or `llm+random`.
fn plays(episodes: &[&EpisodeRecord], team: &str) -> String {
    let kinds: BTreeSet<&str> = episodes
        .iter()
        .flat_map(|e| &e.agents)
        .filter(|a| a.team.as_deref() == Some(team))
        .map(|a| a.kind.as_str())
        .collect();
    kinds.into_iter().collect::<Vec<_>>().join("+")
}

impl Matrix {
    /// The matrix in `format`; CSV is tidy: `row,column,operator,statistic,value`.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Markdown => escape_controls(&self.markdown()),
            Format::Json => serde_json::to_string_pretty(self).unwrap_or_default() + "\n",
            Format::Csv => escape_controls(&self.csv()),
        }
    }

    /// The cells as a long table, one configuration a row (what each team plays, the rates
    /// and returns with their intervals): for many configurations of different shapes,
    /// where the grid of [`Matrix::render`] would be mostly empty. JSON and CSV are the
    /// same as [`Matrix::render`]'s.
    pub fn render_rows(&self, format: Format) -> String {
        match format {
            Format::Markdown => escape_controls(&self.rows_markdown()),
            Format::Json | Format::Csv => self.render(format),
        }
    }

    fn rows_markdown(&self) -> String {
        let (a, b) = (&self.row_team, &self.column_team);
        let mut out = format!(
            "## Configurations: team {a} against team {b}\n\nOne row per configuration: what each team plays, {a}'s win / draw / loss rates and both teams' mean returns, with 95% bootstrap intervals over seeds.\n\n| configuration | {a} plays | {b} plays | episodes | {a} wins | draws | {a} losses | return {a} | return {b} |\n|---|---|---|---|---|---|---|---|---|\n"
        );
        for cell in &self.cells {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
                cell.operator_id,
                cell.row,
                cell.column,
                cell.episodes,
                rate_text(cell.win),
                rate_text(cell.draw),
                rate_text(cell.loss),
                value_text(cell.row_return),
                value_text(cell.column_return)
            );
        }
        out.push('\n');
        out
    }

    fn csv(&self) -> String {
        let mut out = String::from("row,column,operator,statistic,value\n");
        for cell in &self.cells {
            let mut put = |statistic: &str, value: String| {
                let _ = writeln!(
                    out,
                    "{},{},{},{statistic},{value}",
                    csv_field(&cell.row),
                    csv_field(&cell.column),
                    csv_field(&cell.operator_id)
                );
            };
            put("episodes", cell.episodes.to_string());
            for (name, ci) in [
                ("win_rate", cell.win),
                ("draw_rate", cell.draw),
                ("loss_rate", cell.loss),
                ("row_return", cell.row_return),
                ("column_return", cell.column_return),
            ] {
                if let Some(ci) = ci {
                    put(name, ci.mean.to_string());
                    put(&format!("{name}_ci_low"), ci.low.to_string());
                    put(&format!("{name}_ci_high"), ci.high.to_string());
                }
            }
        }
        out
    }

    /// The Markdown table: one row per team A configuration, one column per team B one.
    fn markdown(&self) -> String {
        let mut out = format!(
            "## Matrix: team {} (rows) against team {} (columns)\n\nEach cell: {}'s win / draw / loss rates, then mean returns ({} – {}), with 95% bootstrap intervals.\n\n| {} \\ {} |",
            self.row_team,
            self.column_team,
            self.row_team,
            self.row_team,
            self.column_team,
            self.row_team,
            self.column_team
        );
        for column in &self.columns {
            let _ = write!(out, " {column} |");
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(self.columns.len()));
        out.push('\n');
        for row in &self.rows {
            let _ = write!(out, "| **{row}** |");
            for column in &self.columns {
                let cells: Vec<String> = self
                    .cells
                    .iter()
                    .filter(|c| c.row == *row && c.column == *column)
                    .map(MatrixCell::text)
                    .collect();
                let text = if cells.is_empty() {
                    "–".to_owned()
                } else {
                    cells.join("<br>")
                };
                let _ = write!(out, " {text} |");
            }
            out.push('\n');
        }
        out.push('\n');
        out
    }
}

impl MatrixCell {
    fn text(&self) -> String {
        format!(
            "`{}` ({} ep.): W {} / D {} / L {}; return {} – {}",
            self.operator_id,
            self.episodes,
            rate_text(self.win),
            rate_text(self.draw),
            rate_text(self.loss),
            value_text(self.row_return),
            value_text(self.column_return)
        )
    }
}

/// A rate in percent with its interval, e.g. `40% [20, 60]`.
fn rate_text(ci: Option<MeanCi>) -> String {
    ci.map_or("–".to_owned(), |ci| {
        format!(
            "{:.0}% [{:.0}, {:.0}]",
            ci.mean * 100.0,
            ci.low * 100.0,
            ci.high * 100.0
        )
    })
}

/// A mean with its interval, e.g. `1.50 [1.00, 2.00]`.
fn value_text(ci: Option<MeanCi>) -> String {
    ci.map_or("–".to_owned(), |ci| {
        format!("{:.2} [{:.2}, {:.2}]", ci.mean, ci.low, ci.high)
    })
}
