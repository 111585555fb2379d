//! The one-screen table printed at the end of `mosaic run`: the run's report (the same
//! figures as `mosaic report`), reduced to one row per team (or agent, in games without
//! teams) of every operator configuration.

use crate::run::RunOutcome;
use mosaic_core::count::Count;
use mosaic_recorder::report::{self, GroupKind, Report};
use mosaic_recorder::{RecorderError, RunDir};
use std::fmt::Write;

/// The summary table of a finished run, built from its run directory.
pub fn table(outcome: &RunOutcome) -> Result<String, RecorderError> {
    let run = RunDir::open(&outcome.dir)?;
    let records = run.records()?;
    let report = mosaic_recorder::report::build(&run, &records)?;
    Ok(render(outcome, &report))
}

fn render(outcome: &RunOutcome, report: &Report) -> String {
    let mut out = String::new();
    let steps = outcome.tally.steps;
    let secs = outcome.wall.as_secs_f64().max(1e-9);
    let _ = writeln!(
        out,
        "run {} ({}, {} in {secs:.2} s) in {}",
        outcome.run_id,
        Count(outcome.tally.episodes, "episode"),
        Count(steps, "step"),
        outcome.dir.display()
    );
    let header = [
        "operator",
        "side",
        "who",
        "episodes",
        "mean return [95% CI]",
        "win",
        "draw",
        "loss",
        "steps/s",
    ];
    let mut rows: Vec<Vec<String>> = Vec::new();
    for op in &report.operators {
        let has_teams = op.groups.iter().any(|g| g.kind == GroupKind::Team);
        let side = if has_teams {
            GroupKind::Team
        } else {
            GroupKind::Agent
        };
        for group in op.groups.iter().filter(|g| g.kind == side) {
            let rate =
                |r: Option<f64>| r.map_or("–".to_owned(), |r| format!("{:.0}%", r * 100.0));
            let rates = group.outcomes.rates();
            rows.push(vec![
                op.operator_id.clone(),
                group.name.clone(),
                group.who.clone(),
                op.episodes.to_string(),
                group.mean_return.map_or("–".to_owned(), |m| {
                    format!("{:.3} [{:.3}, {:.3}]", m.mean, m.low, m.high)
                }),
                rate(rates.map(|r| r.0)),
                rate(rates.map(|r| r.1)),
                rate(rates.map(|r| r.2)),
                report::fmt_rate(op.steps_per_s),
            ]);
        }
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<&str>| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_owned()
    };
    let _ = writeln!(out, "{}", line(header.to_vec()));
    for row in &rows {
        let _ = writeln!(out, "{}", line(row.iter().map(String::as_str).collect()));
    }
    let failed = outcome.tally.failed;
    if failed > 0 {
        let _ = writeln!(
            out,
            "{failed} episode(s) ended with an error: see episodes.jsonl"
        );
    }
    out
}
