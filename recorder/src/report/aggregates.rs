//! The report's rliable section: each operator's returns as a score matrix (one run per
//! seed, the operator as its one task), with the aggregates of [`crate::aggregate`].

use super::fmt_opt;
use crate::aggregate::{
    Aggregates, Estimate, Profile, ScoreMatrix, aggregates, improvement_interval,
    performance_profile, thresholds,
};
use crate::paired::{ConfigSamples, seed_means};
use serde::Serialize;
use std::fmt::Write as _;

/// Points of each operator's performance profile.
const PROFILE_POINTS: usize = 11;

/// One operator's aggregates.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OperatorAggregates {
    /// The operator.
    pub operator_id: String,
    /// IQM, mean, median (and optimality gap) over its seeds.
    pub aggregates: Aggregates,
    /// Probability that a seed of this operator scores higher than one of the first
    /// operator (`None` for the first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub improvement_over_first: Option<Estimate>,
    /// Share of seeds whose return is above each threshold; thresholds are shared by
    /// all operators of the report.
    pub profile: Profile,
}

/// The aggregates of every operator with complete episodes, in `samples` order; returns
/// are averaged per seed first (a seed is a run). `gamma`: the optimality gap's threshold.
pub(super) fn operator_aggregates(
    samples: &[(&str, ConfigSamples)],
    gamma: Option<f64>,
) -> Vec<OperatorAggregates> {
    let matrices: Vec<(&str, ScoreMatrix)> = samples
        .iter()
        .filter_map(|(id, s)| {
            let scores: Vec<f64> = seed_means(&s.returns).into_values().collect();
            ScoreMatrix::new(scores.len(), 1, scores)
                .ok()
                .map(|m| (*id, m))
        })
        .collect();
    let all = matrices
        .iter()
        .flat_map(|(_, m)| m.scores().iter().copied());
    let (low, high) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), s| {
        (lo.min(s), hi.max(s))
    });
    let taus = thresholds(low, high, PROFILE_POINTS);
    let first = matrices.first().map(|(_, m)| m.clone());
    matrices
        .iter()
        .enumerate()
        .map(|(i, (id, m))| OperatorAggregates {
            operator_id: (*id).to_owned(),
            aggregates: aggregates(m, gamma),
            improvement_over_first: first
                .as_ref()
                .filter(|_| i > 0)
                .and_then(|base| improvement_interval(m, base).ok()),
            profile: performance_profile(m, &taus),
        })
        .collect()
}

/// The Markdown section (empty without aggregates).
pub(super) fn aggregates_markdown(aggregates: &[OperatorAggregates]) -> String {
    let Some(first) = aggregates.first() else {
        return String::new();
    };
    let gap = first.aggregates.optimality_gap.map(|(gamma, _)| gamma);
    let mut out = String::from(
        "## Aggregates (rliable)\n\nEach seed is a run (its episodes' mean return), the operator its one task. Intervals: 95% stratified bootstrap.\n\n| operator | seeds | IQM | mean | median |",
    );
    if let Some(gamma) = gap {
        let _ = write!(out, " optimality gap (γ = {gamma}) |");
    }
    let _ = writeln!(
        out,
        " P(better than `{}`) |\n|---|---|---|---|---|{}---|",
        first.operator_id,
        if gap.is_some() { "---|" } else { "" }
    );
    for a in aggregates {
        let _ = write!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            a.operator_id,
            a.aggregates.runs,
            fmt_estimate(Some(a.aggregates.iqm)),
            fmt_estimate(Some(a.aggregates.mean)),
            fmt_estimate(Some(a.aggregates.median)),
        );
        if gap.is_some() {
            let _ = write!(
                out,
                " {} |",
                fmt_estimate(a.aggregates.optimality_gap.map(|(_, e)| e))
            );
        }
        let _ = writeln!(out, " {} |", fmt_estimate(a.improvement_over_first));
    }
    // The profile at its quartile thresholds, to keep the table narrow (all points are in
    // the JSON report).
    let taus = &first.profile.taus;
    let shown: Vec<usize> = if taus.len() >= 5 {
        (0..5).map(|q| q * (taus.len() - 1) / 4).collect()
    } else {
        (0..taus.len()).collect()
    };
    out.push_str("\nShare of seeds with a return above τ (performance profile):\n\n| operator |");
    for i in &shown {
        let _ = write!(out, " τ = {} |", fmt_opt(Some(taus[*i]), 3));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(shown.len()));
    out.push('\n');
    for a in aggregates {
        let _ = write!(out, "| `{}` |", a.operator_id);
        for i in &shown {
            let _ = write!(
                out,
                " {} |",
                fmt_estimate(a.profile.fractions.get(*i).copied())
            );
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

fn fmt_estimate(estimate: Option<Estimate>) -> String {
    estimate.map_or("–".into(), |e| {
        format!("{:.3} [{:.3}, {:.3}]", e.point, e.low, e.high)
    })
}
