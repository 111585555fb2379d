//! Compatibility with MOSAIC's (the Python platform's) operator workers, unmodified.
//!
//! MOSAIC workers have no handshake: they print `{"type":"init",...}` on start and then
//! answer `{"cmd": ...}` commands. Env-owning ("autonomous") workers answer `reset` with
//! `ready` and `step` with `step` (plus `episode_end` or `episode_done` when the episode
//! ends); action-selector workers answer `init_agent` with `agent_ready` or
//! `agent_initialized` and `select_action` with `action_selected`. Both answer `ping` with
//! `pong`, `stop` with `stopped`, failures with `error{message}`. Frames come as nested
//! JSON lists (`render_payload: {"mode":"rgb","rgb":[[[r,g,b],...],...]}`), decoded here
//! straight into pixels without building a JSON tree.
//!
//! ```
//! use mosaic_protocols::mosaic::{Command, Reply};
//! assert_eq!(Command::Ping.encode(), b"{\"cmd\":\"ping\"}\n");
//! let reply = Reply::decode(br#"{"type":"agent_initialized","player_id":"p0"}"#).unwrap();
//! assert_eq!(reply, Reply::AgentReady);
//! ```

use crate::error::DecodeError;
use mosaic_core::Frame;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A command to a MOSAIC worker.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum Command {
    /// Start an episode (env-owning workers).
    Reset {
        /// Episode seed.
        seed: u64,
        /// Step limit.
        #[serde(skip_serializing_if = "Option::is_none")]
        max_steps: Option<u32>,
    },
    /// One step (env-owning workers); workers that take input (human) use `action`,
    /// the others choose their own.
    Step {
        /// The action.
        #[serde(skip_serializing_if = "Option::is_none")]
        action: Option<u32>,
    },
    /// Start playing a seat (action-selector workers).
    InitAgent {
        /// The game, e.g. `chess_v6`.
        game_name: String,
        /// The seat, e.g. `player_0`.
        player_id: String,
    },
    /// Choose an action (action-selector workers).
    SelectAction {
        /// The observation: text, or the symbolic tensor as a flat list.
        observation: serde_json::Value,
        /// The seat.
        player_id: String,
        /// Legal actions.
        #[serde(skip_serializing_if = "Option::is_none")]
        action_mask: Option<Vec<bool>>,
        /// Extra information.
        #[serde(skip_serializing_if = "Option::is_none")]
        info: Option<serde_json::Value>,
    },
    /// Liveness probe.
    Ping,
    /// Shut down.
    Stop,
}

impl Command {
    /// The command as one line, newline included.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec(self).unwrap_or_else(|_| b"{\"cmd\":\"ping\"}".to_vec());
        out.push(b'\n');
        out
    }
}

/// A MOSAIC worker's reply.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    /// The unprompted start line (also seen if a worker restarts its loop).
    Init,
    /// After `reset`.
    Ready {
        /// The first frame, if the worker renders.
        #[serde(default)]
        render_payload: Option<RenderPayload>,
    },
    /// After `step`.
    Step(StepReply),
    /// After a step that ended the episode (both names exist in MOSAIC).
    #[serde(alias = "episode_done")]
    EpisodeEnd,
    /// After `init_agent` (both names exist in MOSAIC).
    #[serde(alias = "agent_initialized")]
    AgentReady,
    /// After `select_action`.
    ActionSelected {
        /// The chosen action.
        action: i64,
    },
    /// After `ping`.
    Pong,
    /// After `stop`.
    Stopped,
    /// A failure.
    Error {
        /// What went wrong.
        #[serde(default)]
        message: String,
    },
}

/// MOSAIC's `step` reply.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct StepReply {
    /// The action the worker took (it may choose its own).
    #[serde(default)]
    pub action: Option<serde_json::Value>,
    /// Reward of this step.
    #[serde(default)]
    pub reward: f64,
    /// Terminal state reached.
    #[serde(default)]
    pub terminated: bool,
    /// Cut off.
    #[serde(default)]
    pub truncated: bool,
    /// The frame, if the worker renders.
    #[serde(default)]
    pub render_payload: Option<RenderPayload>,
}

/// A MOSAIC render payload, decoded to pixels (`None` for modes other than `rgb`).
#[derive(Clone, Debug, PartialEq)]
pub struct RenderPayload(pub Option<Frame>);

impl Reply {
    /// Parses one line, with the same error classes as [`crate::Message::decode`].
    pub fn decode(line: &[u8]) -> Result<Reply, DecodeError> {
        serde_json::from_slice(line)
            .map_err(|error| DecodeError::classify_against(line, &error, KNOWN_REPLIES))
    }
}

/// Every reply `type` MOSAIC workers send.
pub const KNOWN_REPLIES: &[&str] = &[
    "init",
    "ready",
    "step",
    "episode_end",
    "episode_done",
    "agent_ready",
    "agent_initialized",
    "action_selected",
    "pong",
    "stopped",
    "error",
];

/// MOSAIC's start line, if `line` is one.
pub fn parse_init(line: &[u8]) -> Option<serde_json::Map<String, serde_json::Value>> {
    match serde_json::from_slice::<serde_json::Value>(line).ok()? {
        serde_json::Value::Object(map) if map.get("type")? == "init" => Some(map),
        _ => None,
    }
}

impl<'de> Deserialize<'de> for RenderPayload {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            #[serde(default)]
            mode: Option<String>,
            #[serde(default)]
            rgb: Option<NestedRgb>,
            #[serde(default)]
            width: Option<u32>,
            #[serde(default)]
            height: Option<u32>,
        }
        let raw = Option::<Raw>::deserialize(deserializer)?;
        let Some(raw) = raw else {
            return Ok(RenderPayload(None));
        };
        if raw.mode.as_deref().is_some_and(|m| m != "rgb") {
            return Ok(RenderPayload(None));
        }
        let Some(rgb) = raw.rgb else {
            return Ok(RenderPayload(None));
        };
        let frame = Frame {
            width: rgb.width,
            height: rgb.height,
            rgb: rgb.pixels,
        };
        if raw.width.is_some_and(|w| w != frame.width)
            || raw.height.is_some_and(|h| h != frame.height)
        {
            return Err(de::Error::custom(format!(
                "render_payload says {}x{} but its rows hold {}x{}",
                raw.width.unwrap_or(frame.width),
                raw.height.unwrap_or(frame.height),
                frame.width,
                frame.height
            )));
        }
        Ok(RenderPayload(Some(frame)))
    }
}

/// Rows of columns of `[r, g, b]` triples, streamed into a flat buffer.
struct NestedRgb {
    width: u32,
    height: u32,
    pixels: Vec<u8>,
}

impl<'de> Deserialize<'de> for NestedRgb {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(RowsVisitor)
    }
}

struct RowsVisitor;

impl<'de> Visitor<'de> for RowsVisitor {
    type Value = NestedRgb;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of rows of [r, g, b] pixels")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut rows: A) -> Result<NestedRgb, A::Error> {
        let mut out = NestedRgb {
            width: 0,
            height: 0,
            pixels: Vec::new(),
        };
        while let Some(row) = rows.next_element_seed(RowSeed(&mut out.pixels))? {
            if out.height == 0 {
                out.width = row;
            } else if row != out.width {
                return Err(de::Error::custom(format!(
                    "row {} has {row} pixels, row 0 has {}",
                    out.height, out.width
                )));
            }
            out.height += 1;
        }
        Ok(out)
    }
}

struct RowSeed<'a>(&'a mut Vec<u8>);

impl<'de> de::DeserializeSeed<'de> for RowSeed<'_> {
    type Value = u32;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<u32, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RowSeed<'_> {
    type Value = u32;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a row of [r, g, b] pixels")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut pixels: A) -> Result<u32, A::Error> {
        let mut count = 0u32;
        while let Some([r, g, b]) = pixels.next_element::<[u8; 3]>()? {
            self.0.extend_from_slice(&[r, g, b]);
            count += 1;
        }
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_use_mosaic_names() {
        let lines: Vec<String> = [
            Command::Reset {
                seed: 4,
                max_steps: Some(9),
            },
            Command::Step { action: Some(2) },
            Command::Step { action: None },
            Command::InitAgent {
                game_name: "chess_v6".into(),
                player_id: "player_0".into(),
            },
            Command::SelectAction {
                observation: serde_json::json!("board"),
                player_id: "player_0".into(),
                action_mask: Some(vec![true, false]),
                info: None,
            },
            Command::Stop,
        ]
        .iter()
        .map(|c| String::from_utf8(c.encode()).unwrap())
        .collect();
        assert_eq!(
            lines,
            [
                "{\"cmd\":\"reset\",\"seed\":4,\"max_steps\":9}\n",
                "{\"cmd\":\"step\",\"action\":2}\n",
                "{\"cmd\":\"step\"}\n",
                "{\"cmd\":\"init_agent\",\"game_name\":\"chess_v6\",\"player_id\":\"player_0\"}\n",
                "{\"cmd\":\"select_action\",\"observation\":\"board\",\"player_id\":\"player_0\",\"action_mask\":[true,false]}\n",
                "{\"cmd\":\"stop\"}\n",
            ]
        );
    }

    #[test]
    fn replies_with_both_spellings() {
        let decode = |s: &str| Reply::decode(s.as_bytes()).unwrap();
        assert_eq!(
            decode(r#"{"type":"episode_end","total_reward":1}"#),
            Reply::EpisodeEnd
        );
        assert_eq!(decode(r#"{"type":"episode_done"}"#), Reply::EpisodeEnd);
        assert_eq!(
            decode(r#"{"type":"agent_ready","run_id":"r"}"#),
            Reply::AgentReady
        );
        assert_eq!(decode(r#"{"type":"agent_initialized"}"#), Reply::AgentReady);
        assert_eq!(
            decode(r#"{"type":"action_selected","action":3,"action_str":"3"}"#),
            Reply::ActionSelected { action: 3 }
        );
        assert_eq!(decode(r#"{"type":"pong"}"#), Reply::Pong);
        assert_eq!(decode(r#"{"type":"stopped"}"#), Reply::Stopped);
        assert_eq!(decode(r#"{"type":"init","version":"1.0"}"#), Reply::Init);
        assert_eq!(
            decode(r#"{"type":"error","message":"boom"}"#),
            Reply::Error {
                message: "boom".into()
            }
        );
        assert_eq!(
            decode(r#"{"type":"ready","seed":1,"render_payload":null}"#),
            Reply::Ready {
                render_payload: None
            }
        );
    }

    #[test]
    fn nested_render_payloads_become_frames() {
        let line = r#"{"type":"step","action":2,"reward":0.5,"terminated":false,"truncated":true,
            "render_payload":{"mode":"rgb","rgb":[[[1,2,3],[4,5,6]],[[7,8,9],[10,11,12]],[[0,0,0],[255,255,255]]],"width":2,"height":3}}"#;
        let Reply::Step(step) = Reply::decode(line.replace('\n', "").as_bytes()).unwrap() else {
            panic!("not a step")
        };
        assert_eq!(step.reward, 0.5);
        assert!(step.truncated && !step.terminated);
        let frame = step.render_payload.unwrap().0.unwrap();
        assert_eq!((frame.width, frame.height), (2, 3));
        assert_eq!(&frame.rgb[..6], &[1, 2, 3, 4, 5, 6]);
        frame.validate().unwrap();
        let other_mode = r#"{"type":"ready","render_payload":{"mode":"ansi","text":"x"}}"#;
        assert_eq!(
            Reply::decode(other_mode.as_bytes()).unwrap(),
            Reply::Ready {
                render_payload: Some(RenderPayload(None))
            }
        );
    }

    #[test]
    fn broken_replies_are_typed_errors() {
        let ragged = r#"{"type":"step","render_payload":{"mode":"rgb","rgb":[[[1,2,3]],[[1,2,3],[4,5,6]]]}}"#;
        let err = Reply::decode(ragged.as_bytes()).unwrap_err();
        assert!(
            matches!(&err, DecodeError::Fields { kind, error } if kind == "step" && error.contains("row 1")),
            "{err}"
        );
        let lying =
            r#"{"type":"step","render_payload":{"mode":"rgb","rgb":[[[1,2,3]]],"width":5}}"#;
        assert!(Reply::decode(lying.as_bytes()).is_err());
        let bad_pixel = r#"{"type":"step","render_payload":{"rgb":[[[1,2,300]]]}}"#;
        assert!(matches!(
            Reply::decode(bad_pixel.as_bytes()),
            Err(DecodeError::Fields { .. })
        ));
        assert!(matches!(
            Reply::decode(b"[]"),
            Err(DecodeError::NotAnObject { .. })
        ));
        assert!(matches!(
            Reply::decode(b"nope"),
            Err(DecodeError::NotJson { .. })
        ));
        assert!(matches!(
            Reply::decode(b"{}"),
            Err(DecodeError::MissingType { .. })
        ));
        assert!(matches!(
            Reply::decode(br#"{"type":"selected"}"#),
            Err(DecodeError::UnknownType { kind }) if kind == "selected"
        ));
        assert!(parse_init(br#"{"type":"ready"}"#).is_none());
        assert!(parse_init(b"[1]").is_none());
    }
}
