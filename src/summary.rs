//! The one-screen table printed at the end of `mosaic run`.

use crate::run::RunOutcome;
use mosaic_core::Outcome;
use mosaic_core::record::EpisodeRecord;
use std::collections::BTreeMap;
use std::fmt::Write;

/// One row: an operator configuration's team (or agent, in games without teams).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    /// Operator configuration id.
    pub operator: String,
    /// Team name, or agent id when the game has no teams.
    pub side: String,
    /// Operator kinds on this side, e.g. `scripted+random`.
    pub kinds: String,
    /// Episodes.
    pub episodes: usize,
    /// Mean per-episode return of one member of the side.
    pub mean_return: f64,
    /// Share of episodes won.
    pub win_rate: f64,
    /// Share of episodes drawn.
    pub draw_rate: f64,
    /// Environment steps per second of wall time inside the episodes.
    pub steps_per_s: f64,
    steps: u64,
    duration_ms: u64,
}

/// Rows in operator order, then side order of first appearance.
pub fn rows(episodes: &[impl AsRef<EpisodeRecord>]) -> Vec<Row> {
    let mut order: Vec<(String, String)> = Vec::new();
    let mut acc: BTreeMap<(String, String), (Row, Vec<String>)> = BTreeMap::new();
    for episode in episodes.iter().map(AsRef::as_ref) {
        let mut seen = Vec::new();
        for agent in &episode.agents {
            let side = agent.team.clone().unwrap_or_else(|| agent.agent_id.clone());
            let key = (episode.operator_id.clone(), side.clone());
            if !order.contains(&key) {
                order.push(key.clone());
            }
            let (row, kinds) = acc.entry(key.clone()).or_insert_with(|| {
                (
                    Row {
                        operator: episode.operator_id.clone(),
                        side,
                        ..Row::default()
                    },
                    Vec::new(),
                )
            });
            if !kinds.contains(&agent.kind) {
                kinds.push(agent.kind.clone());
            }
            // A side's return is the mean over its members; its outcome is shared.
            let members = episode
                .agents
                .iter()
                .filter(|a| a.team.as_ref().unwrap_or(&a.agent_id) == &row.side)
                .count() as f64;
            row.mean_return += agent.total_reward / members;
            if !seen.contains(&key) {
                seen.push(key.clone());
                row.episodes += 1;
                row.steps += u64::from(episode.steps);
                row.duration_ms += episode.duration_ms;
                match agent.outcome {
                    Some(Outcome::Win) => row.win_rate += 1.0,
                    Some(Outcome::Draw) => row.draw_rate += 1.0,
                    _ => {}
                }
            }
        }
    }
    order
        .into_iter()
        .filter_map(|key| acc.remove(&key))
        .map(|(mut row, kinds)| {
            let n = row.episodes.max(1) as f64;
            row.mean_return /= n;
            row.win_rate /= n;
            row.draw_rate /= n;
            row.steps_per_s = row.steps as f64 * 1000.0 / (row.duration_ms.max(1) as f64);
            row.kinds = kinds.join("+");
            row
        })
        .collect()
}

/// The summary table of a finished run.
pub fn table(outcome: &RunOutcome) -> String {
    let mut out = String::new();
    let steps: u64 = outcome.episodes.iter().map(|e| u64::from(e.steps)).sum();
    let secs = outcome.wall.as_secs_f64().max(1e-9);
    let _ = writeln!(
        out,
        "run {}  ({} episodes, {steps} steps in {secs:.2} s, {:.0} steps/s)  {}",
        outcome.run_id,
        outcome.episodes.len(),
        steps as f64 / secs,
        outcome.dir.display()
    );
    let header = [
        "operator",
        "side",
        "kinds",
        "episodes",
        "mean return",
        "win rate",
        "draw rate",
        "steps/s",
    ];
    let body: Vec<[String; 8]> = rows(&outcome.episodes)
        .into_iter()
        .map(|r| {
            [
                r.operator,
                r.side,
                r.kinds,
                r.episodes.to_string(),
                format!("{:.3}", r.mean_return),
                format!("{:.0}%", r.win_rate * 100.0),
                format!("{:.0}%", r.draw_rate * 100.0),
                format!("{:.0}", r.steps_per_s),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            body.iter()
                .map(|r| r[i].len())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[&str]| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_owned()
    };
    let _ = writeln!(out, "{}", line(&header));
    for row in &body {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        let _ = writeln!(out, "{}", line(&cells));
    }
    let failed = outcome
        .episodes
        .iter()
        .filter(|e| e.error.is_some())
        .count();
    if failed > 0 {
        let _ = writeln!(
            out,
            "{failed} episode(s) ended with an error: see episodes.jsonl"
        );
    }
    out
}
