//! Step records as JSON lines, fast: the bytes `serde_json` writes for a [`StepRecord`],
//! without serialising again what the records of one episode and one agent share.
//!
//! A step record spends most of its bytes on fields that are the same for every record of
//! its episode (schema, ids, seed) or of its agent (agent id, paradigm, kind). Their bytes
//! are kept per episode and per agent, checked against each record, and copied; the rest is
//! written field by field. The output is byte for byte what `serde_json::to_writer` writes
//! (a test holds the two together), so lines stay comparable across versions.

use mosaic_core::record::StepRecord;
use mosaic_core::{DecisionSource, Paradigm};
use serde::Serialize;

/// Episodes whose shared bytes are kept (more than the sessions running at once is enough).
const EPISODES_KEPT: usize = 16;
/// Agents whose shared bytes are kept.
const AGENTS_KEPT: usize = 64;

/// The fields every record of an episode shares, with their bytes.
#[derive(Debug)]
struct EpisodePart {
    schema: String,
    run_id: String,
    operator_id: String,
    episode_id: String,
    episode_index: u32,
    seed: u64,
    /// From `{` to `"step_index":`.
    bytes: Vec<u8>,
}

impl EpisodePart {
    fn matches(&self, r: &StepRecord) -> bool {
        self.episode_index == r.episode_index
            && self.seed == r.seed
            && self.episode_id == r.episode_id
            && self.operator_id == r.operator_id
            && self.run_id == r.run_id
            && self.schema == r.schema
    }

    fn new(r: &StepRecord) -> Self {
        let mut bytes = Vec::with_capacity(160);
        bytes.extend_from_slice(b"{\"schema\":");
        string(&mut bytes, &r.schema);
        bytes.extend_from_slice(b",\"run_id\":");
        string(&mut bytes, &r.run_id);
        bytes.extend_from_slice(b",\"operator_id\":");
        string(&mut bytes, &r.operator_id);
        bytes.extend_from_slice(b",\"episode_id\":");
        string(&mut bytes, &r.episode_id);
        bytes.extend_from_slice(b",\"episode_index\":");
        number(&mut bytes, r.episode_index);
        bytes.extend_from_slice(b",\"seed\":");
        number(&mut bytes, r.seed);
        bytes.extend_from_slice(b",\"step_index\":");
        Self {
            schema: r.schema.clone(),
            run_id: r.run_id.clone(),
            operator_id: r.operator_id.clone(),
            episode_id: r.episode_id.clone(),
            episode_index: r.episode_index,
            seed: r.seed,
            bytes,
        }
    }
}

/// The fields every record of an agent shares, with their bytes.
#[derive(Debug)]
struct AgentPart {
    agent_id: String,
    paradigm: Paradigm,
    kind: String,
    /// From `,"agent_id":` to `"action":`.
    bytes: Vec<u8>,
}

impl AgentPart {
    fn matches(&self, r: &StepRecord) -> bool {
        self.paradigm == r.paradigm && self.agent_id == r.agent_id && self.kind == r.kind
    }

    fn new(r: &StepRecord) -> Self {
        let mut bytes = Vec::with_capacity(64);
        bytes.extend_from_slice(b",\"agent_id\":");
        string(&mut bytes, &r.agent_id);
        bytes.extend_from_slice(b",\"paradigm\":");
        string(&mut bytes, r.paradigm.name());
        bytes.extend_from_slice(b",\"kind\":");
        string(&mut bytes, &r.kind);
        bytes.extend_from_slice(b",\"action\":");
        Self {
            agent_id: r.agent_id.clone(),
            paradigm: r.paradigm,
            kind: r.kind.clone(),
            bytes,
        }
    }
}

/// Writes step records as JSON lines (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct StepLineEncoder {
    /// Most recently used first.
    episodes: Vec<EpisodePart>,
    agents: Vec<AgentPart>,
}

impl StepLineEncoder {
    /// Appends `record` to `out` as `serde_json` would write it (no newline).
    pub(crate) fn write(
        &mut self,
        out: &mut Vec<u8>,
        record: &StepRecord,
    ) -> serde_json::Result<()> {
        // Every field by name: a field added to `StepRecord` must be added here too.
        let StepRecord {
            schema: _,
            run_id: _,
            operator_id: _,
            episode_id: _,
            episode_index: _,
            seed: _,
            step_index,
            agent_id: _,
            paradigm: _,
            kind: _,
            action,
            action_label,
            decision_source,
            reward,
            terminated,
            truncated,
            observation,
            events,
            decision,
            decision_us,
            timestamp,
        } = record;
        out.extend_from_slice(self.episode_bytes(record));
        number(out, *step_index);
        out.extend_from_slice(self.agent_bytes(record));
        match action {
            Some(action) => number(out, *action),
            None => out.extend_from_slice(b"null"),
        }
        if let Some(label) = action_label {
            out.extend_from_slice(b",\"action_label\":");
            string(out, label);
        }
        if let Some(source) = decision_source {
            out.extend_from_slice(match source {
                DecisionSource::Policy => b",\"decision_source\":\"policy\"",
                DecisionSource::Timeout => b",\"decision_source\":\"timeout\"",
                DecisionSource::Error => b",\"decision_source\":\"error\"",
                DecisionSource::Environment => b",\"decision_source\":\"environment\"",
            });
        }
        out.extend_from_slice(b",\"reward\":");
        value(out, reward)?;
        out.extend_from_slice(if *terminated {
            b",\"terminated\":true"
        } else {
            b",\"terminated\":false"
        });
        out.extend_from_slice(if *truncated {
            b",\"truncated\":true"
        } else {
            b",\"truncated\":false"
        });
        if let Some(observation) = observation {
            out.extend_from_slice(b",\"observation\":");
            string(out, observation);
        }
        if !events.is_empty() {
            out.extend_from_slice(b",\"events\":");
            value(out, events)?;
        }
        if let Some(decision) = decision {
            out.extend_from_slice(b",\"decision\":");
            value(out, decision)?;
        }
        out.extend_from_slice(b",\"decision_us\":");
        number(out, *decision_us);
        out.extend_from_slice(b",\"timestamp\":");
        number(out, *timestamp);
        out.push(b'}');
        Ok(())
    }

    fn episode_bytes(&mut self, record: &StepRecord) -> &[u8] {
        match self.episodes.iter().position(|e| e.matches(record)) {
            Some(0) => {}
            Some(at) => self.episodes[..=at].rotate_right(1),
            None => {
                self.episodes.truncate(EPISODES_KEPT - 1);
                self.episodes.insert(0, EpisodePart::new(record));
            }
        }
        &self.episodes[0].bytes
    }

    fn agent_bytes(&mut self, record: &StepRecord) -> &[u8] {
        let at = match self.agents.iter().position(|a| a.matches(record)) {
            Some(at) => at,
            None => {
                if self.agents.len() == AGENTS_KEPT {
                    self.agents.clear();
                }
                self.agents.push(AgentPart::new(record));
                self.agents.len() - 1
            }
        };
        &self.agents[at].bytes
    }
}

/// A JSON string: copied between quotes when nothing in it needs escaping (what
/// `serde_json` escapes: quotes, backslashes, control characters), else by `serde_json`.
fn string(out: &mut Vec<u8>, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // Writing a string into a vector cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

/// An unsigned integer in decimal, as `serde_json` writes it.
fn number(out: &mut Vec<u8>, n: impl Into<u64>) {
    let mut n: u64 = n.into();
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

fn value<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) -> serde_json::Result<()> {
    serde_json::to_writer(out, v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic;
    use mosaic_core::Event;

    /// One edit of a record.
    type Change = Box<dyn Fn(&mut StepRecord)>;

    fn check(encoder: &mut StepLineEncoder, record: &StepRecord) {
        let mut fast = Vec::new();
        encoder.write(&mut fast, record).unwrap();
        let reference = serde_json::to_vec(record).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&fast),
            String::from_utf8_lossy(&reference)
        );
    }

    #[test]
    fn writes_the_bytes_serde_json_writes() {
        let mut encoder = StepLineEncoder::default();
        // Interleaved episodes of several operators and runs, LLM details included.
        let manifest = synthetic::manifest("run", &["a", "b"], 3, 5);
        let episodes = synthetic::run_episodes(&manifest, 20, 4);
        for step in 0..20 {
            for episode in &episodes {
                for record in &episode.steps[step] {
                    check(&mut encoder, record);
                }
            }
        }
        let mut record = episodes[0].steps[3][1].clone();
        let variants: Vec<Change> = vec![
            Box::new(|r| r.run_id = "quote\"back\\slash\ttab\u{1}é/".into()),
            Box::new(|r| r.agent_id = "\u{7f}ünï\"".into()),
            Box::new(|r| r.kind = "k\n".into()),
            Box::new(|r| r.schema = "mosaic.step/1.9".into()),
            Box::new(|r| r.seed = u64::MAX),
            Box::new(|r| r.episode_index = u32::MAX),
            Box::new(|r| r.step_index = 0),
            Box::new(|r| r.action = None),
            Box::new(|r| r.action_label = None),
            Box::new(|r| r.action_label = Some("say \"hi\"".into())),
            Box::new(|r| r.decision_source = Some(DecisionSource::Timeout)),
            Box::new(|r| r.decision_source = Some(DecisionSource::Error)),
            Box::new(|r| r.decision_source = Some(DecisionSource::Environment)),
            Box::new(|r| r.decision_source = None),
            Box::new(|r| r.reward = -0.05),
            Box::new(|r| r.reward = f32::NAN),
            Box::new(|r| r.reward = f32::INFINITY),
            Box::new(|r| r.reward = 1e-7),
            Box::new(|r| r.reward = 12345.679),
            Box::new(|r| r.terminated = true),
            Box::new(|r| r.truncated = true),
            Box::new(|r| r.observation = Some("line 1\nline \"2\"".into())),
            Box::new(|r| {
                r.events = vec![Event {
                    kind: "goal".into(),
                    agent: Some(1),
                    detail: Some(serde_json::json!({"team": "green", "at": [3, 4]})),
                }]
            }),
            Box::new(|r| r.decision = Some(serde_json::json!({"error": "bad\u{0}"}))),
            Box::new(|r| r.decision = None),
            Box::new(|r| r.decision_us = 0),
            Box::new(|r| r.timestamp = u64::MAX),
        ];
        for paradigm in [
            Paradigm::Rl,
            Paradigm::Llm,
            Paradigm::Vlm,
            Paradigm::Human,
            Paradigm::Scripted,
            Paradigm::Random,
            Paradigm::Noop,
            Paradigm::External,
        ] {
            record.paradigm = paradigm;
            check(&mut encoder, &record);
        }
        for change in &variants {
            change(&mut record);
            check(&mut encoder, &record);
        }
    }

    #[test]
    fn keeps_a_bounded_number_of_episodes_and_agents() {
        let mut encoder = StepLineEncoder::default();
        let mut record = synthetic::steps(&synthetic::unit("r", "op", 0, 1), 1, 1).remove(0);
        for i in 0..100u32 {
            record.episode_index = i;
            record.agent_id = format!("agent_{i}");
            check(&mut encoder, &record);
        }
        assert_eq!(encoder.episodes.len(), EPISODES_KEPT);
        assert!(encoder.agents.len() <= AGENTS_KEPT);
        // The most recent episode is first; an older one moves back to the front.
        assert_eq!(encoder.episodes[0].episode_index, 99);
        record.episode_index = 90;
        check(&mut encoder, &record);
        assert_eq!(encoder.episodes[0].episode_index, 90);
        assert_eq!(encoder.episodes.len(), EPISODES_KEPT);
    }
}
