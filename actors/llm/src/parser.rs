//! Reading an action (and a message and a scratchpad note) out of model text.
//!
//! Three formats:
//! - `tagged`: `<think>...</think>` (optional) `<action>X</action>`
//!   `<communication>...</communication>` `<scratchpad>...</scratchpad>` (ALEM's format).
//! - `json`: `{"action": "X", "message": "...", "scratchpad": "..."}`, constrained by a JSON
//!   schema whose `action` is an enum of the legal action labels.
//! - `grammar`: the tagged format, constrained by a llama.cpp GBNF grammar whose action is
//!   one of the legal labels.
//!
//! Actions match exactly, then after normalisation (case, spaces, `_`, `-`).

use crate::backend::Constraint;
use mosaic_core::Action;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The output format asked of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputFormat {
    /// XML-like tags, unconstrained.
    Tagged,
    /// A JSON object constrained by a JSON schema.
    #[default]
    Json,
    /// Tags constrained by a GBNF grammar (llama.cpp servers).
    Grammar,
}

/// What the model decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The action.
    pub action: Action,
    /// A message for other agents, already capped; `None` when absent or empty.
    pub message: Option<String>,
    /// A new scratchpad note, already capped; `None` keeps the previous note.
    pub scratchpad: Option<String>,
    /// Reasoning, when the model wrote a `<think>` block.
    pub think: Option<String>,
}

/// Why a model answer could not be used; the text is shown to the model on a re-prompt.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// No action was found.
    #[error("no action found; {0}")]
    NoAction(String),
    /// The action is not one of the environment's actions.
    #[error("`{given}` is not an action; choose one of: {legal}")]
    Unknown {
        /// What the model wrote.
        given: String,
        /// The legal labels.
        legal: String,
    },
    /// The action exists but is not legal now.
    #[error("`{given}` is not legal now; choose one of: {legal}")]
    Illegal {
        /// What the model wrote.
        given: String,
        /// The legal labels.
        legal: String,
    },
    /// The answer is not the expected JSON.
    #[error("invalid JSON answer: {0}")]
    Json(String),
}

/// Parses model answers for one environment's action labels.
#[derive(Clone, Debug)]
pub struct ResponseParser {
    format: OutputFormat,
    labels: Vec<String>,
    normalised: Vec<String>,
    message_cap: usize,
    scratchpad_cap: usize,
}

fn normalise(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace() && *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Keeps at most `cap` characters.
pub fn cap_chars(text: &str, cap: usize) -> String {
    match text.char_indices().nth(cap) {
        Some((cut, _)) => text[..cut].to_owned(),
        None => text.to_owned(),
    }
}

/// The text between `<tag>` and `</tag>` for every occurrence; an unclosed tag runs to the
/// end of the text.
fn tag_contents<'t>(text: &'t str, tag: &str) -> Vec<&'t str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(&open) {
        let body = &rest[start + open.len()..];
        match body.find(&close) {
            Some(end) => {
                found.push(&body[..end]);
                rest = &body[end + close.len()..];
            }
            None => {
                found.push(body);
                break;
            }
        }
    }
    found
}

/// Removes `<think>...</think>` blocks (reasoning may quote tags).
fn strip_think(text: &str) -> (String, Option<String>) {
    let thoughts = tag_contents(text, "think");
    if thoughts.is_empty() {
        return (text.to_owned(), None);
    }
    let mut rest = String::new();
    let mut tail = text;
    while let Some(start) = tail.find("<think>") {
        rest.push_str(&tail[..start]);
        match tail[start..].find("</think>") {
            Some(end) => tail = &tail[start + end + "</think>".len()..],
            None => {
                tail = "";
                break;
            }
        }
    }
    rest.push_str(tail);
    let think = thoughts.join("\n").trim().to_owned();
    (rest, (!think.is_empty()).then_some(think))
}

fn gbnf_literal(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl ResponseParser {
    /// A parser for `labels` (the environment's actions). `message_cap` and
    /// `scratchpad_cap` are in characters; 0 disables the field.
    pub fn new(
        format: OutputFormat,
        labels: &[String],
        message_cap: usize,
        scratchpad_cap: usize,
    ) -> Self {
        Self {
            format,
            labels: labels.to_vec(),
            normalised: labels.iter().map(|l| normalise(l)).collect(),
            message_cap,
            scratchpad_cap,
        }
    }

    /// The format.
    pub fn format(&self) -> OutputFormat {
        self.format
    }

    fn legal_labels(&self, legal: &[bool]) -> Vec<&str> {
        self.labels
            .iter()
            .enumerate()
            .filter(|(i, _)| legal.get(*i).copied().unwrap_or(false))
            .map(|(_, l)| l.as_str())
            .collect()
    }

    /// The legal labels, comma-separated.
    pub fn legal_list(&self, legal: &[bool]) -> String {
        self.legal_labels(legal).join(", ")
    }

    /// Maps text to a legal action: exact match, then normalised match.
    pub fn match_action(&self, given: &str, legal: &[bool]) -> Result<Action, ParseError> {
        let trimmed = given
            .trim()
            .trim_matches(|c: char| c == '"' || c == '\'' || c == '`' || c == '.');
        let is_legal = |i: usize| legal.get(i).copied().unwrap_or(false);
        let exact = self.labels.iter().position(|l| l == trimmed);
        let index = exact.or_else(|| {
            let wanted = normalise(trimmed);
            self.normalised.iter().position(|n| *n == wanted)
        });
        match index {
            Some(i) if is_legal(i) => Ok(Action(i as u32)),
            Some(_) => Err(ParseError::Illegal {
                given: cap_chars(trimmed, 60),
                legal: self.legal_list(legal),
            }),
            None => Err(ParseError::Unknown {
                given: cap_chars(trimmed, 60),
                legal: self.legal_list(legal),
            }),
        }
    }

    fn optional(&self, text: Option<&str>, cap: usize) -> Option<String> {
        if cap == 0 {
            return None;
        }
        let text = text?.trim();
        (!text.is_empty()).then(|| cap_chars(text, cap))
    }

    /// Reads a model answer.
    pub fn parse(&self, text: &str, legal: &[bool]) -> Result<Parsed, ParseError> {
        match self.format {
            OutputFormat::Tagged | OutputFormat::Grammar => self.parse_tagged(text, legal),
            OutputFormat::Json => self.parse_json(text, legal),
        }
    }

    fn parse_tagged(&self, text: &str, legal: &[bool]) -> Result<Parsed, ParseError> {
        let (rest, think) = strip_think(text);
        let actions = tag_contents(&rest, "action");
        let first = actions.first().ok_or_else(|| {
            ParseError::NoAction("write exactly one <action>ACTION</action>".into())
        })?;
        let action = self.match_action(first, legal)?;
        for other in &actions[1..] {
            if self.match_action(other, legal).ok() != Some(action) {
                return Err(ParseError::NoAction(
                    "write exactly one <action>ACTION</action>, not several".into(),
                ));
            }
        }
        let message = tag_contents(&rest, "communication").last().copied();
        let scratchpad = tag_contents(&rest, "scratchpad").last().copied();
        Ok(Parsed {
            action,
            message: self.optional(message, self.message_cap),
            scratchpad: self.optional(scratchpad, self.scratchpad_cap),
            think,
        })
    }

    fn parse_json(&self, text: &str, legal: &[bool]) -> Result<Parsed, ParseError> {
        let (rest, think) = strip_think(text);
        // Unconstrained models wrap JSON in prose or code fences: take the outermost object.
        let object = match (rest.find('{'), rest.rfind('}')) {
            (Some(start), Some(end)) if start < end => &rest[start..=end],
            _ => return Err(ParseError::Json("no JSON object in the answer".into())),
        };
        let value: Value =
            serde_json::from_str(object).map_err(|e| ParseError::Json(e.to_string()))?;
        let action = value.get("action").and_then(Value::as_str).ok_or_else(|| {
            ParseError::NoAction("the object needs a string field `action`".into())
        })?;
        let action = self.match_action(action, legal)?;
        let field = |name: &str| value.get(name).and_then(Value::as_str);
        Ok(Parsed {
            action,
            message: self.optional(field("message"), self.message_cap),
            scratchpad: self.optional(field("scratchpad"), self.scratchpad_cap),
            think,
        })
    }

    /// The answer the model would have written for `parsed`, in this format (history turns
    /// show the model its own past answers in the format it must use).
    pub fn render(
        &self,
        action: Action,
        message: Option<&str>,
        scratchpad: Option<&str>,
    ) -> String {
        let label = self.labels.get(action.index()).map_or("?", String::as_str);
        match self.format {
            OutputFormat::Json => {
                let mut object = serde_json::Map::new();
                object.insert("action".into(), json!(label));
                if self.message_cap > 0 {
                    object.insert("message".into(), json!(message.unwrap_or_default()));
                }
                if self.scratchpad_cap > 0 {
                    object.insert("scratchpad".into(), json!(scratchpad.unwrap_or_default()));
                }
                Value::Object(object).to_string()
            }
            OutputFormat::Tagged | OutputFormat::Grammar => {
                let mut out = format!("<action>{label}</action>");
                if let Some(message) = message.filter(|_| self.message_cap > 0) {
                    out.push_str(&format!("\n<communication>{message}</communication>"));
                }
                if let Some(note) = scratchpad.filter(|_| self.scratchpad_cap > 0) {
                    out.push_str(&format!("\n<scratchpad>{note}</scratchpad>"));
                }
                out
            }
        }
    }

    /// The output constraint sent with a request when `legal` actions are allowed.
    pub fn constraint(&self, legal: &[bool]) -> Constraint {
        let labels = self.legal_labels(legal);
        match self.format {
            OutputFormat::Tagged => Constraint::None,
            OutputFormat::Json => Constraint::JsonSchema {
                name: "decision".into(),
                schema: self.json_schema(&labels),
            },
            OutputFormat::Grammar => Constraint::Grammar {
                grammar: self.grammar(&labels),
            },
        }
    }

    /// The JSON schema of an answer: `action` is an enum of `labels`; every field is
    /// required (OpenAI's strict mode); empty strings mean no message / keep the note.
    pub fn json_schema(&self, labels: &[&str]) -> Value {
        let mut properties = serde_json::Map::new();
        properties.insert("action".into(), json!({ "type": "string", "enum": labels }));
        if self.message_cap > 0 {
            properties.insert(
                "message".into(),
                json!({ "type": "string", "maxLength": self.message_cap }),
            );
        }
        if self.scratchpad_cap > 0 {
            properties.insert(
                "scratchpad".into(),
                json!({ "type": "string", "maxLength": self.scratchpad_cap }),
            );
        }
        let required: Vec<&String> = properties.keys().collect();
        json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        })
    }

    /// A GBNF grammar for the tagged format: one legal action, then optional message and
    /// note of bounded length without `<` or newlines.
    pub fn grammar(&self, labels: &[&str]) -> String {
        let actions: Vec<String> = labels.iter().map(|l| gbnf_literal(l)).collect();
        let mut root = String::from("root ::= \"<action>\" action \"</action>\"");
        let mut rules = format!("action ::= {}\n", actions.join(" | "));
        if self.message_cap > 0 {
            root.push_str(" communication?");
            rules.push_str(&format!(
                "communication ::= \"\\n<communication>\" [^<\\n]{{1,{}}} \"</communication>\"\n",
                self.message_cap
            ));
        }
        if self.scratchpad_cap > 0 {
            root.push_str(" scratchpad?");
            rules.push_str(&format!(
                "scratchpad ::= \"\\n<scratchpad>\" [^<\\n]{{1,{}}} \"</scratchpad>\"\n",
                self.scratchpad_cap
            ));
        }
        format!("{root}\n{rules}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels() -> Vec<String> {
        ["noop", "move_left", "Pick Up", "forward"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn parser(format: OutputFormat) -> ResponseParser {
        ResponseParser::new(format, &labels(), 20, 30)
    }

    const ALL: [bool; 4] = [true, true, true, true];

    #[test]
    fn exact_then_normalised_match() {
        let p = parser(OutputFormat::Tagged);
        assert_eq!(p.match_action("move_left", &ALL), Ok(Action(1)));
        assert_eq!(p.match_action(" Move Left. ", &ALL), Ok(Action(1)));
        assert_eq!(p.match_action("pick_up", &ALL), Ok(Action(2)));
        assert_eq!(p.match_action("\"FORWARD\"", &ALL), Ok(Action(3)));
        assert!(matches!(
            p.match_action("jump", &ALL),
            Err(ParseError::Unknown { .. })
        ));
        let err = p
            .match_action("forward", &[true, false, false, false])
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`forward` is not legal now; choose one of: noop"
        );
    }

    #[test]
    fn tagged_answers() {
        let p = parser(OutputFormat::Tagged);
        let text = "<think>maybe <action>noop</action>?</think>\n<action>forward</action>\n\
                    <communication>  go left, I take the ball and run far away </communication>\n\
                    <scratchpad>ball at 3,4</scratchpad>";
        let parsed = p.parse(text, &ALL).unwrap();
        assert_eq!(parsed.action, Action(3));
        assert_eq!(parsed.message.as_deref(), Some("go left, I take the "));
        assert_eq!(parsed.scratchpad.as_deref(), Some("ball at 3,4"));
        assert!(parsed.think.unwrap().contains("maybe"));
        assert!(matches!(
            p.parse("I will go forward", &ALL),
            Err(ParseError::NoAction(_))
        ));
        assert!(
            p.parse("<action>noop</action><action>forward</action>", &ALL)
                .is_err()
        );
        let unclosed = p.parse("<action>forward", &ALL).unwrap();
        assert_eq!(unclosed.action, Action(3));
        assert_eq!(unclosed.message, None);
    }

    #[test]
    fn json_answers() {
        let p = parser(OutputFormat::Json);
        let parsed = p
            .parse(
                "```json\n{\"action\": \"pick up\", \"message\": \"\", \"scratchpad\": \"x\"}\n```",
                &ALL,
            )
            .unwrap();
        assert_eq!(parsed.action, Action(2));
        assert_eq!(parsed.message, None);
        assert_eq!(parsed.scratchpad.as_deref(), Some("x"));
        assert!(matches!(
            p.parse("{\"act\": 1}", &ALL),
            Err(ParseError::NoAction(_))
        ));
        assert!(matches!(p.parse("{oops}", &ALL), Err(ParseError::Json(_))));
        assert!(matches!(p.parse("", &ALL), Err(ParseError::Json(_))));
    }

    #[test]
    fn rendered_answers_parse_back() {
        for format in [
            OutputFormat::Tagged,
            OutputFormat::Json,
            OutputFormat::Grammar,
        ] {
            let p = parser(format);
            let text = p.render(Action(1), Some("hi"), Some("note"));
            let parsed = p.parse(&text, &ALL).unwrap();
            assert_eq!(parsed.action, Action(1), "{format:?}");
            assert_eq!(parsed.message.as_deref(), Some("hi"));
            assert_eq!(parsed.scratchpad.as_deref(), Some("note"));
        }
    }

    #[test]
    fn schema_lists_only_legal_actions() {
        let p = parser(OutputFormat::Json);
        let Constraint::JsonSchema { schema, .. } = p.constraint(&[true, false, true, false])
        else {
            panic!("json format must give a schema");
        };
        assert_eq!(
            schema["properties"]["action"]["enum"],
            json!(["noop", "Pick Up"])
        );
        assert_eq!(schema["properties"]["message"]["maxLength"], 20);
        assert_eq!(
            schema["required"],
            json!(["action", "message", "scratchpad"])
        );
        let quiet = ResponseParser::new(OutputFormat::Json, &labels(), 0, 0);
        assert_eq!(quiet.json_schema(&["noop"])["required"], json!(["action"]));
    }

    #[test]
    fn grammar_lists_only_legal_actions() {
        let p = parser(OutputFormat::Grammar);
        let Constraint::Grammar { grammar } = p.constraint(&[false, true, true, false]) else {
            panic!("grammar format must give a grammar");
        };
        assert!(
            grammar.contains("action ::= \"move_left\" | \"Pick Up\"\n"),
            "{grammar}"
        );
        assert!(grammar.contains("{1,20}"));
        assert!(!grammar.contains("\"noop\""));
        assert_eq!(gbnf_literal("a\"b\\"), "\"a\\\"b\\\\\"");
    }
}
