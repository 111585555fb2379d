//! Writing a report: Markdown for people, JSON and tidy CSV for programs.

use super::*;

/// How a report is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Markdown tables.
    Markdown,
    /// One JSON document.
    Json,
    /// Tidy CSV: `operator,group,name,statistic,value`.
    Csv,
}

impl Report {
    /// The report in `format`.
    pub fn render(&self, format: Format) -> String {
        match format {
            // Model and worker text reaches the report (messages, errors): control
            // characters would drive the reader's terminal, so they are shown escaped.
            Format::Markdown => escape_controls(&self.markdown()),
            Format::Json => serde_json::to_string_pretty(self).unwrap_or_default() + "\n",
            Format::Csv => escape_controls(&self.csv()),
        }
    }

    fn markdown(&self) -> String {
        let mut out = String::new();
        let run = &self.run;
        let _ = writeln!(out, "# Run `{}`: {}\n", run.run_id, run.experiment);
        let _ = writeln!(
            out,
            "Status **{}**, {} of {} episodes complete{}. Intervals: 95% bootstrap, stratified over seeds.\n",
            run.status.name(),
            run.done,
            run.planned,
            if self.live {
                " (run still being written: figures from its JSON-lines files)"
            } else {
                ""
            }
        );
        if self.operators.len() > 1 {
            out.push_str(&self.side_by_side());
        }
        if !self.paired.is_empty() {
            out.push_str("## Paired by seed\n\n");
            for comparison in &self.paired {
                out.push_str(&comparison.markdown());
            }
        }
        out.push_str(&aggregates_markdown(&self.aggregates));
        for op in &self.operators {
            let _ = writeln!(out, "## Operator `{}` ({})\n", op.operator_id, op.env);
            let _ = writeln!(
                out,
                "{} episodes{}, mean length {}, {} steps/s\n",
                op.episodes,
                if op.failed > 0 {
                    format!(" ({} failed, not averaged)", op.failed)
                } else {
                    String::new()
                },
                fmt_opt(op.mean_length, 1),
                fmt_rate(op.steps_per_s)
            );
            out.push_str("| | who | mean return [95% CI] | win | draw | loss |\n");
            out.push_str("|---|---|---|---|---|---|\n");
            for g in &op.groups {
                let name = match g.kind {
                    GroupKind::Operator => "**all**".to_owned(),
                    GroupKind::Team => format!("team {}", g.name),
                    GroupKind::Agent => g.name.clone(),
                };
                let (w, d, l) = match g.outcomes.rates() {
                    Some((w, d, l)) => (pct(w), pct(d), pct(l)),
                    None => ("–".into(), "–".into(), "–".into()),
                };
                let _ = writeln!(
                    out,
                    "| {name} | {} | {} | {w} | {d} | {l} |",
                    g.who,
                    fmt_ci(g.mean_return)
                );
            }
            if !op.metric_intervals.is_empty() {
                out.push_str("\n| metric | mean [95% CI] |\n|---|---|\n");
                for (name, ci) in &op.metric_intervals {
                    let _ = writeln!(out, "| {name} | {} |", fmt_ci(Some(*ci)));
                }
            }
            out.push_str(&count_tables_markdown(&op.count_tables));
            out.push_str(&restarts_markdown(&op.restarts));
            out.push('\n');
        }
        out.push_str(&agents::llm_markdown(&self.operators));
        out.push_str(&agents::channel_markdown(&self.operators));
        out.push_str(&agents::errors_markdown(&self.errors));
        out
    }

    /// Operators as columns, one row per figure.
    fn side_by_side(&self) -> String {
        let mut out = String::from("## Side by side\n\n|");
        for op in &self.operators {
            let _ = write!(out, " | `{}`", op.operator_id);
        }
        out.push_str(" |\n|---|");
        for _ in &self.operators {
            out.push_str("---|");
        }
        out.push('\n');
        let mut row = |label: &str, cell: &dyn Fn(&OperatorReport) -> String| {
            let _ = write!(out, "| {label} |");
            for op in &self.operators {
                let _ = write!(out, " {} |", cell(op));
            }
            out.push('\n');
        };
        row("env", &|op| op.env.clone());
        row("episodes", &|op| op.episodes.to_string());
        row("mean return [95% CI]", &|op| {
            fmt_ci(op.groups[0].mean_return)
        });
        row("mean length", &|op| fmt_opt(op.mean_length, 1));
        row("steps/s", &|op| fmt_rate(op.steps_per_s));
        let mut teams: Vec<&str> = Vec::new();
        for op in &self.operators {
            for g in op.groups.iter().filter(|g| g.kind == GroupKind::Team) {
                if !teams.contains(&g.name.as_str()) {
                    teams.push(&g.name);
                }
            }
        }
        for team in teams {
            let group = |op: &OperatorReport| {
                op.groups
                    .iter()
                    .find(|g| g.kind == GroupKind::Team && g.name == team)
                    .cloned()
            };
            row(&format!("team {team}: who"), &|op| {
                group(op).map_or("–".into(), |g| g.who)
            });
            row(&format!("team {team}: win / draw / loss"), &|op| {
                group(op)
                    .and_then(|g| g.outcomes.rates())
                    .map_or("–".into(), |(w, d, l)| {
                        format!("{} / {} / {}", pct(w), pct(d), pct(l))
                    })
            });
        }
        if self.operators.iter().any(|op| op.groups[0].llm.is_some()) {
            row("LLM tokens (prompt + completion)", &|op| {
                op.groups[0].llm.map_or("–".into(), |s| {
                    format!("{} + {}", s.prompt_tokens, s.completion_tokens)
                })
            });
            row("LLM requests (cache hits)", &|op| {
                op.groups[0].llm.map_or("–".into(), |s| {
                    format!("{} ({})", s.requests, s.cache_hits)
                })
            });
            row("LLM latency ms/decision", &|op| {
                fmt_opt(
                    op.groups[0].llm.and_then(|s| s.latency_per_decision_ms()),
                    0,
                )
            });
            row("LLM parse ok", &|op| {
                op.groups[0]
                    .llm
                    .and_then(|s| s.parse_rate())
                    .map_or("–".into(), pct)
            });
        }
        let mut metrics: Vec<&String> = self
            .operators
            .iter()
            .flat_map(|op| op.metric_intervals.keys())
            .collect();
        metrics.sort();
        metrics.dedup();
        for metric in metrics {
            row(&format!("metric {metric} [95% CI]"), &|op| {
                fmt_ci(op.metric_intervals.get(metric).copied())
            });
        }
        out.push('\n');
        out
    }

    fn csv(&self) -> String {
        let mut out = String::from("operator,group,name,statistic,value\n");
        let mut put = |op: &str, group: &str, name: &str, statistic: &str, value: String| {
            let _ = writeln!(
                out,
                "{},{},{},{},{}",
                csv_field(op),
                group,
                csv_field(name),
                statistic,
                value
            );
        };
        for op in &self.operators {
            let id = op.operator_id.as_str();
            put(id, "operator", id, "episodes", op.episodes.to_string());
            put(id, "operator", id, "failed", op.failed.to_string());
            if let Some(v) = op.mean_length {
                put(id, "operator", id, "mean_length", v.to_string());
            }
            if let Some(v) = op.steps_per_s {
                put(id, "operator", id, "steps_per_s", v.to_string());
            }
            for g in &op.groups {
                let group = match g.kind {
                    GroupKind::Operator => "operator",
                    GroupKind::Team => "team",
                    GroupKind::Agent => "agent",
                };
                if let Some(ci) = g.mean_return {
                    put(id, group, &g.name, "mean_return", ci.mean.to_string());
                    put(id, group, &g.name, "mean_return_ci_low", ci.low.to_string());
                    put(
                        id,
                        group,
                        &g.name,
                        "mean_return_ci_high",
                        ci.high.to_string(),
                    );
                }
                if let Some((w, d, l)) = g.outcomes.rates() {
                    put(id, group, &g.name, "win_rate", w.to_string());
                    put(id, group, &g.name, "draw_rate", d.to_string());
                    put(id, group, &g.name, "loss_rate", l.to_string());
                }
                if let Some(s) = g.llm {
                    put(
                        id,
                        group,
                        &g.name,
                        "prompt_tokens",
                        s.prompt_tokens.to_string(),
                    );
                    put(
                        id,
                        group,
                        &g.name,
                        "completion_tokens",
                        s.completion_tokens.to_string(),
                    );
                    if let Some(rate) = s.parse_rate() {
                        put(id, group, &g.name, "parse_ok_rate", rate.to_string());
                    }
                    put(id, group, &g.name, "retries", s.retries.to_string());
                    put(id, group, &g.name, "messages", s.messages.to_string());
                    agents::llm_csv(&s, |statistic, value| {
                        put(id, group, &g.name, statistic, value)
                    });
                }
                if let Some(s) = g.channel {
                    agents::channel_csv(&s, |statistic, value| {
                        put(id, group, &g.name, statistic, value)
                    });
                }
            }
            for (name, mean) in &op.metrics {
                put(id, "metric", name, "mean", mean.to_string());
                if let Some(ci) = op.metric_intervals.get(name) {
                    put(id, "metric", name, "ci_low", ci.low.to_string());
                    put(id, "metric", name, "ci_high", ci.high.to_string());
                }
            }
            for (name, rows) in &op.count_tables {
                for (key, row) in rows {
                    let entry = format!("{name}.{key}");
                    for (figure, ci) in [("share", row.share), ("mean", row.mean)] {
                        put(id, "count", &entry, figure, ci.mean.to_string());
                        put(
                            id,
                            "count",
                            &entry,
                            &format!("{figure}_ci_low"),
                            ci.low.to_string(),
                        );
                        put(
                            id,
                            "count",
                            &entry,
                            &format!("{figure}_ci_high"),
                            ci.high.to_string(),
                        );
                    }
                }
            }
            for r in &op.restarts {
                put(id, "restarts", &r.child, "failures", r.failures.to_string());
                put(
                    id,
                    "restarts",
                    &r.child,
                    "recovered",
                    r.recovered.to_string(),
                );
                put(id, "restarts", &r.child, "diverged", r.diverged.to_string());
                put(
                    id,
                    "restarts",
                    &r.child,
                    "mean_recovery_ms",
                    r.mean_recovery_ms.to_string(),
                );
            }
        }
        for a in &self.aggregates {
            let id = a.operator_id.as_str();
            let estimates = [
                ("iqm", Some(a.aggregates.iqm)),
                ("mean", Some(a.aggregates.mean)),
                ("median", Some(a.aggregates.median)),
                (
                    "optimality_gap",
                    a.aggregates.optimality_gap.map(|(_, e)| e),
                ),
                ("probability_of_improvement", a.improvement_over_first),
            ];
            for (statistic, estimate) in estimates.into_iter().filter_map(|(s, e)| Some((s, e?))) {
                put(id, "aggregate", id, statistic, estimate.point.to_string());
                put(
                    id,
                    "aggregate",
                    id,
                    &format!("{statistic}_ci_low"),
                    estimate.low.to_string(),
                );
                put(
                    id,
                    "aggregate",
                    id,
                    &format!("{statistic}_ci_high"),
                    estimate.high.to_string(),
                );
            }
        }
        for c in &self.paired {
            let mut paired = |name: &str, comparison: &crate::paired::PairedComparison| {
                let Some(d) = &comparison.difference else {
                    return;
                };
                for (statistic, value) in [
                    ("paired_seeds", comparison.paired_seeds as f64),
                    ("difference", d.difference.mean),
                    ("difference_ci_low", d.difference.low),
                    ("difference_ci_high", d.difference.high),
                    ("p_value", d.test.p_value),
                    ("difference_sd", d.power.sd),
                    ("detectable_difference", d.power.detectable),
                ] {
                    put(
                        &c.b,
                        "paired",
                        &format!("{name} vs {}", c.a),
                        statistic,
                        value.to_string(),
                    );
                }
            };
            paired("return", &c.returns);
            for (team, comparison) in &c.win_rates {
                paired(&format!("team {team} win rate"), comparison);
            }
        }
        agents::errors_csv(&self.errors, &mut out);
        out
    }
}

/// The restarts table of an operator (empty when nothing failed).
pub(super) fn restarts_markdown(restarts: &[RestartStats]) -> String {
    if restarts.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n| restarted | failures | recovered | diverged | mean recovery ms | max ms | first failure |\n|---|---|---|---|---|---|---|\n",
    );
    for r in restarts {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.0} | {} | {} |",
            r.child,
            r.failures,
            r.recovered,
            r.diverged,
            r.mean_recovery_ms,
            r.max_recovery_ms,
            r.first_failure.replace('|', "\\|")
        );
    }
    out
}
