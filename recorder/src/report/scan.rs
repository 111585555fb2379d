//! The quick way to read a [`ReportStep`] from a step line: a walk over the line's bytes
//! that takes the report's fields and skips the others without decoding them.
//!
//! It answers only for lines it reads exactly as `serde_json` would (the walk is
//! [`crate::json_walk`]'s): valid JSON objects
//! whose wanted fields have the expected types, each once. Anything else (an escaped key, a
//! negative number in a decision's details, a field given twice, invalid JSON) gives
//! `None`, and the line is decoded by `serde_json`, which reads it or names what is wrong.

use super::step_fields::{DecisionFields, ReportStep};
use crate::json_walk::{Cursor, Loose};
use mosaic_core::{DecisionSource, Paradigm};
use serde::de::{DeserializeOwned, IntoDeserializer};

/// The report's fields of the step line `line`, or `None` (see the module docs).
pub(super) fn report_step(line: &[u8]) -> Option<ReportStep<'_>> {
    let mut at = Cursor::new(line)?;
    let mut schema = None;
    let mut operator_id = None;
    let mut episode_index = None;
    let mut step_index = None;
    let mut agent_id = None;
    let mut paradigm = None;
    let mut decision_source: Option<Option<DecisionSource>> = None;
    let mut decision: Option<Option<DecisionFields>> = None;
    at.object(0, |at, key| {
        // A wanted field given twice is an error to serde: left to it.
        match key {
            "schema" => once(&mut schema, at.text()?),
            "operator_id" => once(&mut operator_id, at.text()?),
            "episode_index" => once(&mut episode_index, at.u32()?),
            "step_index" => once(&mut step_index, at.u32()?),
            "agent_id" => once(&mut agent_id, at.text()?),
            "paradigm" => once(&mut paradigm, named::<Paradigm>(&at.text()?)?),
            "decision_source" => {
                let source = match at.null() {
                    true => None,
                    false => Some(named::<DecisionSource>(&at.text()?)?),
                };
                once(&mut decision_source, source)
            }
            "decision" => {
                let fields = match at.null() {
                    true => None,
                    false => Some(decision_fields(at)?),
                };
                once(&mut decision, fields)
            }
            _ => at.skip(1),
        }
    })?;
    if !at.at_end() {
        return None;
    }
    Some(ReportStep {
        schema: schema?,
        operator_id: operator_id?,
        episode_index: episode_index?,
        step_index: step_index?,
        agent_id: agent_id?,
        paradigm: paradigm?,
        decision_source: decision_source.flatten(),
        decision: decision.flatten(),
    })
}

/// Sets `slot` to `value` unless it was set.
pub(crate) fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(value);
            Some(())
        }
    }
}

/// The unit variant of `T` named `name`, as serde reads it.
pub(crate) fn named<T: DeserializeOwned>(name: &str) -> Option<T> {
    T::deserialize(IntoDeserializer::<serde::de::value::Error>::into_deserializer(name)).ok()
}

/// A decision's details (not `null`) at `at`, as [`DecisionFields`] reads them.
pub(crate) fn decision_fields<'a>(at: &mut Cursor<'a>) -> Option<DecisionFields<'a>> {
    at.ws();
    if at.peek()? != b'{' {
        return at.skip(1).map(|()| DecisionFields::default());
    }
    let mut d = DecisionFields::default();
    at.object(1, |at, key| {
        match key {
            "usage" => {
                let (mut prompt, mut completion) = (None, None);
                at.ws();
                if at.peek()? == b'{' {
                    at.object(2, |at, key| match key {
                        "prompt_tokens" => at.unsigned().map(|n| prompt = n),
                        "completion_tokens" => at.unsigned().map(|n| completion = n),
                        _ => at.skip(3),
                    })?;
                } else {
                    at.skip(2)?;
                }
                d.prompt_tokens = prompt;
                d.completion_tokens = completion;
            }
            "parse_ok" => {
                d.parse_ok = match at.loose()? {
                    Loose::Bool(b) => Some(b),
                    _ => None,
                }
            }
            "retries" => d.retries = at.unsigned()?,
            "cache_hits" => d.cache_hits = at.unsigned()?,
            "latency_ms" => d.latency_ms = at.unsigned()?,
            "http_attempts" => d.http_attempts = at.unsigned()?,
            "message" => d.message = at.loose_text()?,
            "message_to" => d.addressed = matches!(at.loose()?, Loose::Text(_)),
            "received" => d.received = at.unsigned()?,
            "scratchpad" => d.scratchpad = at.loose_text()?,
            "error" => d.error = at.loose_text()?,
            "format_errors" => {
                at.ws();
                d.last_format_error = if at.peek()? == b'[' {
                    let mut last = None;
                    at.array(2, |at| {
                        last = Some(at.loose()?);
                        Some(())
                    })?;
                    match last {
                        Some(Loose::Text(text)) => Some(text),
                        _ => None,
                    }
                } else {
                    at.skip(2)?;
                    None
                };
            }
            _ => at.skip(2)?,
        }
        Some(())
    })?;
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic;
    use serde_json::json;

    /// The walk's read of `line` is serde's, when it answers.
    fn same(line: &str) -> bool {
        crate::json_walk::agrees_with_serde(line, report_step)
    }

    #[test]
    fn reads_what_serde_reads_or_leaves_the_line_to_it() {
        let mut record = synthetic::steps(&synthetic::unit("r", "op", 3, 7), 1, 1).remove(0);
        let mut lines = Vec::new();
        for decision in [
            json!({"usage": {"prompt_tokens": 3, "completion_tokens": 4, "x": [1, {"y": null}]},
                   "parse_ok": false, "retries": 2, "cache_hits": 1, "latency_ms": 9,
                   "http_attempts": 3, "message": "a \"quoted\" é\n\u{1}", "message_to": "b",
                   "received": 2, "scratchpad": "s\\t", "error": "e",
                   "format_errors": ["one", "two"], "text": "<action>x</action>\n"}),
            json!({"usage": 5, "parse_ok": 1, "cache_hits": 1.5, "latency_ms": "9",
                   "message": 3, "message_to": 4, "received": true, "scratchpad": [],
                   "error": {}, "format_errors": ["one", 2]}),
            json!({"usage": {"prompt_tokens": 1e3}, "format_errors": "no list", "retries": 0}),
            json!({"format_errors": [], "received": 18446744073709551615u64}),
            json!("text"),
            json!([1, 2]),
            json!(7),
            json!({}),
        ] {
            record.decision = Some(decision);
            lines.push(serde_json::to_string(&record).unwrap());
        }
        record.decision = None;
        record.decision_source = None;
        record.operator_id = "op \"quoted\"".into();
        lines.push(serde_json::to_string(&record).unwrap());
        lines.push(lines[0].replace("\"retries\":2", "\"retries\":18446744073709551616"));
        for line in &lines {
            assert!(same(line), "the quick read gave way on {line}");
        }
        // Left to serde: a negative number in the details, a field twice, invalid JSON,
        // a missing field, a wrong type, trailing bytes.
        let line = &lines[0];
        for odd in [
            line.replace("\"retries\":2", "\"retries\":-2"),
            line.replace("\"step_index\":0", "\"step_index\":0,\"step_index\":1"),
            line.replace("\"step_index\":0", "\"step_index\":01"),
            line.replace("\"step_index\":0", "\"step_index\":0.5"),
            line.replace("\"agent_id\":", "\"agent\":"),
            line.replace("\"paradigm\":\"llm\"", "\"paradigm\":\"martian\""),
            line.replace("\"truncated\":false", "\"truncated\":fals"),
            line.replace("\"reward\":", "\"reward\":--"),
            line.replace("\"text\":\"", "\"text\":\"\\q"),
            format!("{line}x"),
            line[..line.len() - 1].to_owned(),
        ] {
            assert_ne!(&odd, line);
            assert!(!same(&odd), "read quickly: {odd}");
        }
        assert!(same(&format!(" {line} ")));
    }
}
