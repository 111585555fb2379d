//! `mosaic report RUN --lexical`: the style of what each agent wrote, ALEM's Tables 11
//! (messages) and 9 (memory entries), from the step records' decision fields `message`
//! and `scratchpad` ([`crate::lexical`] has the detectors).
//!
//! Its own pass over the complete episodes' step records, asked for explicitly: the
//! regular-expression probes cost far more per decision than the rest of the report.

use super::{Format, csv_field, escape_controls};
use crate::error::Result;
use crate::lexical::{MemoryStyle, MessageStyle};
use crate::run_dir::Records;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What one agent of one operator wrote.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AgentStyle {
    /// The operator.
    pub operator_id: String,
    /// The agent.
    pub agent_id: String,
    /// Its messages to teammates, if it sent any.
    pub messages: Option<MessageStyle>,
    /// Its scratchpad entries, if it wrote any.
    pub memory: Option<MemoryStyle>,
}

/// Every agent that wrote a message or a scratchpad entry, by operator then agent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StyleReport {
    /// One entry per agent that wrote something.
    pub agents: Vec<AgentStyle>,
}

/// An agent's texts: per episode, its messages and its scratchpad entries in step order.
#[derive(Default)]
struct Texts {
    messages: Vec<Vec<String>>,
    memory: Vec<Vec<String>>,
}

/// Reads the style of every agent of `records`' complete episodes.
pub fn build(records: &Records) -> Result<StyleReport> {
    let mut texts: BTreeMap<(String, String), Texts> = BTreeMap::new();
    for unit in records.units()? {
        let mut episode: BTreeMap<&str, (Vec<String>, Vec<String>)> = BTreeMap::new();
        let steps = records.steps_of(&unit)?;
        for step in &steps {
            let Some(decision) = &step.decision else {
                continue;
            };
            let field = |name: &str| decision.get(name).and_then(|v| v.as_str());
            let entry = episode.entry(step.agent_id.as_str()).or_default();
            if let Some(message) = field("message") {
                entry.0.push(message.to_owned());
            }
            if let Some(scratchpad) = field("scratchpad") {
                entry.1.push(scratchpad.to_owned());
            }
        }
        for (agent, (messages, memory)) in episode {
            let agent_texts = texts
                .entry((unit.operator_id.clone(), agent.to_owned()))
                .or_default();
            agent_texts.messages.push(messages);
            agent_texts.memory.push(memory);
        }
    }
    let agents = texts
        .into_iter()
        .map(|((operator_id, agent_id), texts)| AgentStyle {
            operator_id,
            agent_id,
            messages: MessageStyle::of(streams(&texts.messages)),
            memory: MemoryStyle::of(streams(&texts.memory)),
        })
        .filter(|agent| agent.messages.is_some() || agent.memory.is_some())
        .collect();
    Ok(StyleReport { agents })
}

/// Each episode's texts as string slices.
fn streams(episodes: &[Vec<String>]) -> Vec<Vec<&str>> {
    episodes
        .iter()
        .map(|texts| texts.iter().map(String::as_str).collect())
        .collect()
}

/// One figure: its label and how to read it from a style.
type Figure<S> = (&'static str, fn(&S) -> Option<f64>);

const MESSAGE_FIGURES: &[Figure<MessageStyle>] = &[
    ("messages", |s| Some(s.messages as f64)),
    ("message characters", |s| Some(s.characters)),
    ("message words", |s| Some(s.words)),
    ("sentences / message", |s| Some(s.sentences)),
    ("multi-sentence (≥ 2), % of msgs", |s| {
        Some(s.multi_sentence_pct)
    }),
    ("contains imperative verb, %", |s| Some(s.imperative_pct)),
    ("imperative verbs / message", |s| Some(s.imperatives)),
    ("broadcast phrasing (let's / we), %", |s| {
        Some(s.broadcast_pct)
    }),
    ("addresses a teammate (\"Agent X,\"), %", |s| {
        Some(s.addresses_teammate_pct)
    }),
    ("acknowledgement, %", |s| Some(s.acknowledgement_pct)),
    ("question, %", |s| Some(s.question_pct)),
    ("exclamation mark, %", |s| Some(s.exclamation_pct)),
    ("please / thanks, %", |s| Some(s.politeness_pct)),
    ("urgency word, %", |s| Some(s.urgency_pct)),
    ("coordinate, %", |s| Some(s.coordinate_pct)),
    ("plan / future-tense word, %", |s| Some(s.plan_pct)),
    ("past-tense / memory word, %", |s| Some(s.past_pct)),
    ("self-references / message", |s| Some(s.self_references)),
    ("char similarity vs. previous", |s| s.char_similarity),
    ("Jaccard vs. previous", |s| s.jaccard),
    ("same as previous, %", |s| s.verbatim_pct),
];

const MEMORY_FIGURES: &[Figure<MemoryStyle>] = &[
    ("entries", |s| Some(s.entries as f64)),
    ("entry characters", |s| Some(s.characters)),
    ("entry lines", |s| Some(s.lines)),
    ("multi-line (≥ 2 lines), %", |s| Some(s.multi_line_pct)),
    ("turn-indexed plan, %", |s| Some(s.turn_plan_pct)),
    ("compact state summary, %", |s| Some(s.state_summary_pct)),
    ("plan / future-tense word, %", |s| Some(s.plan_pct)),
    ("past-tense / memory word, %", |s| Some(s.past_pct)),
    ("coordinate reference, %", |s| Some(s.coordinate_pct)),
    ("teammate reference, %", |s| Some(s.teammate_pct)),
    ("coordinate references / entry", |s| Some(s.coordinates)),
    ("plan terms / entry", |s| Some(s.plan_terms)),
    ("char similarity vs. previous", |s| s.char_similarity),
    ("Jaccard vs. previous", |s| s.jaccard),
];

impl StyleReport {
    /// The report in `format`; CSV is tidy: `operator,agent,table,statistic,value`.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Markdown => escape_controls(&self.markdown()),
            Format::Json => serde_json::to_string_pretty(self).unwrap_or_default() + "\n",
            Format::Csv => escape_controls(&self.csv()),
        }
    }

    fn markdown(&self) -> String {
        let mut out = String::new();
        let messages: Vec<(&AgentStyle, &MessageStyle)> = self
            .agents
            .iter()
            .filter_map(|a| a.messages.as_ref().map(|m| (a, m)))
            .collect();
        table(
            &mut out,
            "## Message style (ALEM Table 11)\n\nPer agent, over its messages to teammates: means per message, shares in % of messages, similarity to its previous message in the episode.",
            &messages,
            MESSAGE_FIGURES,
        );
        let memory: Vec<(&AgentStyle, &MemoryStyle)> = self
            .agents
            .iter()
            .filter_map(|a| a.memory.as_ref().map(|m| (a, m)))
            .collect();
        table(
            &mut out,
            "## Memory entries (ALEM Table 9)\n\nPer agent, over its scratchpad entries: means per entry, shares in % of entries, similarity to its previous entry in the episode.",
            &memory,
            MEMORY_FIGURES,
        );
        if out.is_empty() {
            out.push_str("No agent sent a message or wrote a scratchpad entry.\n");
        }
        out
    }

    fn csv(&self) -> String {
        let mut out = String::from("operator,agent,table,statistic,value\n");
        for agent in &self.agents {
            let mut put = |table: &str, name: &str, value: Option<f64>| {
                if let Some(value) = value {
                    let _ = writeln!(
                        out,
                        "{},{},{table},{},{value}",
                        csv_field(&agent.operator_id),
                        csv_field(&agent.agent_id),
                        csv_field(name)
                    );
                }
            };
            if let Some(style) = &agent.messages {
                MESSAGE_FIGURES
                    .iter()
                    .for_each(|(name, read)| put("messages", name, read(style)));
            }
            if let Some(style) = &agent.memory {
                MEMORY_FIGURES
                    .iter()
                    .for_each(|(name, read)| put("memory", name, read(style)));
            }
        }
        out
    }
}

/// A transposed table: one row per figure, one column per agent (`operator/agent`).
fn table<S>(out: &mut String, heading: &str, agents: &[(&AgentStyle, &S)], figures: &[Figure<S>]) {
    if agents.is_empty() {
        return;
    }
    let _ = write!(out, "{heading}\n\n| |");
    for (agent, _) in agents {
        let _ = write!(out, " `{}/{}` |", agent.operator_id, agent.agent_id);
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(agents.len()));
    out.push('\n');
    for (name, read) in figures {
        let _ = write!(out, "| {name} |");
        for (_, style) in agents {
            let cell = read(style).map_or("–".to_owned(), |v| match v.fract() == 0.0 {
                true => format!("{v:.0}"),
                false => format!("{v:.2}"),
            });
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic;

    #[test]
    fn each_agents_messages_and_entries_in_episode_order() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = synthetic::manifest("style", &["a"], 2, 5);
        let mut episodes = synthetic::run_episodes(&manifest, 3, 2);
        // Agent 0 writes; agent 1 only acts.
        for episode in &mut episodes {
            for step in episode.steps.iter_mut().flatten() {
                step.decision = match step.agent_id.as_str() {
                    "green_0" => Some(serde_json::json!({
                        "message": format!("Agent 1, go to ({}, 2) now!", step.step_index),
                        "scratchpad": "T1: go\nT2: wait",
                    })),
                    _ => None,
                };
            }
        }
        let (run, store) = crate::RunDir::create(&dir.path().join("style"), &manifest).unwrap();
        let mut writer = run.writer(&store, crate::Durability::Flush).unwrap();
        synthetic::record_episodes(&mut writer, &episodes, 0).unwrap();
        writer.close().unwrap();
        let report = build(&Records::Store(Box::new(store))).unwrap();
        assert_eq!(report.agents.len(), 1);
        let agent = &report.agents[0];
        assert_eq!(
            (agent.operator_id.as_str(), agent.agent_id.as_str()),
            ("a", "green_0")
        );
        let messages = agent.messages.unwrap();
        assert_eq!(messages.messages, 6);
        assert_eq!(messages.imperative_pct, 100.0);
        assert_eq!(messages.coordinate_pct, 100.0);
        // Consecutive messages differ in one digit; none repeats verbatim.
        assert_eq!(messages.verbatim_pct, Some(0.0));
        let memory = agent.memory.unwrap();
        assert_eq!((memory.entries, memory.turn_plan_pct), (6, 100.0));
        assert_eq!(memory.char_similarity, Some(1.0));
        let md = report.render(Format::Markdown);
        assert!(md.contains("| | `a/green_0` |"), "{md}");
        assert!(md.contains("| messages | 6 |"), "{md}");
        assert!(md.contains("| turn-indexed plan, % | 100 |"), "{md}");
        let csv = report.render(Format::Csv);
        assert!(csv.contains("a,green_0,messages,messages,6\n"), "{csv}");
    }
}
