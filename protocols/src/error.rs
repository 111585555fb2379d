//! Errors of the wire layer. Every malformed input has its own variant, naming what was
//! wrong and quoting the start of the offending line.

/// How much of an offending line an error quotes.
pub const EXCERPT_CHARS: usize = 120;

/// The start of `line`, lossily decoded, for error messages.
pub fn excerpt(line: &[u8]) -> String {
    let head = &line[..line.len().min(EXCERPT_CHARS * 4)];
    let text = String::from_utf8_lossy(head);
    let mut out: String = text.chars().take(EXCERPT_CHARS).collect();
    if out.len() < line.len() {
        out.push('…');
    }
    out
}

/// A line could not be framed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FramingError {
    /// A line exceeded the maximum frame length; the rest of it is skipped unread into
    /// memory.
    #[error("frame longer than the limit of {limit} bytes (skipped)")]
    TooLong {
        /// The configured limit.
        limit: usize,
    },
    /// The stream ended in the middle of a line.
    #[error("stream closed in the middle of a frame ({partial} bytes without a newline)")]
    Truncated {
        /// Bytes received of the unfinished line.
        partial: usize,
    },
}

/// A line is not a valid message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Not JSON at all.
    #[error("not JSON ({error}): {excerpt}")]
    NotJson {
        /// The parser's complaint.
        error: String,
        /// The start of the line.
        excerpt: String,
    },
    /// Valid JSON, but not an object (`[1,2]`, `"hi"`, `3`).
    #[error("a JSON {found} where an object was expected: {excerpt}")]
    NotAnObject {
        /// What it was: array, string, number, boolean or null.
        found: &'static str,
        /// The start of the line.
        excerpt: String,
    },
    /// An object without a string `type` field.
    #[error("object without a string `type` field: {excerpt}")]
    MissingType {
        /// The start of the line.
        excerpt: String,
    },
    /// A `type` this version does not know.
    #[error("unknown message type `{kind}`")]
    UnknownType {
        /// The type.
        kind: String,
    },
    /// A known type whose fields are wrong.
    #[error("malformed `{kind}` message: {error}")]
    Fields {
        /// The type.
        kind: String,
        /// The parser's complaint.
        error: String,
    },
}

impl DecodeError {
    /// Works out why `line` failed to parse as a [`crate::Message`] (slow path: errors only).
    pub fn classify(line: &[u8], error: &serde_json::Error) -> DecodeError {
        Self::classify_against(line, error, crate::Message::KINDS)
    }

    /// Works out why `line` failed to parse as a message whose `type` is one of `known`.
    pub fn classify_against(line: &[u8], error: &serde_json::Error, known: &[&str]) -> DecodeError {
        if let Some(shape) = Self::classify_shape(line) {
            return shape;
        }
        let kind = type_tag(line).unwrap_or_default();
        if known.contains(&kind.as_str()) {
            DecodeError::Fields {
                kind,
                error: error.to_string(),
            }
        } else {
            DecodeError::UnknownType {
                kind: kind.chars().take(EXCERPT_CHARS).collect(),
            }
        }
    }

    /// The shape errors (not JSON, not an object, no string `type`) of `line`, or `None`
    /// when it is an object with a string `type`.
    pub fn classify_shape(line: &[u8]) -> Option<DecodeError> {
        let value: serde_json::Value = match serde_json::from_slice(line) {
            Ok(value) => value,
            Err(e) => {
                return Some(DecodeError::NotJson {
                    error: e.to_string(),
                    excerpt: excerpt(line),
                });
            }
        };
        let found = match &value {
            serde_json::Value::Object(map) => {
                return match map.get("type") {
                    Some(serde_json::Value::String(_)) => None,
                    _ => Some(DecodeError::MissingType {
                        excerpt: excerpt(line),
                    }),
                };
            }
            serde_json::Value::Array(_) => "array",
            serde_json::Value::String(_) => "string",
            serde_json::Value::Number(_) => "number",
            serde_json::Value::Bool(_) => "boolean",
            serde_json::Value::Null => "null",
        };
        Some(DecodeError::NotAnObject {
            found,
            excerpt: excerpt(line),
        })
    }
}

fn type_tag(line: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Tag {
        #[serde(rename = "type")]
        kind: String,
    }
    serde_json::from_slice::<Tag>(line).ok().map(|t| t.kind)
}

/// A frame (image) on the wire could not be turned into pixels.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    /// The base64 payload is invalid.
    #[error("frame data is not valid base64: {0}")]
    Base64(String),
    /// The pixels do not match the stated size, or the PNG is broken.
    #[error("{0}")]
    Pixels(String),
    /// The stated size is absurd.
    #[error("frame of {width}x{height} exceeds the limit of {limit} pixels")]
    TooLarge {
        /// Stated width.
        width: u32,
        /// Stated height.
        height: u32,
        /// The limit.
        limit: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(line: &[u8]) -> DecodeError {
        let err = serde_json::from_slice::<crate::Message>(line).unwrap_err();
        DecodeError::classify(line, &err)
    }

    #[test]
    fn each_failure_has_its_variant() {
        assert!(matches!(classify(b"garbage"), DecodeError::NotJson { .. }));
        assert!(matches!(
            classify(b"[1,2]"),
            DecodeError::NotAnObject { found: "array", .. }
        ));
        assert!(matches!(
            classify(b"\"hi\""),
            DecodeError::NotAnObject {
                found: "string",
                ..
            }
        ));
        assert!(matches!(
            classify(b"null"),
            DecodeError::NotAnObject { found: "null", .. }
        ));
        assert!(matches!(
            classify(b"{\"id\":1}"),
            DecodeError::MissingType { .. }
        ));
        assert!(matches!(
            classify(b"{\"type\":7}"),
            DecodeError::MissingType { .. }
        ));
        assert_eq!(
            classify(b"{\"type\":\"dance\"}"),
            DecodeError::UnknownType {
                kind: "dance".into()
            }
        );
        let DecodeError::Fields { kind, error } = classify(b"{\"type\":\"ping\"}") else {
            panic!("expected a field error")
        };
        assert_eq!(kind, "ping");
        assert!(error.contains("id"), "{error}");
    }

    #[test]
    fn excerpts_are_bounded_and_lossy() {
        let long = vec![b'x'; 10_000];
        let e = excerpt(&long);
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
        assert!(e.ends_with('…'));
        assert_eq!(excerpt(b"\xffok"), "\u{fffd}ok");
        let msg = classify(&[b'{'; 500]).to_string();
        assert!(msg.len() < 400, "{msg}");
    }
}
