//! Reports: per operator, per team and per agent statistics of a run's complete episodes.
//!
//! Figures come from the records only:
//!
//! - returns, outcomes, lengths, steps/s and environment metrics from the episode records
//!   (episodes that failed are counted, not averaged);
//! - LLM figures from the step records' `decision` JSON, when present. The contract with
//!   LLM deciders: `usage.prompt_tokens` and `usage.completion_tokens` (integers),
//!   `parse_ok` (bool: the reply parsed into a legal action), `retries` (integer: re-prompts
//!   after a format error), `cache_hits` and `latency_ms` (integers), `message` (string:
//!   text sent to teammates; counted when non-empty), `message_to`, `received` (integer),
//!   `scratchpad` (string). Missing fields are simply not counted;
//! - errors from the step records' `decision_source` (`error`, `timeout`) and the episode
//!   records' `error`.
//!
//! The agent sections (LLM usage, messages and scratchpads, errors) are built and rendered
//! in [`agents`], which lists where each of their figures comes from.
//!
//! An operator's return is the episode's summed reward over all agents; a team's is the
//! sum over its members; an agent's its own. Steps/s is total steps over total episode
//! wall time.

pub mod agents;
pub mod aggregates;
pub mod counts;
pub mod difficulty;
mod format;
mod llm;
pub mod matrix;
mod scan;
pub mod side_by_side;
mod step_fields;
mod steps;
pub mod style;

pub use llm::{LlmDecision, LlmStats};

use crate::error::Result;
use crate::paired::{ConfigComparison, ConfigSamples, compare_configs};
use crate::run_dir::{Records, RunDir, RunSummary};
use crate::stats::{MeanCi, Outcomes, bootstrap_mean};
use agents::{ChannelStats, ErrorGroup};
use aggregates::{OperatorAggregates, aggregates_markdown, operator_aggregates};
use counts::{CountTables, count_tables, count_tables_markdown};
pub use format::{csv_field, escape_controls, fmt_rate};
use format::{fmt_ci, fmt_opt, pct, steps_per_second};
use matrix::{Matrix, build_matrix};
use mosaic_core::Outcome;
use mosaic_core::record::EpisodeRecord;
#[cfg(feature = "parquet")]
#[cfg(feature = "parquet")]
pub(crate) use scan::{decision_fields, named, once};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
#[cfg(feature = "parquet")]
pub(crate) use step_fields::DecisionFields;
use steps::StepFigures;

/// Whom a row of an operator's table is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupKind {
    /// Every agent of the operator.
    Operator,
    /// A team.
    Team,
    /// One agent slot.
    Agent,
}

/// One row of an operator's table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupReport {
    /// Operator, team or agent.
    pub kind: GroupKind,
    /// Its name.
    pub name: String,
    /// The paradigms/kinds of its agents, e.g. `llm/llm, random/random`.
    pub who: String,
    /// Mean return with its interval.
    pub mean_return: Option<MeanCi>,
    /// Win / draw / loss counts.
    pub outcomes: Outcomes,
    /// LLM figures, when the records have any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmStats>,
    /// Messages and scratchpads, when the records have any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<ChannelStats>,
}

/// One operator's statistics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OperatorReport {
    /// The operator.
    pub operator_id: String,
    /// Its environment.
    pub env: String,
    /// Complete episodes.
    pub episodes: usize,
    /// Of those, episodes that failed (counted, not in the averages).
    pub failed: usize,
    /// Mean episode length in steps.
    pub mean_length: Option<f64>,
    /// Environment steps per second of episode wall time.
    pub steps_per_s: Option<f64>,
    /// Operator, team and agent rows.
    pub groups: Vec<GroupReport>,
    /// Means of the environment's numeric metrics.
    pub metrics: BTreeMap<String, f64>,
    /// The same means with their 95% bootstrap intervals, stratified over seeds.
    pub metric_intervals: BTreeMap<String, MeanCi>,
    /// The metrics that are objects of numbers (the coordination world's `achievements`),
    /// per entry: the share of episodes with it and its mean, with intervals.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub count_tables: CountTables,
    /// Failures recovered from (or given up on), per failing child.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub restarts: Vec<RestartStats>,
    /// (episode index, operator return) of every averaged episode, for plots.
    #[serde(skip)]
    pub returns: Vec<(u32, f64)>,
}

/// The restarts of one child of an operator's sessions (`env` or an agent), from the
/// `restarts` of its episode records.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RestartStats {
    /// `env` or the agent id.
    pub child: String,
    /// Failures seen.
    pub failures: usize,
    /// Of those, recovered (the child ran on with its state rebuilt).
    pub recovered: usize,
    /// Recoveries whose replay did not reproduce the first run (non-determinism).
    pub diverged: usize,
    /// Mean time from detection to the restored child, milliseconds.
    pub mean_recovery_ms: f64,
    /// Longest such time.
    pub max_recovery_ms: u64,
    /// The first failure, as recorded.
    pub first_failure: String,
}

/// The restart statistics of `episodes`, per child in order of first failure.
fn restart_stats(episodes: &[&EpisodeRecord]) -> Vec<RestartStats> {
    let mut stats: Vec<RestartStats> = Vec::new();
    for restart in episodes.iter().flat_map(|e| &e.restarts) {
        let index = match stats.iter().position(|s| s.child == restart.child) {
            Some(index) => index,
            None => {
                stats.push(RestartStats {
                    child: restart.child.clone(),
                    failures: 0,
                    recovered: 0,
                    diverged: 0,
                    mean_recovery_ms: 0.0,
                    max_recovery_ms: 0,
                    first_failure: restart.failure.clone(),
                });
                stats.len() - 1
            }
        };
        let s = &mut stats[index];
        s.failures += 1;
        if restart.recovered {
            // Running mean over the recovered restarts.
            s.recovered += 1;
            s.mean_recovery_ms +=
                (restart.recovery_ms as f64 - s.mean_recovery_ms) / s.recovered as f64;
            s.max_recovery_ms = s.max_recovery_ms.max(restart.recovery_ms);
        }
        s.diverged += usize::from(restart.diverged.is_some());
    }
    stats
}

/// A report of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The run.
    pub run: RunSummary,
    /// Whether the run was still being written (figures from its JSON-lines files).
    pub live: bool,
    /// Per operator, in experiment order.
    pub operators: Vec<OperatorReport>,
    /// Decision errors and timeouts per agent, failed episodes per operator.
    pub errors: Vec<ErrorGroup>,
    /// Every operator after the first compared with the first, paired by seed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paired: Vec<ConfigComparison>,
    /// rliable aggregates per operator.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aggregates: Vec<OperatorAggregates>,
    /// The configuration matrix of two-team games.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matrix: Option<Matrix>,
}

/// What a report computes beyond its defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ReportOptions {
    /// Threshold γ of the optimality gap (meaningful for normalised returns); no gap
    /// without it.
    pub gamma: Option<f64>,
}

#[derive(Default)]
struct GroupAcc {
    who: Vec<String>,
    values: Vec<(u64, f64)>,
    outcomes: Outcomes,
    channel: Option<ChannelStats>,
}

impl GroupAcc {
    fn add(&mut self, seed: u64, value: f64, outcome: Option<Outcome>) {
        self.values.push((seed, value));
        match outcome {
            Some(Outcome::Win) => self.outcomes.wins += 1,
            Some(Outcome::Draw) => self.outcomes.draws += 1,
            Some(Outcome::Loss) => self.outcomes.losses += 1,
            None => {}
        }
    }

    fn finish(self, kind: GroupKind, name: String) -> GroupReport {
        GroupReport {
            kind,
            name,
            who: self.who.join(", "),
            mean_return: bootstrap_mean(&self.values),
            outcomes: self.outcomes,
            llm: None,
            channel: self.channel,
        }
    }
}

/// Builds the report of `run` from its complete units.
pub fn build(run: &RunDir, records: &Records) -> Result<Report> {
    build_with(run, records, ReportOptions::default())
}

/// [`build`] with `options`.
pub fn build_with(run: &RunDir, records: &Records, options: ReportOptions) -> Result<Report> {
    // The step records are read from the start, while the episode records are read (one
    // thread's work) and their figures resampled.
    std::thread::scope(|scope| {
        let figures = scope.spawn(|| StepFigures::read(records));
        build_beside(run, records, options, || {
            figures
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    })
}

/// [`build_with`], with the figures of the step records from `step_figures`.
fn build_beside(
    run: &RunDir,
    records: &Records,
    options: ReportOptions,
    step_figures: impl FnOnce() -> Result<StepFigures>,
) -> Result<Report> {
    let summary = run.summary_with(records)?;
    let episodes = records.episodes()?;
    let experiment = &run.manifest().experiment;
    let operator_ids: Vec<String> = experiment
        .operators
        .iter()
        .map(|op| op.id.clone())
        .collect();
    let by_operator: Vec<(&str, &str, Vec<&EpisodeRecord>)> = experiment
        .operators
        .iter()
        .map(|op| {
            let mine = episodes.iter().filter(|e| e.operator_id == op.id).collect();
            (op.id.as_str(), op.env.as_str(), mine)
        })
        .collect();
    let samples: Vec<(&str, ConfigSamples)> = by_operator
        .iter()
        .map(|(id, _, mine)| (*id, ConfigSamples::of(mine.iter().copied())))
        .collect();
    // The figures from the episode records alone are resampled on threads of their own
    // while the step records are read: each section on one, as they take similar times.
    let (figures, operators, paired, aggregates, matrix) = std::thread::scope(|scope| {
        let paired = scope.spawn(|| match samples.split_first() {
            Some(((baseline, base), others)) => others
                .iter()
                .map(|(id, other)| compare_configs((baseline, base), (id, other), None))
                .collect::<Vec<ConfigComparison>>(),
            None => Vec::new(),
        });
        let aggregates = scope.spawn(|| operator_aggregates(&samples, options.gamma));
        let matrix = scope.spawn(|| build_matrix(&by_operator));
        let operators = scope.spawn(|| {
            by_operator
                .iter()
                .map(|(id, env, mine)| operator_report(id, env, mine))
                .collect::<Vec<OperatorReport>>()
        });
        let figures = step_figures();
        let join = |panic| -> ! { std::panic::resume_unwind(panic) };
        (
            figures,
            operators.join().unwrap_or_else(|p| join(p)),
            paired.join().unwrap_or_else(|p| join(p)),
            aggregates.join().unwrap_or_else(|p| join(p)),
            matrix.join().unwrap_or_else(|p| join(p)),
        )
    });
    let mut figures = figures?;
    episodes.iter().for_each(|e| figures.errors.add_episode(e));
    let operators = operators
        .into_iter()
        .zip(&by_operator)
        .map(|(mut report, (_, _, mine))| {
            fill_llm(&mut report, mine, &figures);
            fill_channels(&mut report, mine, &figures);
            report
        })
        .collect();
    Ok(Report {
        run: summary,
        live: records.is_live(),
        operators,
        errors: figures.errors.finish(&operator_ids),
        paired,
        aggregates,
        matrix,
    })
}

/// Puts the message and scratchpad figures of `figures` into the agent rows of `report`,
/// and their sums into its team and operator rows.
fn fill_channels(report: &mut OperatorReport, episodes: &[&EpisodeRecord], figures: &StepFigures) {
    let team_of: BTreeMap<&str, &str> = episodes
        .iter()
        .flat_map(|e| &e.agents)
        .filter_map(|a| a.team.as_deref().map(|t| (a.agent_id.as_str(), t)))
        .collect();
    let mut sums: BTreeMap<(GroupKind, String), ChannelStats> = BTreeMap::new();
    for (agent, stats) in figures.channels(&report.operator_id) {
        let mut targets = vec![
            (GroupKind::Agent, agent.to_owned()),
            (GroupKind::Operator, report.operator_id.clone()),
        ];
        if let Some(team) = team_of.get(agent) {
            targets.push((GroupKind::Team, (*team).to_owned()));
        }
        for target in targets {
            sums.entry(target).or_default().merge(stats);
        }
    }
    for group in &mut report.groups {
        group.channel = sums.get(&(group.kind, group.name.clone())).copied();
    }
}

/// Puts the LLM figures of `figures` into the agent rows of `report`, and their sums
/// into its team and operator rows.
fn fill_llm(report: &mut OperatorReport, episodes: &[&EpisodeRecord], figures: &StepFigures) {
    let agents: Vec<(String, LlmStats)> = report
        .groups
        .iter()
        .filter(|g| g.kind == GroupKind::Agent)
        .filter_map(|g| Some((g.name.clone(), figures.llm(&report.operator_id, &g.name)?)))
        .collect();
    // Team and operator LLM totals: sums over their agents.
    let team_of: BTreeMap<&str, &str> = episodes
        .iter()
        .filter(|e| e.error.is_none())
        .flat_map(|e| &e.agents)
        .filter_map(|a| a.team.as_deref().map(|t| (a.agent_id.as_str(), t)))
        .collect();
    let mut sums: BTreeMap<(GroupKind, &str), LlmStats> = BTreeMap::new();
    for (agent_id, stats) in &agents {
        sums.entry((GroupKind::Agent, agent_id))
            .or_default()
            .merge(stats);
        sums.entry((GroupKind::Operator, &report.operator_id))
            .or_default()
            .merge(stats);
        if let Some(team) = team_of.get(agent_id.as_str()) {
            sums.entry((GroupKind::Team, team))
                .or_default()
                .merge(stats);
        }
    }
    for group in &mut report.groups {
        group.llm = sums.get(&(group.kind, group.name.as_str())).copied();
    }
}

/// An operator's report from its episode records; the figures from its step records are
/// added by [`fill_llm`] and [`fill_channels`].
fn operator_report(operator_id: &str, env: &str, episodes: &[&EpisodeRecord]) -> OperatorReport {
    let ok: Vec<&&EpisodeRecord> = episodes.iter().filter(|e| e.error.is_none()).collect();
    let mut all = GroupAcc::default();
    let mut teams: BTreeMap<String, GroupAcc> = BTreeMap::new();
    let mut agents: Vec<(String, GroupAcc)> = Vec::new();
    let mut returns = Vec::new();
    let mut metric_values: BTreeMap<String, Vec<(u64, f64)>> = BTreeMap::new();
    for episode in &ok {
        let total: f64 = episode.agents.iter().map(|a| a.total_reward).sum();
        all.add(episode.seed, total, None);
        returns.push((episode.episode_index, total));
        let mut team_totals: BTreeMap<&str, (f64, Option<Outcome>)> = BTreeMap::new();
        for agent in &episode.agents {
            let who = format!("{}/{}", agent.paradigm, agent.kind);
            let index = match agents.iter().position(|(id, _)| *id == agent.agent_id) {
                Some(index) => index,
                None => {
                    agents.push((agent.agent_id.clone(), GroupAcc::default()));
                    agents.len() - 1
                }
            };
            let acc = &mut agents[index].1;
            if !acc.who.contains(&who) {
                acc.who.push(who.clone());
            }
            acc.add(episode.seed, agent.total_reward, agent.outcome);
            if let Some(team) = &agent.team {
                let entry = team_totals.entry(team).or_insert((0.0, None));
                entry.0 += agent.total_reward;
                entry.1 = entry.1.or(agent.outcome);
                let acc = teams.entry(team.clone()).or_default();
                if !acc.who.contains(&who) {
                    acc.who.push(who);
                }
            }
        }
        for (team, (total, outcome)) in team_totals {
            if let Some(acc) = teams.get_mut(team) {
                acc.add(episode.seed, total, outcome);
            }
        }
        for (name, value) in &episode.metrics {
            let number = match value {
                serde_json::Value::Number(n) => n.as_f64(),
                serde_json::Value::Bool(b) => Some(f64::from(u8::from(*b))),
                _ => None,
            };
            if let Some(number) = number {
                metric_values
                    .entry(name.clone())
                    .or_default()
                    .push((episode.seed, number));
            }
        }
    }
    let mut whos: Vec<String> = Vec::new();
    for (_, acc) in &agents {
        for who in &acc.who {
            if !whos.contains(who) {
                whos.push(who.clone());
            }
        }
    }
    all.who = whos;
    let mut groups = vec![all.finish(GroupKind::Operator, operator_id.to_owned())];
    groups.extend(
        teams
            .into_iter()
            .map(|(name, acc)| acc.finish(GroupKind::Team, name)),
    );
    groups.extend(
        agents
            .into_iter()
            .map(|(name, acc)| acc.finish(GroupKind::Agent, name)),
    );
    let steps: u64 = ok.iter().map(|e| u64::from(e.steps)).sum();
    OperatorReport {
        operator_id: operator_id.to_owned(),
        env: env.to_owned(),
        episodes: episodes.len(),
        failed: episodes.len() - ok.len(),
        mean_length: (!ok.is_empty()).then(|| steps as f64 / ok.len() as f64),
        steps_per_s: steps_per_second(ok.iter().copied().copied()),
        groups,
        metrics: metric_values
            .iter()
            .map(|(name, values)| {
                let sum: f64 = values.iter().map(|(_, v)| v).sum();
                (name.clone(), sum / values.len() as f64)
            })
            .collect(),
        metric_intervals: metric_values
            .into_iter()
            .filter_map(|(name, values)| Some((name, bootstrap_mean(&values)?)))
            .collect(),
        count_tables: count_tables(ok.iter().copied().copied()),
        restarts: restart_stats(episodes),
        returns,
    }
}

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
fn restarts_markdown(restarts: &[RestartStats]) -> String {
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

#[cfg(test)]
mod tests;
