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
mod render;
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
pub use render::Format;
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

#[cfg(test)]
mod tests;
