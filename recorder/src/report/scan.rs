//! The quick way to read a [`ReportStep`] from a step line: a walk over the line's bytes
//! that takes the report's fields and skips the others without decoding them.
//!
//! It answers only for lines it reads exactly as `serde_json` would: valid JSON objects
//! whose wanted fields have the expected types, each once. Anything else (an escaped key, a
//! negative number in a decision's details, a field given twice, invalid JSON) gives
//! `None`, and the line is decoded by `serde_json`, which reads it or names what is wrong.

use super::step_fields::{DecisionFields, ReportStep};
use mosaic_core::{DecisionSource, Paradigm};
use serde::de::{DeserializeOwned, IntoDeserializer};
use std::borrow::Cow;

/// How deep values may nest here (less than `serde_json`'s limit: deeper ones are left to
/// it).
const MAX_DEPTH: usize = 100;

/// The report's fields of the step line `line`, or `None` (see the module docs).
pub(super) fn report_step(line: &[u8]) -> Option<ReportStep<'_>> {
    let mut at = Cursor {
        bytes: line,
        pos: 0,
    };
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
                    false => Some(at.decision()?),
                };
                once(&mut decision, fields)
            }
            _ => at.skip(1),
        }
    })?;
    at.ws();
    if at.pos != line.len() {
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
fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(value);
            Some(())
        }
    }
}

/// The unit variant of `T` named `name`, as serde reads it.
fn named<T: DeserializeOwned>(name: &str) -> Option<T> {
    T::deserialize(IntoDeserializer::<serde::de::value::Error>::into_deserializer(name)).ok()
}

/// A value of a decision's details as [`DecisionFields`] reads it.
enum Loose<'a> {
    Unsigned(u64),
    Bool(bool),
    Text(Cow<'a, str>),
    Other,
}

/// A position in a line.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.ws();
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    /// Whether a `null` comes next (then consumed).
    fn null(&mut self) -> bool {
        self.ws();
        let null = self.bytes[self.pos..].starts_with(b"null");
        if null {
            self.pos += 4;
        }
        null
    }

    /// An object: `member` is called with each key and must consume its value.
    fn object(
        &mut self,
        depth: usize,
        mut member: impl FnMut(&mut Self, &str) -> Option<()>,
    ) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.eat(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.pos += 1;
            return Some(());
        }
        loop {
            self.ws();
            let key = match self.text()? {
                Cow::Borrowed(key) => key,
                // Escaped keys are rare: serde reads them.
                Cow::Owned(_) => return None,
            };
            self.eat(b':')?;
            member(self, key)?;
            self.ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b'}' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An array: `item` is called at each item and must consume it.
    fn array(&mut self, depth: usize, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.eat(b'[')?;
        self.ws();
        if self.peek()? == b']' {
            self.pos += 1;
            return Some(());
        }
        loop {
            item(self)?;
            self.ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The end of the string starting at `self.pos` (its opening quote), just past the
    /// closing quote, and whether it has escapes; `None` for an invalid string.
    fn string_end(&self) -> Option<(usize, bool)> {
        let mut i = self.pos + 1;
        let mut escaped = false;
        loop {
            // Up to the next quote or backslash; control characters are invalid in between.
            let next = i + memchr::memchr2(b'"', b'\\', self.bytes.get(i..)?)?;
            if self.bytes[i..next].iter().any(|b| *b < 0x20) {
                return None;
            }
            i = next;
            match self.bytes[i] {
                b'"' => return Some((i + 1, escaped)),
                b'\\' => {
                    escaped = true;
                    match *self.bytes.get(i + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                        b'u' => {
                            let hex = self.bytes.get(i + 2..i + 6)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            i += 6;
                        }
                        _ => return None,
                    }
                }
                _ => return None,
            }
        }
    }

    /// A string: borrowed when it has no escapes, else unescaped by `serde_json`.
    fn text(&mut self) -> Option<Cow<'a, str>> {
        self.ws();
        if self.peek()? != b'"' {
            return None;
        }
        let (end, escaped) = self.string_end()?;
        let raw = &self.bytes[self.pos..end];
        self.pos = end;
        if escaped {
            serde_json::from_slice::<String>(raw).ok().map(Cow::Owned)
        } else {
            std::str::from_utf8(&raw[1..raw.len() - 1])
                .ok()
                .map(Cow::Borrowed)
        }
    }

    /// A number token; `Some(true)` when it is a plain non-negative integer (digits only).
    fn number(&mut self) -> Option<(&'a [u8], bool)> {
        let start = self.pos;
        let digits = |at: &mut Self| {
            let from = at.pos;
            while at.peek().is_some_and(|b| b.is_ascii_digit()) {
                at.pos += 1;
            }
            at.pos > from
        };
        let negative = self.peek()? == b'-';
        if negative {
            self.pos += 1;
        }
        let leading_zero = self.peek()? == b'0';
        if !digits(self) || (leading_zero && self.pos - start > usize::from(negative) + 1) {
            return None;
        }
        let mut plain = !negative;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            plain = false;
            if !digits(self) {
                return None;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            plain = false;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if !digits(self) {
                return None;
            }
        }
        Some((&self.bytes[start..self.pos], plain))
    }

    /// A plain integer fitting in `u32`.
    fn u32(&mut self) -> Option<u32> {
        self.ws();
        match self.number()? {
            (digits, true) => std::str::from_utf8(digits).ok()?.parse().ok(),
            _ => None,
        }
    }

    /// Skips a value, checking it is valid JSON.
    fn skip(&mut self, depth: usize) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'"' => {
                self.pos = self.string_end()?.0;
                Some(())
            }
            b'{' => self.object(depth, |at, _| at.skip(depth + 1)),
            b'[' => self.array(depth, |at| at.skip(depth + 1)),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number().map(|_| ()),
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.bytes[self.pos..]
            .starts_with(word)
            .then(|| self.pos += word.len())
    }

    /// A value of a decision's details.
    fn loose(&mut self) -> Option<Loose<'a>> {
        self.ws();
        match self.peek()? {
            b'"' => self.text().map(Loose::Text),
            b't' => self.literal(b"true").map(|()| Loose::Bool(true)),
            b'f' => self.literal(b"false").map(|()| Loose::Bool(false)),
            b'-' => None, // `-0` is an unsigned zero to serde: left to it.
            b'0'..=b'9' => match self.number()? {
                (digits, true) => Some(
                    // Beyond u64, serde reads a float.
                    std::str::from_utf8(digits)
                        .ok()?
                        .parse()
                        .map_or(Loose::Other, Loose::Unsigned),
                ),
                _ => Some(Loose::Other),
            },
            _ => self.skip(1).map(|()| Loose::Other),
        }
    }

    fn unsigned(&mut self) -> Option<Option<u64>> {
        Some(match self.loose()? {
            Loose::Unsigned(n) => Some(n),
            _ => None,
        })
    }

    fn loose_text(&mut self) -> Option<Option<Cow<'a, str>>> {
        Some(match self.loose()? {
            Loose::Text(text) => Some(text),
            _ => None,
        })
    }

    /// A decision's details (not `null`).
    fn decision(&mut self) -> Option<DecisionFields<'a>> {
        self.ws();
        if self.peek()? != b'{' {
            return self.skip(1).map(|()| DecisionFields::default());
        }
        let mut d = DecisionFields::default();
        self.object(1, |at, key| {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic;
    use serde_json::json;

    /// The quick read of `line` is serde's, when it answers.
    fn same(line: &str) -> bool {
        let quick = report_step(line.as_bytes());
        let slow = serde_json::from_str::<ReportStep>(line).ok();
        if let Some(quick) = &quick {
            assert_eq!(Some(quick), slow.as_ref(), "{line}");
        }
        quick.is_some()
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
