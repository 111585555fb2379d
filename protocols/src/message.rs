//! The messages of `mosaic/1` (as of `mosaic/1.2`): one JSON object per line, tagged by `type`.
//!
//! Requests from the orchestrator carry an `id`; the worker's reply echoes it, so a reply to
//! the wrong request is detected instead of silently applied. Unknown fields are ignored,
//! so newer minor versions can add optional fields.
//!
//! ```
//! use mosaic_protocols::message::{Message, Ack};
//! let line = br#"{"type":"ping","id":7,"extra":"ignored"}"#;
//! assert_eq!(Message::decode(line).unwrap(), Message::Ping(Ack { id: 7 }));
//! ```

use crate::error::DecodeError;
pub use crate::wire::FrameEncoding;
use crate::wire::{AgentView, WireFrame};
use mosaic_core::{Action, EnvSpec, Event, ObsRequest, Outcome, Paradigm};
use serde::{Deserialize, Serialize};

/// What a worker provides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerKind {
    /// An environment: answers `reset`, `step`, `observe`, `render`, `close`.
    Env,
    /// A policy: answers `init_agent`, `decide`.
    Policy,
}

impl WorkerKind {
    /// The name used on the wire.
    pub fn name(self) -> &'static str {
        match self {
            WorkerKind::Env => "env",
            WorkerKind::Policy => "policy",
        }
    }
}

/// Optional features a worker announces in `hello.capabilities`.
pub mod capability {
    /// Answers `checkpoint` and `restore`.
    pub const CHECKPOINT: &str = "checkpoint";
    /// Sends `heartbeat` while a request takes longer than `welcome.heartbeat_ms`.
    pub const HEARTBEAT: &str = "heartbeat";
    /// Can encode frames as PNG.
    pub const FRAMES_PNG: &str = "frames:png";
    /// Can encode frames as raw RGB.
    pub const FRAMES_RGB: &str = "frames:rgb";
    /// Takes part in the team channel (since `mosaic/1.1`): every `decide` carries the
    /// agent's `inbox`, and the `message` of a decision is posted to the channel.
    pub const MESSAGES: &str = "messages";
    /// A listening worker that checked the orchestrator's `auth` token before its `hello`
    /// (since `mosaic/1.2`).
    pub const AUTH_TOKEN: &str = "auth:token";
}

/// Who may read a channel message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The sender's team only.
    #[default]
    Team,
    /// Every agent.
    All,
}

/// A channel message as its reader gets it: in a policy worker's `decide.inbox`, and in the
/// prompt of a language-model agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// Sender agent id.
    pub from: String,
    /// Recipient, `None` for a broadcast.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Who may read it.
    pub scope: Scope,
    /// Step at which it was posted.
    pub step: u32,
    /// The text (capped).
    pub text: String,
}

/// The worker's first line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// The protocol version the worker speaks, e.g. `mosaic/1`.
    pub protocol: String,
    /// Environment or policy.
    pub worker_kind: WorkerKind,
    /// Optional features (see [`capability`]).
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// For an env worker: its [`EnvSpec`]. For a policy worker: a [`PolicySchema`].
    #[serde(default)]
    pub schema: serde_json::Value,
    /// A name for logs and records, e.g. `gymnasium:MiniGrid-DoorKey-5x5-v0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Hello {
    /// Whether the worker announced `capability`.
    pub fn has(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }

    /// The environment spec of an env worker.
    pub fn env_spec(&self) -> Result<EnvSpec, DecodeError> {
        serde_json::from_value(self.schema.clone()).map_err(|e| DecodeError::Fields {
            kind: "hello.schema (env spec)".into(),
            error: e.to_string(),
        })
    }

    /// The schema of a policy worker (all fields optional).
    pub fn policy_schema(&self) -> Result<PolicySchema, DecodeError> {
        if self.schema.is_null() {
            return Ok(PolicySchema::default());
        }
        serde_json::from_value(self.schema.clone()).map_err(|e| DecodeError::Fields {
            kind: "hello.schema (policy)".into(),
            error: e.to_string(),
        })
    }
}

/// What a policy worker announces about itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PolicySchema {
    /// Observation modalities it reads (the legal actions always come).
    #[serde(default)]
    pub wants: ObsRequest,
    /// The paradigm shown for its agents; `external` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paradigm: Option<Paradigm>,
}

/// The orchestrator accepts the worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Welcome {
    /// The version the orchestrator speaks.
    pub protocol: String,
    /// Identifies this connection in both sides' logs.
    pub session: String,
    /// A busy worker sends `heartbeat` at least this often; 3 silent intervals while a
    /// request is outstanding mean the worker is hung.
    pub heartbeat_ms: u64,
    /// How the worker must encode frames.
    #[serde(default)]
    pub frames: FrameEncoding,
}

/// The orchestrator's first line to a listening worker that asks for a token (since
/// `mosaic/1.2`); sent before the worker's `hello`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Auth {
    /// The version the orchestrator speaks.
    pub protocol: String,
    /// The shared secret (its `Debug` form hides it).
    pub token: Token,
}

/// A shared secret: serialised as the plain string, never shown by `Debug`.
///
/// ```
/// use mosaic_protocols::message::Token;
/// let token = Token::new("s3cret");
/// assert_eq!(format!("{token:?}"), "Token(<redacted>)");
/// assert_eq!(token.expose(), "s3cret");
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Token(String);

impl Token {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Token(secret.into())
    }

    /// The secret itself, for the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// The orchestrator refuses the worker, or (since `mosaic/1.2`, as its first line) a
/// listening worker refuses the orchestrator; the sender closes the connection after it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reject {
    /// Why, for people (names both versions on a version mismatch).
    pub reason: String,
}

/// A request or reply that carries nothing but its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ack {
    /// The request id.
    pub id: u64,
}

/// Which observation modalities, and whether the full render, the orchestrator wants with
/// every `reset`/`step` reply. Masks (legal actions) always come.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Want {
    /// Symbolic tensors.
    #[serde(default)]
    pub symbolic: bool,
    /// Text.
    #[serde(default)]
    pub text: bool,
    /// Per-agent frames.
    #[serde(default)]
    pub frame: bool,
    /// The full render of the world.
    #[serde(default)]
    pub render: bool,
}

impl Want {
    /// The observation part.
    pub fn obs(self) -> ObsRequest {
        ObsRequest {
            symbolic: self.symbolic,
            text: self.text,
            frame: self.frame,
        }
    }

    /// Adds the modalities of `request`.
    pub fn with_obs(self, request: ObsRequest) -> Want {
        Want {
            symbolic: self.symbolic || request.symbolic,
            text: self.text || request.text,
            frame: self.frame || request.frame,
            render: self.render,
        }
    }
}

/// Starts an episode of an env worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reset {
    /// The request id.
    pub id: u64,
    /// The episode seed.
    pub seed: u64,
    /// Environment-specific options (passed to the env's reset).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub options: serde_json::Map<String, serde_json::Value>,
    /// What the reply should contain.
    #[serde(default)]
    pub want: Want,
}

/// The env worker's reply to `reset`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Observations {
    /// The request id.
    pub id: u64,
    /// Agents that must act now, by index.
    pub acting: Vec<usize>,
    /// Observations of (at least) the acting agents.
    #[serde(default)]
    pub agents: Vec<AgentView>,
    /// The full render, when wanted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<WireFrame>,
    /// A spec that replaces the one from `hello` (for envs that know it only after reset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<EnvSpec>,
}

/// Advances an env worker by one step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The request id.
    pub id: u64,
    /// Per agent index: its action, `null` for agents that do not act.
    pub actions: Vec<Option<Action>>,
    /// What the reply should contain.
    #[serde(default)]
    pub want: Want,
}

/// The env worker's reply to `step`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransitionReply {
    /// The request id.
    pub id: u64,
    /// Reward per agent index.
    pub rewards: Vec<f32>,
    /// Per agent: reached a terminal state.
    pub terminated: Vec<bool>,
    /// Per agent: cut off.
    pub truncated: Vec<bool>,
    /// Notable events.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Event>,
    /// Agents that must act next; empty when the episode is over.
    pub acting: Vec<usize>,
    /// Observations of (at least) the acting agents.
    #[serde(default)]
    pub agents: Vec<AgentView>,
    /// The full render, when wanted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<WireFrame>,
    /// Per-agent results, once the episode is over and the game has a winner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Vec<Outcome>>,
    /// Episode metrics, once the episode is over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Asks an env worker for one agent's observation outside `reset`/`step`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Observe {
    /// The request id.
    pub id: u64,
    /// Agent index.
    pub agent: usize,
    /// Modalities wanted.
    #[serde(default)]
    pub want: ObsRequest,
}

/// The env worker's reply to `observe`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ObservationReply {
    /// The request id.
    pub id: u64,
    /// The observation.
    pub view: AgentView,
}

/// The env worker's reply to `render`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rendered {
    /// The request id.
    pub id: u64,
    /// The frame; `null` when the env cannot render.
    #[serde(default)]
    pub frame: Option<WireFrame>,
}

/// Starts an episode for the agent a policy worker plays.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InitAgent {
    /// The request id.
    pub id: u64,
    /// Agent slot name.
    pub agent_id: String,
    /// Agent index.
    pub agent: usize,
    /// The agent's own seed (derived from the episode seed and the agent id): seed all
    /// randomness from it.
    pub seed: u64,
    /// The episode's seed.
    pub episode_seed: u64,
    /// The environment.
    pub env: EnvSpec,
}

/// Asks a policy worker for a decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decide {
    /// The request id.
    pub id: u64,
    /// Environment step index.
    pub step: u32,
    /// What the agent sees.
    pub observation: crate::wire::WireObservation,
    /// Indices of the legal actions.
    pub legal: Vec<u32>,
    /// Milliseconds until the orchestrator takes the default action instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
    /// The channel messages the agent reads at this step, in delivery order (since
    /// `mosaic/1.1`): present, possibly empty, for workers that announced
    /// [`capability::MESSAGES`] and whose slot has a channel; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inbox: Option<Vec<Envelope>>,
}

/// A policy worker's decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecisionReply {
    /// The request id.
    pub id: u64,
    /// The chosen action (must be legal).
    pub action: Action,
    /// Raw model text, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A message to the agent's channel audience, if any (`@agent text` addresses one
    /// agent); posted only by workers that announced [`capability::MESSAGES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Token or compute usage, free-form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<serde_json::Value>,
    /// Anything else to record with the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
}

/// Opaque worker state (checkpoint reply, restore request).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// The request id.
    pub id: u64,
    /// The state, base64.
    pub data: String,
}

/// Error codes of `error` messages.
pub mod code {
    /// A line that is not a valid message.
    pub const BAD_FRAME: &str = "bad_frame";
    /// A message type the receiver does not know.
    pub const UNKNOWN_TYPE: &str = "unknown_type";
    /// A well-formed request that cannot be served now (e.g. `step` before `reset`).
    pub const BAD_REQUEST: &str = "bad_request";
    /// A request for a capability the worker lacks.
    pub const UNSUPPORTED: &str = "unsupported";
    /// An illegal or out-of-range action.
    pub const ILLEGAL_ACTION: &str = "illegal_action";
    /// The worker's own code failed (exception).
    pub const INTERNAL: &str = "internal";
}

/// Something went wrong; `id` names the request it answers, if any.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorReply {
    /// The request id, if the error answers one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// Machine-readable code (see [`code`]).
    pub code: String,
    /// For people.
    pub message: String,
}

/// Every message of the protocol.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    /// Worker → orchestrator, first line.
    Hello(Hello),
    /// Orchestrator → worker: accepted.
    Welcome(Welcome),
    /// Orchestrator → worker: refused; or a listening worker refusing the orchestrator.
    Reject(Reject),
    /// Orchestrator → listening worker, first line: the token (since `mosaic/1.2`).
    Auth(Auth),
    /// Env: start an episode.
    Reset(Reset),
    /// Env: reply to `reset`.
    Observations(Observations),
    /// Env: advance one step.
    Step(Step),
    /// Env: reply to `step`.
    Transition(TransitionReply),
    /// Env: one agent's observation.
    Observe(Observe),
    /// Env: reply to `observe`.
    Observation(ObservationReply),
    /// Env: the full render.
    Render(Ack),
    /// Env: reply to `render`.
    Rendered(Rendered),
    /// Env: release the environment.
    Close(Ack),
    /// Env: reply to `close`.
    Closed(Ack),
    /// Policy: start an episode.
    InitAgent(InitAgent),
    /// Policy: reply to `init_agent`.
    AgentReady(Ack),
    /// Policy: decide.
    Decide(Decide),
    /// Policy: reply to `decide`.
    Decision(DecisionReply),
    /// Liveness probe.
    Ping(Ack),
    /// Reply to `ping`.
    Pong(Ack),
    /// Worker → orchestrator while a request takes long.
    Heartbeat,
    /// Save state.
    Checkpoint(Ack),
    /// Reply to `checkpoint`.
    State(State),
    /// Continue from a saved state.
    Restore(State),
    /// Reply to `restore`.
    Restored(Ack),
    /// Shut down.
    Stop(Ack),
    /// Reply to `stop`; the worker exits after it.
    Stopped(Ack),
    /// A failure.
    Error(ErrorReply),
}

impl Message {
    /// The `type` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            Message::Hello(_) => "hello",
            Message::Welcome(_) => "welcome",
            Message::Reject(_) => "reject",
            Message::Auth(_) => "auth",
            Message::Reset(_) => "reset",
            Message::Observations(_) => "observations",
            Message::Step(_) => "step",
            Message::Transition(_) => "transition",
            Message::Observe(_) => "observe",
            Message::Observation(_) => "observation",
            Message::Render(_) => "render",
            Message::Rendered(_) => "rendered",
            Message::Close(_) => "close",
            Message::Closed(_) => "closed",
            Message::InitAgent(_) => "init_agent",
            Message::AgentReady(_) => "agent_ready",
            Message::Decide(_) => "decide",
            Message::Decision(_) => "decision",
            Message::Ping(_) => "ping",
            Message::Pong(_) => "pong",
            Message::Heartbeat => "heartbeat",
            Message::Checkpoint(_) => "checkpoint",
            Message::State(_) => "state",
            Message::Restore(_) => "restore",
            Message::Restored(_) => "restored",
            Message::Stop(_) => "stop",
            Message::Stopped(_) => "stopped",
            Message::Error(_) => "error",
        }
    }

    /// The request id the message carries (`None` for handshake lines, heartbeats and
    /// errors that answer no request).
    pub fn id(&self) -> Option<u64> {
        match self {
            Message::Hello(_)
            | Message::Welcome(_)
            | Message::Reject(_)
            | Message::Auth(_)
            | Message::Heartbeat => None,
            Message::Reset(m) => Some(m.id),
            Message::Observations(m) => Some(m.id),
            Message::Step(m) => Some(m.id),
            Message::Transition(m) => Some(m.id),
            Message::Observe(m) => Some(m.id),
            Message::Observation(m) => Some(m.id),
            Message::Rendered(m) => Some(m.id),
            Message::InitAgent(m) => Some(m.id),
            Message::Decide(m) => Some(m.id),
            Message::Decision(m) => Some(m.id),
            Message::State(m) | Message::Restore(m) => Some(m.id),
            Message::Render(m)
            | Message::Close(m)
            | Message::Closed(m)
            | Message::AgentReady(m)
            | Message::Ping(m)
            | Message::Pong(m)
            | Message::Checkpoint(m)
            | Message::Restored(m)
            | Message::Stop(m)
            | Message::Stopped(m) => Some(m.id),
            Message::Error(m) => m.id,
        }
    }

    /// Every `type` tag this version knows.
    pub const KINDS: &'static [&'static str] = &[
        "hello",
        "welcome",
        "reject",
        "auth",
        "reset",
        "observations",
        "step",
        "transition",
        "observe",
        "observation",
        "render",
        "rendered",
        "close",
        "closed",
        "init_agent",
        "agent_ready",
        "decide",
        "decision",
        "ping",
        "pong",
        "heartbeat",
        "checkpoint",
        "state",
        "restore",
        "restored",
        "stop",
        "stopped",
        "error",
    ];

    /// Parses one line (without its newline), classifying every failure.
    pub fn decode(line: &[u8]) -> Result<Message, DecodeError> {
        match serde_json::from_slice::<Message>(line) {
            Ok(message) => Ok(message),
            Err(error) => Err(DecodeError::classify(line, &error)),
        }
    }

    /// Appends the message and its newline to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        // Serialising these types cannot fail: every map key is a string and no value is
        // a non-finite float written by hand (serde_json writes NaN as null).
        if serde_json::to_writer(&mut *out, self).is_err() {
            out.extend_from_slice(
                br#"{"type":"error","code":"internal","message":"unserialisable message"}"#,
            );
        }
        out.push(b'\n');
    }

    /// The message as one line, newline included.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        self.encode_into(&mut out);
        out
    }

    /// An `error` reply.
    pub fn error(id: Option<u64>, code: &str, message: impl Into<String>) -> Message {
        Message::Error(ErrorReply {
            id,
            code: code.to_owned(),
            message: message.into(),
        })
    }
}

#[cfg(test)]
mod tests;
