//! The fields of a step record the report reads ([`ReportStep`]), and of a decision's
//! details ([`DecisionFields`], the contract in the parent module's docs): borrowed from
//! the line, every other field skipped, not built. A field of the details with another
//! type than the contract's is taken as missing, as reading it from a `serde_json::Value`
//! would.

use crate::unit_lines::{StepSchema, Text};
use mosaic_core::{DecisionSource, Paradigm};
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// The fields of a step record the report reads.
#[derive(Debug, PartialEq, Deserialize)]
pub(crate) struct ReportStep<'a> {
    #[serde(borrow)]
    pub(crate) schema: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) operator_id: Cow<'a, str>,
    pub(crate) episode_index: u32,
    pub(crate) step_index: u32,
    #[serde(borrow)]
    pub(crate) agent_id: Cow<'a, str>,
    pub(crate) paradigm: Paradigm,
    #[serde(default)]
    pub(crate) decision_source: Option<DecisionSource>,
    #[serde(default, borrow)]
    pub(crate) decision: Option<DecisionFields<'a>>,
}

impl StepSchema for ReportStep<'_> {
    fn schema(&self) -> &str {
        &self.schema
    }
}

/// The fields of a decision's details the report reads (see the parent module's docs);
/// all missing when the details are no JSON object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DecisionFields<'a> {
    /// `usage.prompt_tokens`.
    pub(crate) prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`.
    pub(crate) completion_tokens: Option<u64>,
    /// `parse_ok`.
    pub(crate) parse_ok: Option<bool>,
    /// `retries`.
    pub(crate) retries: Option<u64>,
    /// `cache_hits`.
    pub(crate) cache_hits: Option<u64>,
    /// `latency_ms`.
    pub(crate) latency_ms: Option<u64>,
    /// `http_attempts`.
    pub(crate) http_attempts: Option<u64>,
    /// `message`.
    pub(crate) message: Option<Cow<'a, str>>,
    /// Whether `message_to` is a string.
    pub(crate) addressed: bool,
    /// `received`.
    pub(crate) received: Option<u64>,
    /// `scratchpad`.
    pub(crate) scratchpad: Option<Cow<'a, str>>,
    /// `error`.
    pub(crate) error: Option<Cow<'a, str>>,
    /// The last of `format_errors`, when it is a string.
    pub(crate) last_format_error: Option<Cow<'a, str>>,
}

impl<'a> DecisionFields<'a> {
    /// The fields of the details `decision`, already parsed.
    #[cfg(any(test, feature = "parquet"))]
    pub(crate) fn of_value(decision: &'a serde_json::Value) -> Self {
        // Deserialising from a value fails on no input: every shape reads as some fields.
        DecisionFields::deserialize(decision).unwrap_or_default()
    }

    /// The same fields, owning their text.
    #[cfg(feature = "parquet")]
    pub(crate) fn into_owned(self) -> DecisionFields<'static> {
        let own = |text: Option<Cow<'_, str>>| text.map(|t| Cow::Owned(t.into_owned()));
        DecisionFields {
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            parse_ok: self.parse_ok,
            retries: self.retries,
            cache_hits: self.cache_hits,
            latency_ms: self.latency_ms,
            http_attempts: self.http_attempts,
            message: own(self.message),
            addressed: self.addressed,
            received: self.received,
            scratchpad: own(self.scratchpad),
            error: own(self.error),
            last_format_error: own(self.last_format_error),
        }
    }
}

/// A JSON value as far as the contract's fields go: the types they may have, or another.
enum Loose<'a> {
    Unsigned(u64),
    Bool(bool),
    Text(Cow<'a, str>),
    Other,
}

impl<'a> Loose<'a> {
    fn unsigned(self) -> Option<u64> {
        match self {
            Loose::Unsigned(n) => Some(n),
            _ => None,
        }
    }

    fn bool(self) -> Option<bool> {
        match self {
            Loose::Bool(b) => Some(b),
            _ => None,
        }
    }

    fn text(self) -> Option<Cow<'a, str>> {
        match self {
            Loose::Text(text) => Some(text),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Loose<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LooseVisitor)
    }
}

/// Drains a sequence the report does not read.
fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Drains a map the report does not read.
fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

struct LooseVisitor;

impl<'de> Visitor<'de> for LooseVisitor {
    type Value = Loose<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Loose::Bool(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Loose::Unsigned(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        // Negative: `as_u64` gives nothing (serde_json visits other integers as u64).
        Ok(u64::try_from(v).map_or(Loose::Other, Loose::Unsigned))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Loose::Other)
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Loose::Text(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Loose::Text(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Loose::Text(Cow::Owned(v)))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Loose::Other)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Loose::Other)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq).map(|()| Loose::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map).map(|()| Loose::Other)
    }
}

/// Implements the visits of every JSON value but objects as `default` (after draining
/// arrays), for visitors that read objects.
macro_rules! non_objects_are {
    ($default:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($default)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($default)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($default)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($default)
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($default)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($default)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok($default)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            skip_seq(seq).map(|()| $default)
        }
    };
}

/// `usage`: prompt and completion tokens.
struct Usage(Option<u64>, Option<u64>);

impl<'de> Deserialize<'de> for Usage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct UsageVisitor;
        impl<'de> Visitor<'de> for UsageVisitor {
            type Value = Usage;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            non_objects_are!(Usage(None, None));
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Usage, A::Error> {
                let mut usage = Usage(None, None);
                while let Some(Text(key)) = map.next_key::<Text>()? {
                    match key.as_ref() {
                        "prompt_tokens" => usage.0 = map.next_value::<Loose>()?.unsigned(),
                        "completion_tokens" => usage.1 = map.next_value::<Loose>()?.unsigned(),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(usage)
            }
        }
        deserializer.deserialize_any(UsageVisitor)
    }
}

/// The last of a list, when it is a string.
struct LastText<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for LastText<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LastVisitor;
        impl<'de> Visitor<'de> for LastVisitor {
            type Value = LastText<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(LastText(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(LastText(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(LastText(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(LastText(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(LastText(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(LastText(None))
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(LastText(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                skip_map(map).map(|()| LastText(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut last = None;
                while let Some(item) = seq.next_element::<Loose>()? {
                    last = Some(item);
                }
                Ok(LastText(last.and_then(Loose::text)))
            }
        }
        deserializer.deserialize_any(LastVisitor)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for DecisionFields<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DecisionVisitor;
        impl<'de> Visitor<'de> for DecisionVisitor {
            type Value = DecisionFields<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            non_objects_are!(DecisionFields::default());
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                // A key given twice counts once, with its last value, as in a parsed object.
                let mut d = DecisionFields::default();
                while let Some(Text(key)) = map.next_key::<Text>()? {
                    match key.as_ref() {
                        "usage" => {
                            let Usage(prompt, completion) = map.next_value()?;
                            d.prompt_tokens = prompt;
                            d.completion_tokens = completion;
                        }
                        "parse_ok" => d.parse_ok = map.next_value::<Loose>()?.bool(),
                        "retries" => d.retries = map.next_value::<Loose>()?.unsigned(),
                        "cache_hits" => d.cache_hits = map.next_value::<Loose>()?.unsigned(),
                        "latency_ms" => d.latency_ms = map.next_value::<Loose>()?.unsigned(),
                        "http_attempts" => {
                            d.http_attempts = map.next_value::<Loose>()?.unsigned();
                        }
                        "message" => d.message = map.next_value::<Loose>()?.text(),
                        "message_to" => {
                            d.addressed = matches!(map.next_value::<Loose>()?, Loose::Text(_));
                        }
                        "received" => d.received = map.next_value::<Loose>()?.unsigned(),
                        "scratchpad" => d.scratchpad = map.next_value::<Loose>()?.text(),
                        "error" => d.error = map.next_value::<Loose>()?.text(),
                        "format_errors" => {
                            d.last_format_error = map.next_value::<LastText>()?.0;
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(d)
            }
        }
        deserializer.deserialize_any(DecisionVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reading_a_line_gives_what_reading_the_parsed_details_gives() {
        let decisions = [
            json!({"usage": {"prompt_tokens": 3, "completion_tokens": 4, "x": [1, {"y": null}]},
                   "parse_ok": false, "retries": 2, "cache_hits": 1, "latency_ms": 9,
                   "http_attempts": 3, "message": "a \"quoted\" é\n", "message_to": "b",
                   "received": 2, "scratchpad": "s\\t", "error": "e",
                   "format_errors": ["one", "two"], "text": "<action>x</action>"}),
            json!({"usage": 5, "parse_ok": 1, "retries": -2, "cache_hits": 1.5,
                   "latency_ms": "9", "message": 3, "message_to": 4, "received": true,
                   "scratchpad": [], "error": {}, "format_errors": ["one", 2]}),
            json!({"usage": {"prompt_tokens": -1}, "format_errors": "no list"}),
            json!({"format_errors": []}),
            json!("text"),
            json!([1, 2]),
            json!(7),
            json!({}),
        ];
        for decision in &decisions {
            let text = decision.to_string();
            let from_line: DecisionFields = serde_json::from_str(&text).unwrap();
            assert_eq!(from_line, DecisionFields::of_value(decision), "{text}");
        }
        let text = decisions[0].to_string();
        let read: DecisionFields = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (read.prompt_tokens, read.retries, read.addressed),
            (Some(3), Some(2), true)
        );
        assert_eq!(read.message.as_deref(), Some("a \"quoted\" é\n"));
        assert_eq!(read.last_format_error.as_deref(), Some("two"));
        let text = decisions[1].to_string();
        let odd: DecisionFields = serde_json::from_str(&text).unwrap();
        assert_eq!(odd, DecisionFields::default());
        // A key given twice: its last value, as in a parsed object.
        let twice: DecisionFields = serde_json::from_str(
            r#"{"usage": {"prompt_tokens": 1}, "usage": {"completion_tokens": 2}}"#,
        )
        .unwrap();
        assert_eq!(
            (twice.prompt_tokens, twice.completion_tokens),
            (None, Some(2))
        );
        assert!(serde_json::from_str::<DecisionFields>(r#"{"usage": {"#).is_err());
    }
}
