//! The one-screen table printed at the end of `mosaic run`: the run's report (the same
//! figures as `mosaic report`), reduced to one row per team (or agent, in games without
//! teams) of every operator configuration.

use crate::run::RunOutcome;
use mosaic_actors::runner::RunTally;
use mosaic_core::count::Count;
use mosaic_recorder::report::{self, GroupKind, Report};
use mosaic_recorder::{RecorderError, RunDir};
use std::fmt::Write;

/// The summary table of a finished run, built from its run directory, with a warning line
/// for each language-model agent none of whose decisions came from the model.
pub fn table(outcome: &RunOutcome) -> Result<String, RecorderError> {
    let run = RunDir::open(&outcome.dir)?;
    let records = run.records()?;
    let report = mosaic_recorder::report::build(&run, &records)?;
    let mut table = render(outcome, &report);
    for warning in model_warnings(&outcome.tally) {
        let _ = writeln!(table, "warning: {warning}");
    }
    Ok(table)
}

/// Warnings about language-model agents none of whose decisions came from the model (all
/// failed or missed their deadline): such a run measured the fallback action, and its
/// figures say nothing about the model. From the run's tally, counted as its episodes
/// were confirmed.
fn model_warnings(tally: &RunTally) -> Vec<String> {
    tally
        .failed_models()
        .map(|((operator, agent), model)| {
            format!(
                "every decision of {agent} (operator {operator}) failed or missed its deadline \
                 ({} of {}: {} timed out, {} failed): the figures are the fallback action's, \
                 not the model's; `mosaic report` shows the errors",
                model.timeouts + model.errors,
                model.decisions,
                model.timeouts,
                model.errors,
            )
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_core::record::{AgentResult, EpisodeRecord};
    use mosaic_core::{OperatorId, Paradigm};

    fn episode(index: u32, agents: &[(&str, Paradigm, u32, u32, u32)]) -> EpisodeRecord {
        let mut record = EpisodeRecord::new(
            &mosaic_core::RunId::from("r"),
            &OperatorId("op".into()),
            index,
            u64::from(index),
            "soccer-2v2",
        );
        record.agents = agents
            .iter()
            .map(|&(id, paradigm, decisions, timeouts, errors)| AgentResult {
                agent_id: id.into(),
                team: None,
                paradigm,
                kind: "k".into(),
                total_reward: 0.0,
                outcome: None,
                decisions,
                timeouts,
                errors,
            })
            .collect();
        record
    }

    #[test]
    fn a_model_agent_whose_every_decision_failed_is_warned_about() {
        let episodes = [
            episode(
                0,
                &[
                    ("llm_0", Paradigm::Llm, 10, 4, 6),
                    ("llm_1", Paradigm::Llm, 10, 0, 1),
                ],
            ),
            episode(
                1,
                &[
                    ("llm_0", Paradigm::Llm, 10, 10, 0),
                    ("llm_1", Paradigm::Llm, 10, 0, 0),
                ],
            ),
            episode(
                2,
                &[
                    ("rand", Paradigm::Random, 10, 0, 10),
                    ("llm_1", Paradigm::Llm, 0, 0, 0),
                ],
            ),
        ];
        let tally = |episodes: &[EpisodeRecord]| {
            let mut tally = RunTally::default();
            episodes.iter().for_each(|e| tally.add(e));
            tally
        };
        let warnings = model_warnings(&tally(&episodes));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("llm_0")
                && warnings[0].contains("(20 of 20: 14 timed out, 6 failed)"),
            "{}",
            warnings[0]
        );
        assert!(
            model_warnings(&tally(&episodes[2..])).is_empty(),
            "no decisions, no warning"
        );
    }
}
