//! The report's agent sections: LLM usage, messages and scratchpads, and errors.
//!
//! Every figure is a sum (or a mean of sums) over the step and episode records, so it can
//! be traced back to them:
//!
//! | figure | from each step record's `decision` (or the episode record) |
//! |---|---|
//! | decisions | LLM decisions: records whose `decision` has any LLM field |
//! | timeouts | records of an `llm` or `vlm` agent with `decision_source` `timeout` (no answer recorded; not among the decisions) |
//! | requests | `http_attempts` (HTTP requests sent, failed attempts included); `1 + retries` in records without it |
//! | cache hits | `cache_hits` (answers served from the response cache) |
//! | prompt / completion tokens | `usage.prompt_tokens`, `usage.completion_tokens` |
//! | latency per decision | `latency_ms` summed over decisions, divided by decisions |
//! | parse ok, re-prompts | `parse_ok`, `retries` |
//! | messages sent, addressed | non-empty `message`; of those, with `message_to` |
//! | mean message length | characters of the sent messages / messages sent |
//! | messages received | `received` |
//! | scratchpad updates | `scratchpad` differs from the agent's previous one in the episode (and is set) |
//! | mean note length | characters of the notes at their updates / updates |
//! | errors, timeouts | `decision_source` `error` / `timeout`; message from `decision.error`, else the last of `decision.format_errors` |
//! | episode errors | the episode record's `error` |
//!
//! "First" is the occurrence with the lowest (episode index, step), whatever order the
//! records are read in.

use super::step_fields::{DecisionFields, ReportStep};
use super::{GroupKind, LlmStats, OperatorReport, csv_field, pct};
use mosaic_core::DecisionSource;
use mosaic_core::record::EpisodeRecord;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

/// Messages and scratchpad of an agent (or summed over a team / an operator).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ChannelStats {
    /// Decisions that sent, read or noted anything.
    pub decisions: u64,
    /// Messages sent.
    pub sent: u64,
    /// Of those, addressed to one agent.
    pub addressed: u64,
    /// Characters of the messages sent.
    pub sent_chars: u64,
    /// Messages read.
    pub received: u64,
    /// Times the scratchpad changed.
    pub scratchpad_updates: u64,
    /// Characters of the notes at their updates.
    pub scratchpad_chars: u64,
}

impl ChannelStats {
    pub(super) fn merge(&mut self, other: &ChannelStats) {
        self.decisions += other.decisions;
        self.sent += other.sent;
        self.addressed += other.addressed;
        self.sent_chars += other.sent_chars;
        self.received += other.received;
        self.scratchpad_updates += other.scratchpad_updates;
        self.scratchpad_chars += other.scratchpad_chars;
    }

    /// Share of the messages sent that were addressed to one agent.
    pub fn addressed_share(&self) -> Option<f64> {
        (self.sent > 0).then(|| self.addressed as f64 / self.sent as f64)
    }

    /// Mean length of a message sent, characters.
    pub fn mean_message_chars(&self) -> Option<f64> {
        (self.sent > 0).then(|| self.sent_chars as f64 / self.sent as f64)
    }

    /// Mean length of a note at its update, characters.
    pub fn mean_note_chars(&self) -> Option<f64> {
        (self.scratchpad_updates > 0)
            .then(|| self.scratchpad_chars as f64 / self.scratchpad_updates as f64)
    }
}

/// Reads the message and scratchpad fields of decisions, remembering each agent's last
/// note per episode (as a hash) to count updates.
#[derive(Default)]
pub(super) struct ChannelReader {
    /// Operator, episode index, agent and the hash of its last note.
    last_note: Vec<(String, u32, String, u64)>,
}

impl ChannelReader {
    /// Adds one step record's decision to `stats`; `false` when it has none of the fields.
    pub(super) fn add(&mut self, step: &ReportStep, stats: &mut ChannelStats) -> bool {
        let Some(decision) = &step.decision else {
            return false;
        };
        // Agents that neither talk nor keep notes record nulls and zeros: no row for them.
        let message = decision.message.as_deref();
        let note = decision.scratchpad.as_deref();
        let received = decision.received;
        if message.is_none() && note.is_none() && received.unwrap_or(0) == 0 {
            return false;
        }
        stats.decisions += 1;
        if let Some(text) = message.filter(|m| !m.is_empty()) {
            stats.sent += 1;
            stats.sent_chars += text.chars().count() as u64;
            stats.addressed += u64::from(decision.addressed);
        }
        stats.received += received.unwrap_or(0);
        if let Some(note) = note {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            note.hash(&mut hasher);
            let hash = hasher.finish();
            let known = self
                .last_note
                .iter_mut()
                .find(|(operator, episode, agent, _)| {
                    *episode == step.episode_index
                        && *agent == step.agent_id
                        && *operator == step.operator_id
                });
            let changed = match known {
                Some((_, _, _, last)) => std::mem::replace(last, hash) != hash,
                None => {
                    self.last_note.push((
                        step.operator_id.to_string(),
                        step.episode_index,
                        step.agent_id.to_string(),
                        hash,
                    ));
                    true
                }
            };
            if changed {
                stats.scratchpad_updates += 1;
                stats.scratchpad_chars += note.chars().count() as u64;
            }
        }
        true
    }
}

/// What went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A decision replaced by the default action after an operator or worker error.
    Decision,
    /// A decision replaced by the default action after a missed deadline.
    Timeout,
    /// An episode that failed.
    Episode,
}

impl ErrorKind {
    fn label(self) -> &'static str {
        match self {
            ErrorKind::Decision => "decision errors",
            ErrorKind::Timeout => "timeouts",
            ErrorKind::Episode => "episode errors",
        }
    }
}

/// Errors of one kind of one agent (or, for episode errors, of one operator).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ErrorGroup {
    /// The operator.
    pub operator_id: String,
    /// The agent (none for episode errors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// What went wrong.
    pub kind: ErrorKind,
    /// How often.
    pub count: u64,
    /// Episode index of the first occurrence.
    pub first_episode: u32,
    /// Step of the first occurrence (none for episode errors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_step: Option<u32>,
    /// Its message.
    pub first_message: String,
}

/// Gathers [`ErrorGroup`]s from step and episode records.
#[derive(Default)]
pub(super) struct ErrorReader {
    groups: BTreeMap<(String, Option<String>, ErrorKind), ErrorGroup>,
}

impl ErrorReader {
    fn note(
        &mut self,
        operator_id: &str,
        agent_id: Option<&str>,
        kind: ErrorKind,
        at: (u32, Option<u32>),
        message: impl FnOnce() -> String,
    ) {
        let key = (operator_id.to_owned(), agent_id.map(str::to_owned), kind);
        match self.groups.get_mut(&key) {
            Some(group) => {
                group.count += 1;
                if at < (group.first_episode, group.first_step) {
                    group.first_episode = at.0;
                    group.first_step = at.1;
                    group.first_message = message();
                }
            }
            None => {
                self.groups.insert(
                    key,
                    ErrorGroup {
                        operator_id: operator_id.to_owned(),
                        agent_id: agent_id.map(str::to_owned),
                        kind,
                        count: 1,
                        first_episode: at.0,
                        first_step: at.1,
                        first_message: message(),
                    },
                );
            }
        }
    }

    /// Notes a step record's decision if it fell back after an error or a timeout.
    pub(super) fn add_step(&mut self, step: &ReportStep) {
        let kind = match step.decision_source {
            Some(DecisionSource::Error) => ErrorKind::Decision,
            Some(DecisionSource::Timeout) => ErrorKind::Timeout,
            _ => return,
        };
        self.note(
            &step.operator_id,
            Some(&step.agent_id),
            kind,
            (step.episode_index, Some(step.step_index)),
            || decision_message(step.decision.as_ref()),
        );
    }

    /// Adds the groups of `other`, read from other units.
    pub(super) fn merge(&mut self, other: ErrorReader) {
        for (key, theirs) in other.groups {
            match self.groups.entry(key) {
                std::collections::btree_map::Entry::Vacant(entry) => {
                    entry.insert(theirs);
                }
                std::collections::btree_map::Entry::Occupied(mut entry) => {
                    let mine = entry.get_mut();
                    mine.count += theirs.count;
                    if (theirs.first_episode, theirs.first_step)
                        < (mine.first_episode, mine.first_step)
                    {
                        mine.first_episode = theirs.first_episode;
                        mine.first_step = theirs.first_step;
                        mine.first_message = theirs.first_message;
                    }
                }
            }
        }
    }

    /// Notes an episode that failed.
    pub(super) fn add_episode(&mut self, episode: &EpisodeRecord) {
        if let Some(error) = &episode.error {
            self.note(
                &episode.operator_id,
                None,
                ErrorKind::Episode,
                (episode.episode_index, None),
                || error.clone(),
            );
        }
    }

    /// The groups: operators in `order`, then agent, then kind.
    pub(super) fn finish(self, order: &[String]) -> Vec<ErrorGroup> {
        let mut groups: Vec<ErrorGroup> = self.groups.into_values().collect();
        groups.sort_by_key(|g| {
            (
                order
                    .iter()
                    .position(|o| *o == g.operator_id)
                    .unwrap_or(order.len()),
                g.agent_id.clone(),
                g.kind,
            )
        });
        groups
    }
}

/// Why a decision fell back: its `error`, else its last format error.
fn decision_message(decision: Option<&DecisionFields>) -> String {
    let Some(decision) = decision else {
        return "(no details recorded)".into();
    };
    if let Some(error) = &decision.error {
        return error.to_string();
    }
    decision.last_format_error.as_ref().map_or_else(
        || "(no details recorded)".into(),
        |e| format!("unusable answer: {e}"),
    )
}

/// The agent rows (and the operator row, with several agents) of a figure.
fn rows<'a, T: Copy>(
    op: &'a OperatorReport,
    figure: impl Fn(&super::GroupReport) -> Option<T> + 'a,
) -> impl Iterator<Item = (String, &'a str, T)> + 'a {
    let agents = op
        .groups
        .iter()
        .filter(|g| g.kind == GroupKind::Agent)
        .filter(|g| figure(g).is_some())
        .count();
    op.groups.iter().filter_map(move |g| {
        let value = figure(g)?;
        let name = match g.kind {
            GroupKind::Operator if agents > 1 => "**all**".to_owned(),
            GroupKind::Agent => g.name.clone(),
            _ => return None,
        };
        Some((name, g.who.as_str(), value))
    })
}

fn opt(value: Option<f64>, decimals: usize) -> String {
    value.map_or("–".into(), |v| format!("{v:.decimals$}"))
}

/// The "LLM usage" section: one row per LLM agent of every operator.
pub(super) fn llm_markdown(operators: &[OperatorReport]) -> String {
    let mut body = String::new();
    for op in operators {
        for (name, who, s) in rows(op, |g| g.llm) {
            let _ = writeln!(
                body,
                "| `{}` | {name} | {who} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                op.operator_id,
                s.decisions,
                s.timeouts,
                s.requests,
                s.cache_hits,
                s.prompt_tokens,
                s.completion_tokens,
                opt(s.latency_per_decision_ms(), 0),
                s.parse_rate().map_or("–".into(), pct),
                s.retries,
            );
        }
    }
    if body.is_empty() {
        return body;
    }
    format!(
        "## LLM usage\n\n\
         | operator | agent | who | decisions | timeouts | requests | cache hits | prompt tok | completion tok | latency ms/decision | parse ok | re-prompts |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n{body}\n"
    )
}

/// The "Messages and scratchpads" section: one row per agent that talks or keeps notes.
pub(super) fn channel_markdown(operators: &[OperatorReport]) -> String {
    let mut body = String::new();
    for op in operators {
        for (name, who, s) in rows(op, |g| g.channel) {
            let _ = writeln!(
                body,
                "| `{}` | {name} | {who} | {} | {} | {} | {} | {} | {} |",
                op.operator_id,
                s.sent,
                s.addressed_share().map_or("–".into(), pct),
                opt(s.mean_message_chars(), 1),
                s.received,
                s.scratchpad_updates,
                opt(s.mean_note_chars(), 1),
            );
        }
    }
    if body.is_empty() {
        return body;
    }
    format!(
        "## Messages and scratchpads\n\n\
         | operator | agent | who | sent | addressed | mean length | received | scratchpad updates | mean note length |\n\
         |---|---|---|---|---|---|---|---|---|\n{body}\n"
    )
}

/// The "Errors" section: decision errors and timeouts per agent, failed episodes per
/// operator, each with its first occurrence.
pub(super) fn errors_markdown(errors: &[ErrorGroup]) -> String {
    if errors.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "## Errors\n\n| operator | agent | what | count | first at | first message |\n|---|---|---|---|---|---|\n",
    );
    for e in errors {
        let at = match e.first_step {
            Some(step) => format!("episode {}, step {step}", e.first_episode),
            None => format!("episode {}", e.first_episode),
        };
        let message = e.first_message.replace('|', "\\|").replace('\n', " ");
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {at} | {message} |",
            e.operator_id,
            e.agent_id.as_deref().unwrap_or("–"),
            e.kind.label(),
            e.count,
        );
    }
    out.push('\n');
    out
}

/// CSV rows of the LLM usage beyond the group table's.
pub(super) fn llm_csv(s: &LlmStats, mut put: impl FnMut(&str, String)) {
    put("llm_decisions", s.decisions.to_string());
    put("llm_timeouts", s.timeouts.to_string());
    put("llm_requests", s.requests.to_string());
    put("llm_cache_hits", s.cache_hits.to_string());
    put("llm_latency_ms", s.latency_ms.to_string());
}

/// CSV rows of the messages and scratchpads.
pub(super) fn channel_csv(s: &ChannelStats, mut put: impl FnMut(&str, String)) {
    put("messages_sent", s.sent.to_string());
    put("messages_addressed", s.addressed.to_string());
    if let Some(mean) = s.mean_message_chars() {
        put("message_mean_chars", mean.to_string());
    }
    put("messages_received", s.received.to_string());
    put("scratchpad_updates", s.scratchpad_updates.to_string());
    if let Some(mean) = s.mean_note_chars() {
        put("scratchpad_mean_chars", mean.to_string());
    }
}

/// CSV rows of the errors: `operator,agent|operator,name,<kind>_count|<kind>_first_message,value`.
pub(super) fn errors_csv(errors: &[ErrorGroup], out: &mut String) {
    for e in errors {
        let (group, name) = match &e.agent_id {
            Some(agent) => ("agent", agent.as_str()),
            None => ("operator", e.operator_id.as_str()),
        };
        let kind = match e.kind {
            ErrorKind::Decision => "decision_errors",
            ErrorKind::Timeout => "timeouts",
            ErrorKind::Episode => "episode_errors",
        };
        for (statistic, value) in [
            (kind.to_owned(), e.count.to_string()),
            (format!("{kind}_first_message"), csv_field(&e.first_message)),
        ] {
            let _ = writeln!(
                out,
                "{},{group},{},{statistic},{value}",
                csv_field(&e.operator_id),
                csv_field(name)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Format, Report, build};
    use crate::{Durability, Records, RunDir, synthetic};
    use serde_json::json;

    /// Operator `a`, 2 episodes of 6 steps, 4 agents. green_0 (LLM) at step `s`: 100 + 10
    /// tokens, 50 ms, a cache hit at odd steps, "hello" at even steps (addressed at step
    /// 2), one message read, note "plan A" then "plan B" from step 2, an unusable answer
    /// with 2 re-prompts at step 3. blue_0 misses its deadline at step 4 of episode 1,
    /// which then fails.
    fn run() -> (tempfile::TempDir, Report) {
        let dir = tempfile::tempdir().unwrap();
        let manifest = synthetic::manifest("agents", &["a"], 2, 9);
        let (run, store) = RunDir::create(&dir.path().join("agents"), &manifest).unwrap();
        let mut writer = run.writer(&store, Durability::Flush).unwrap();
        for mut episode in synthetic::run_episodes(&manifest, 6, 4) {
            let index = episode.record.episode_index;
            for (s, step) in episode.steps.iter_mut().enumerate() {
                let green = &mut step[0];
                let mut decision = json!({
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10},
                    "parse_ok": s != 3,
                    "retries": if s == 3 { 2 } else { 0 },
                    "cache_hits": s % 2,
                    "latency_ms": 50,
                    "message": if s % 2 == 0 { "hello" } else { "" },
                    "received": 1,
                    "scratchpad": if s < 2 { "plan A" } else { "plan B" },
                });
                if s == 2 {
                    decision["message_to"] = json!("green_1");
                }
                if s == 3 {
                    decision["format_errors"] = json!(["no action", "no action again"]);
                    green.decision_source = Some(DecisionSource::Error);
                }
                green.decision = Some(decision);
                if index == 1 && s == 4 {
                    step[1].decision_source = Some(DecisionSource::Timeout);
                    step[1].decision = Some(json!({"error": "no decision before the deadline"}));
                }
            }
            if index == 1 {
                episode.record.error = Some("environment synthetic: boom".into());
            }
            synthetic::record_episodes(&mut writer, std::slice::from_ref(&episode), 0).unwrap();
        }
        writer.close().unwrap();
        let report = build(&run, &Records::Store(Box::new(store))).unwrap();
        (dir, report)
    }

    #[test]
    fn agent_figures_are_sums_over_the_records() {
        let (_dir, report) = run();
        let groups = &report.operators[0].groups;
        let green_0 = groups.iter().find(|g| g.name == "green_0").unwrap();
        let llm = green_0.llm.unwrap();
        assert_eq!(
            (
                llm.decisions,
                llm.requests,
                llm.cache_hits,
                llm.prompt_tokens
            ),
            (12, 16, 6, 1200)
        );
        assert_eq!(llm.latency_per_decision_ms(), Some(50.0));
        assert_eq!((llm.parses, llm.parse_ok), (12, 10));
        let channel = green_0.channel.unwrap();
        assert_eq!(
            (channel.sent, channel.addressed, channel.received),
            (6, 2, 12)
        );
        assert_eq!(channel.mean_message_chars(), Some(5.0));
        assert_eq!(channel.scratchpad_updates, 4, "A then B, in each episode");
        assert_eq!(channel.mean_note_chars(), Some(6.0));
        // Team and operator rows sum their agents.
        let green = groups
            .iter()
            .find(|g| g.kind == GroupKind::Team && g.name == "green")
            .unwrap();
        assert_eq!(green.channel, Some(channel));
        assert_eq!(groups[0].channel, Some(channel));
        assert!(
            groups
                .iter()
                .find(|g| g.name == "blue_0")
                .unwrap()
                .channel
                .is_none()
        );

        let errors: Vec<_> = report
            .errors
            .iter()
            .map(|e| {
                (
                    e.agent_id.as_deref(),
                    e.kind,
                    e.count,
                    e.first_episode,
                    e.first_step,
                    e.first_message.as_str(),
                )
            })
            .collect();
        assert_eq!(
            errors,
            [
                (
                    None,
                    ErrorKind::Episode,
                    1,
                    1,
                    None,
                    "environment synthetic: boom"
                ),
                (
                    Some("blue_0"),
                    ErrorKind::Timeout,
                    1,
                    1,
                    Some(4),
                    "no decision before the deadline"
                ),
                (
                    Some("green_0"),
                    ErrorKind::Decision,
                    2,
                    0,
                    Some(3),
                    "unusable answer: no action again"
                ),
            ]
        );
    }

    #[test]
    fn a_model_agent_whose_every_decision_missed_its_deadline_is_in_the_llm_section() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = synthetic::manifest("late", &["a"], 2, 9);
        let (run, store) = RunDir::create(&dir.path().join("late"), &manifest).unwrap();
        let mut writer = run.writer(&store, Durability::Flush).unwrap();
        for mut episode in synthetic::run_episodes(&manifest, 5, 2) {
            for step in &mut episode.steps {
                // green_0, an LLM agent, never answers in time: its records carry no LLM
                // field. blue_0, a random agent, is late once: not an LLM figure.
                for agent in &mut step[..] {
                    if agent.agent_id == "green_0" || agent.step_index == 2 {
                        agent.decision_source = Some(DecisionSource::Timeout);
                        agent.decision = Some(json!({"error": "no decision before the deadline"}));
                    }
                }
            }
            synthetic::record_episodes(&mut writer, std::slice::from_ref(&episode), 0).unwrap();
        }
        writer.close().unwrap();
        let report = build(&run, &Records::Store(Box::new(store))).unwrap();
        let groups = &report.operators[0].groups;
        let llm = |name: &str| groups.iter().find(|g| g.name == name).unwrap().llm;
        let green_0 = llm("green_0").expect("an LLM row though no answer was recorded");
        assert_eq!((green_0.decisions, green_0.timeouts), (0, 10));
        assert_eq!(
            llm("blue_0"),
            None,
            "a random agent's timeouts are no LLM figures"
        );
        let md = report.render(Format::Markdown);
        let row = "| `a` | green_0 | llm/llm | 0 | 10 | 0 | 0 | 0 | 0 | – | – | 0 |";
        assert!(md.contains(row), "{md}");
        assert!(
            report
                .render(Format::Csv)
                .contains("a,agent,green_0,llm_timeouts,10"),
            "{md}"
        );
    }

    #[test]
    fn silent_agents_have_no_channel_figures() {
        let mut record = synthetic::steps(&synthetic::unit("r", "a", 0, 1), 1, 1).remove(0);
        let mut reader = ChannelReader::default();
        let mut stats = ChannelStats::default();
        record.decision = Some(json!({"message": null, "scratchpad": null, "received": 0}));
        let line = serde_json::to_string(&record).unwrap();
        assert!(!reader.add(&serde_json::from_str(&line).unwrap(), &mut stats));
        record.decision = Some(json!({"message": "", "scratchpad": null, "received": 0}));
        let line = serde_json::to_string(&record).unwrap();
        assert!(reader.add(&serde_json::from_str(&line).unwrap(), &mut stats));
        assert_eq!((stats.decisions, stats.sent), (1, 0));
    }

    #[test]
    fn first_occurrences_do_not_depend_on_reading_order() {
        let step = |episode: u32, step: u32, error: &str| {
            let mut record =
                synthetic::steps(&synthetic::unit("r", "a", episode, 1), 1, 1).remove(0);
            record.step_index = step;
            record.decision_source = Some(DecisionSource::Error);
            record.decision = Some(json!({ "error": error }));
            record
        };
        let lines = [step(1, 0, "late"), step(0, 5, "early"), step(0, 7, "later")]
            .map(|record| serde_json::to_string(&record).unwrap());
        let records: Vec<ReportStep> = lines
            .iter()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let first = |order: &[usize]| {
            let mut reader = ErrorReader::default();
            order.iter().for_each(|&i| reader.add_step(&records[i]));
            reader.finish(&["a".into()]).remove(0)
        };
        let forward = first(&[0, 1, 2]);
        assert_eq!(forward, first(&[2, 1, 0]));
        // Read in parts (as units on several threads) and merged: the same.
        let mut merged = ErrorReader::default();
        merged.add_step(&records[2]);
        let mut other = ErrorReader::default();
        other.add_step(&records[0]);
        other.add_step(&records[1]);
        merged.merge(other);
        assert_eq!(forward, merged.finish(&["a".into()]).remove(0));
        assert_eq!(
            (forward.count, forward.first_episode, forward.first_step),
            (3, 0, Some(5))
        );
        assert_eq!(forward.first_message, "early");
    }

    #[test]
    fn sections_render_in_every_format() {
        let (_dir, report) = run();
        let md = report.render(Format::Markdown);
        for needle in [
            "## LLM usage",
            "| `a` | green_0 | llm/llm | 12 | 0 | 16 | 6 | 1200 | 120 | 50 | 83.3% | 4 |",
            "## Messages and scratchpads",
            "| `a` | green_0 | llm/llm | 6 | 33.3% | 5.0 | 12 | 4 | 6.0 |",
            "## Errors",
            "| `a` | green_0 | decision errors | 2 | episode 0, step 3 | unusable answer: no action again |",
            "| `a` | – | episode errors | 1 | episode 1 | environment synthetic: boom |",
        ] {
            assert!(md.contains(needle), "{needle}\n{md}");
        }
        let csv = report.render(Format::Csv);
        for needle in [
            "a,agent,green_0,llm_requests,16",
            "a,agent,green_0,llm_cache_hits,6",
            "a,team,green,scratchpad_updates,4",
            "a,agent,blue_0,timeouts,1",
            "a,operator,a,episode_errors_first_message,environment synthetic: boom",
        ] {
            assert!(csv.contains(needle), "{needle}\n{csv}");
        }
        assert!(csv.lines().all(|l| l.split(',').count() == 5), "{csv}");
        let json: serde_json::Value = serde_json::from_str(&report.render(Format::Json)).unwrap();
        assert_eq!(json["errors"][2]["first_step"], 3);
        assert_eq!(json["operators"][0]["groups"][0]["channel"]["sent"], 6);
    }
}
