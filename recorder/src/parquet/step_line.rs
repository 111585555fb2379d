//! What the export reads of a step line: [`ExportStep`], by a walk over the line's bytes
//! ([`export_step`]) or by `serde_json` where the walk gives way.

use crate::json_walk::{Cursor, is_canonical};
use crate::report::{DecisionFields, decision_fields, named, once};
use crate::unit_lines::{StepSchema, Text};
use mosaic_core::{DecisionSource, Event, Paradigm};
use serde::Deserialize;
use std::borrow::Cow;

/// A step record as the export reads it: text borrowed from its line where it needs no
/// unescaping, every field as [`mosaic_core::record::StepRecord`] has it; events and the
/// decision's details as the JSON text the columns hold.
///
/// Read by [`export_step`], a walk over the line's bytes, or by `serde_json` where that
/// walk gives way: both give the same record (a test holds them together).
#[derive(Debug, PartialEq, Deserialize)]
pub(super) struct ExportStep<'a> {
    #[serde(borrow)]
    pub(super) schema: Cow<'a, str>,
    #[serde(borrow)]
    pub(super) run_id: Cow<'a, str>,
    #[serde(borrow)]
    pub(super) operator_id: Cow<'a, str>,
    #[serde(borrow)]
    pub(super) episode_id: Cow<'a, str>,
    pub(super) episode_index: u32,
    pub(super) seed: u64,
    pub(super) step_index: u32,
    #[serde(borrow)]
    pub(super) agent_id: Cow<'a, str>,
    pub(super) paradigm: Paradigm,
    #[serde(borrow)]
    pub(super) kind: Cow<'a, str>,
    pub(super) action: Option<u32>,
    #[serde(default, borrow)]
    pub(super) action_label: Option<Text<'a>>,
    #[serde(default)]
    pub(super) decision_source: Option<DecisionSource>,
    pub(super) reward: f32,
    pub(super) terminated: bool,
    pub(super) truncated: bool,
    #[serde(default, borrow)]
    pub(super) observation: Option<Text<'a>>,
    #[serde(default)]
    pub(super) events: EventTexts,
    #[serde(default)]
    pub(super) decision: Option<ExportDecision<'a>>,
    #[serde(default)]
    pub(super) decision_us: u64,
    #[serde(default)]
    pub(super) timestamp: u64,
}

impl StepSchema for ExportStep<'_> {
    fn schema(&self) -> &str {
        &self.schema
    }
}

/// A step's events, each as the JSON text `serde_json` writes for it.
#[derive(Debug, Default, PartialEq)]
pub(super) struct EventTexts(pub(super) Vec<Option<String>>);

impl EventTexts {
    fn of(events: &[Event]) -> Self {
        EventTexts(
            events
                .iter()
                .map(|event| serde_json::to_string(event).ok())
                .collect(),
        )
    }
}

impl<'de> Deserialize<'de> for EventTexts {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(EventTexts::of(&Vec::<Event>::deserialize(deserializer)?))
    }
}

/// A step's decision details: the JSON text `serde_json` writes for them once parsed, and
/// the fields the LLM usage table reads.
#[derive(Debug, PartialEq)]
pub(super) struct ExportDecision<'a> {
    pub(super) text: Cow<'a, str>,
    pub(super) fields: DecisionFields<'a>,
}

impl<'de, 'a> Deserialize<'de> for ExportDecision<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Ok(ExportDecision {
            text: Cow::Owned(value.to_string()),
            fields: DecisionFields::of_value(&value).into_owned(),
        })
    }
}

/// The export's record of the step line `line` read by a walk over its bytes, or `None`
/// where the walk gives way to `serde_json` (see [`crate::json_walk`]): for valid lines
/// that is an escaped key, a field given twice, a negative number in a decision's details;
/// events and decision details `serde_json` would write otherwise are read by it alone.
pub(super) fn export_step(line: &[u8]) -> Option<ExportStep<'_>> {
    let mut at = Cursor::new(line)?;
    let (mut schema, mut run_id, mut operator_id, mut episode_id) = (None, None, None, None);
    let (mut episode_index, mut seed, mut step_index) = (None, None, None);
    let (mut agent_id, mut paradigm, mut kind) = (None, None, None);
    let (mut action, mut action_label, mut decision_source) = (None, None, None);
    let (mut reward, mut terminated, mut truncated) = (None, None, None);
    let (mut observation, mut events, mut decision) = (None, None, None);
    let (mut decision_us, mut timestamp) = (None, None);
    at.object(0, |at, key| match key {
        "schema" => once(&mut schema, at.text()?),
        "run_id" => once(&mut run_id, at.text()?),
        "operator_id" => once(&mut operator_id, at.text()?),
        "episode_id" => once(&mut episode_id, at.text()?),
        "episode_index" => once(&mut episode_index, at.u32()?),
        "seed" => once(&mut seed, at.u64()?),
        "step_index" => once(&mut step_index, at.u32()?),
        "agent_id" => once(&mut agent_id, at.text()?),
        "paradigm" => once(&mut paradigm, named::<Paradigm>(&at.text()?)?),
        "kind" => once(&mut kind, at.text()?),
        "action" => {
            let value = if at.null() { None } else { Some(at.u32()?) };
            once(&mut action, value)
        }
        "action_label" => {
            let value = if at.null() {
                None
            } else {
                Some(Text(at.text()?))
            };
            once(&mut action_label, value)
        }
        "decision_source" => {
            let value = match at.null() {
                true => None,
                false => Some(named::<DecisionSource>(&at.text()?)?),
            };
            once(&mut decision_source, value)
        }
        "reward" => {
            at.ws();
            // As serde_json reads an f32 (its own rounding and range checks).
            let value = serde_json::from_slice::<f32>(at.number()?.0).ok()?;
            once(&mut reward, value)
        }
        "terminated" => once(&mut terminated, at.bool()?),
        "truncated" => once(&mut truncated, at.bool()?),
        "observation" => {
            let value = if at.null() {
                None
            } else {
                Some(Text(at.text()?))
            };
            once(&mut observation, value)
        }
        "events" => {
            at.ws();
            let start = at.pos;
            at.skip(1)?;
            let value = match at.since(start) {
                b"[]" => EventTexts::default(),
                raw => EventTexts::of(&serde_json::from_slice::<Vec<Event>>(raw).ok()?),
            };
            once(&mut events, value)
        }
        "decision" => {
            let value = if at.null() {
                None
            } else {
                Some(export_decision(at)?)
            };
            once(&mut decision, value)
        }
        "decision_us" => once(&mut decision_us, at.u64()?),
        "timestamp" => once(&mut timestamp, at.u64()?),
        _ => at.skip(1),
    })?;
    if !at.at_end() {
        return None;
    }
    Some(ExportStep {
        schema: schema?,
        run_id: run_id?,
        operator_id: operator_id?,
        episode_id: episode_id?,
        episode_index: episode_index?,
        seed: seed?,
        step_index: step_index?,
        agent_id: agent_id?,
        paradigm: paradigm?,
        kind: kind?,
        action: action.flatten(),
        action_label: action_label.flatten(),
        decision_source: decision_source.flatten(),
        reward: reward?,
        terminated: terminated?,
        truncated: truncated?,
        observation: observation.flatten(),
        events: events.unwrap_or_default(),
        decision: decision.flatten(),
        decision_us: decision_us.unwrap_or_default(),
        timestamp: timestamp.unwrap_or_default(),
    })
}

/// A decision's details (not `null`) at `at`: their text as it stands when `serde_json`
/// would write it so, else as it writes the parsed value.
fn export_decision<'a>(at: &mut Cursor<'a>) -> Option<ExportDecision<'a>> {
    at.ws();
    let start = at.pos;
    let fields = decision_fields(at)?;
    let raw = at.text_since(start)?;
    let text = match is_canonical(raw.as_bytes()) {
        true => Cow::Borrowed(raw),
        false => Cow::Owned(
            serde_json::from_str::<serde_json::Value>(raw)
                .ok()?
                .to_string(),
        ),
    };
    Some(ExportDecision { text, fields })
}
