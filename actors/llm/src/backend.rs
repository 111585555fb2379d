//! Chat backends: the request and response types, the [`ChatBackend`] trait every layer
//! implements, and [`OpenAiBackend`], the HTTP client for any OpenAI-compatible endpoint
//! (OpenAI, vLLM, llama.cpp's server) built on `async-openai`.

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

/// Who wrote a chat message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions.
    System,
    /// The harness speaking for the environment.
    User,
    /// The model.
    Assistant,
}

/// One part of a multi-modal message.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, as a URL (for frames: a `data:image/png;base64,...` URL).
    ImageUrl {
        /// The image reference.
        image_url: ImageUrl,
    },
}

/// The URL of an image part, in the OpenAI wire layout.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ImageUrl {
    /// `https://...` or `data:image/png;base64,...`.
    pub url: String,
}

/// The content of a chat message: plain text, or parts (text and images).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Text and image parts in order.
    Parts(Vec<ContentPart>),
}

impl Content {
    /// The text of the message (image parts left out).
    pub fn text(&self) -> String {
        match self {
            Content::Text(text) => text.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    ContentPart::Text { text } => Some(text.as_str()),
                    ContentPart::ImageUrl { .. } => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// Number of image parts.
    pub fn images(&self) -> usize {
        match self {
            Content::Text(_) => 0,
            Content::Parts(parts) => parts
                .iter()
                .filter(|p| matches!(p, ContentPart::ImageUrl { .. }))
                .count(),
        }
    }
}

/// One chat message.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Author.
    pub role: Role,
    /// What was said.
    pub content: Content,
}

impl ChatMessage {
    /// A text message.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            content: Content::Text(text.into()),
        }
    }
}

/// How the output is constrained (beyond the prompt's instructions).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Constraint {
    /// Free text.
    None,
    /// `response_format: {type: json_schema}` (OpenAI, vLLM, llama.cpp).
    JsonSchema {
        /// Schema name.
        name: String,
        /// The JSON schema.
        schema: Value,
    },
    /// A GBNF grammar (llama.cpp's `grammar` field).
    Grammar {
        /// The grammar text.
        grammar: String,
    },
}

/// One chat completion request, complete: everything that determines the answer is in
/// here, so it is also the response cache's key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The messages, oldest first.
    pub messages: Vec<ChatMessage>,
    /// Sampling temperature.
    pub temperature: f32,
    /// Completion token limit.
    pub max_tokens: u32,
    /// Sampling seed (servers that honour it sample reproducibly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Output constraint.
    pub constraint: Constraint,
    /// Settings passed through to the backend (reasoning effort, extra body fields);
    /// serialised only when set, so requests without them keep their cache keys.
    #[serde(default, skip_serializing_if = "Passthrough::is_empty")]
    pub passthrough: Passthrough,
}

/// How much a reasoning model thinks before it answers: the `reasoning_effort` field of
/// OpenAI-compatible chat requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    /// `"high"`.
    High,
    /// `"medium"`.
    Medium,
    /// `"low"`.
    Low,
    /// `"minimal"`.
    Minimal,
    /// No reasoning: sends `"none"` (models that cannot turn it off refuse or reason
    /// anyway; servers that switch thinking in the chat template, such as Qwen 3 on vLLM
    /// or llama.cpp, need `extra_body = { chat_template_kwargs = { enable_thinking = false } }`).
    Off,
}

impl ReasoningEffort {
    /// The value sent as `reasoning_effort`.
    pub fn wire(self) -> &'static str {
        match self {
            ReasoningEffort::High => "high",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Off => "none",
        }
    }
}

/// Request settings passed through to the backend as configured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Passthrough {
    /// Sent as `reasoning_effort` when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Fields merged into the request body last: a field the request sets itself (e.g.
    /// `temperature`) is replaced.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra_body: serde_json::Map<String, Value>,
}

impl Passthrough {
    /// Nothing to pass through.
    pub fn is_empty(&self) -> bool {
        self.reasoning_effort.is_none() && self.extra_body.is_empty()
    }
}

impl ChatRequest {
    /// The request body in the OpenAI chat-completions layout for `model`.
    pub fn wire(&self, model: &str) -> Value {
        let mut body = json!({
            "model": model,
            "messages": self.messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "stream": false,
        });
        if let Some(seed) = self.seed {
            body["seed"] = json!(seed);
        }
        match &self.constraint {
            Constraint::None => {}
            Constraint::JsonSchema { name, schema } => {
                body["response_format"] = json!({
                    "type": "json_schema",
                    "json_schema": { "name": name, "schema": schema, "strict": true },
                });
            }
            Constraint::Grammar { grammar } => body["grammar"] = json!(grammar),
        }
        if let Some(effort) = self.passthrough.reasoning_effort {
            body["reasoning_effort"] = json!(effort.wire());
        }
        for (field, value) in &self.passthrough.extra_body {
            body[field.as_str()] = value.clone();
        }
        body
    }
}

/// Tokens used by one request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Prompt tokens the server took from its prefix cache (as reported; depends on
    /// scheduling, so not part of decision records).
    #[serde(default)]
    pub cached_prompt_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_prompt_tokens += other.cached_prompt_tokens;
    }
}

/// The model's answer and what it cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The assistant's text.
    pub text: String,
    /// Why generation stopped (`stop`, `length`), as reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Tokens used.
    pub usage: Usage,
    /// HTTP attempts it took (1 without retries); from the cache: as recorded.
    #[serde(default)]
    pub attempts: u32,
    /// Wall time of the successful call, milliseconds; from the cache: as recorded.
    #[serde(default)]
    pub latency_ms: u64,
    /// Served from the response cache.
    #[serde(default)]
    pub cached: bool,
}

/// Why a backend produced no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BackendError {
    /// The server answered with an error status.
    #[error("HTTP {status}: {body}")]
    Status {
        /// HTTP status code.
        status: u16,
        /// The server's `Retry-After`, if it sent one.
        retry_after: Option<Duration>,
        /// The start of the response body.
        body: String,
    },
    /// The connection failed (refused, reset, DNS).
    #[error("connection failed: {0}")]
    Connect(String),
    /// No answer within the request timeout.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The answer could not be read (truncated body, invalid JSON, no choices).
    #[error("unusable response: {0}")]
    BadResponse(String),
    /// Replay-only mode and the request is not in the cache.
    #[error("replay-only: request {0} is not in the response cache")]
    CacheMiss(String),
    /// Replay-only mode: the recorded run's request failed with this error.
    #[error("{error}")]
    Replayed {
        /// The error as recorded.
        error: String,
        /// HTTP attempts the recorded run made.
        attempts: u32,
    },
    /// The response cache failed.
    #[error("response cache: {0}")]
    Cache(String),
    /// The local model server is not available.
    #[error("local model server: {0}")]
    Server(String),
    /// Retries exhausted; the last error.
    #[error("gave up after {attempts} attempts: {last}")]
    Exhausted {
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error.
        last: Box<BackendError>,
    },
}

impl BackendError {
    /// Whether trying again may help: rate limits, server errors, connection errors,
    /// timeouts and unreadable answers; not authentication or other client errors.
    pub fn is_retryable(&self) -> bool {
        match self {
            BackendError::Status { status, .. } => *status == 429 || *status >= 500,
            BackendError::Connect(_)
            | BackendError::Timeout(_)
            | BackendError::BadResponse(_)
            | BackendError::Server(_) => true,
            BackendError::CacheMiss(_)
            | BackendError::Replayed { .. }
            | BackendError::Cache(_)
            | BackendError::Exhausted { .. } => false,
        }
    }

    /// HTTP attempts made before this error.
    pub fn attempts(&self) -> u32 {
        match self {
            BackendError::Exhausted { attempts, .. } | BackendError::Replayed { attempts, .. } => {
                *attempts
            }
            BackendError::CacheMiss(_) | BackendError::Cache(_) => 0,
            _ => 1,
        }
    }
}

/// What identifies a backend in cache keys: the model and where it is served. For the
/// local server the address is `local` (its port changes from run to run).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BackendIdentity {
    /// Model name as sent to the server.
    pub model: String,
    /// Base URL, or `local`.
    pub base_url: String,
}

/// A boxed backend future.
pub type ChatFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ChatResponse, BackendError>> + Send + 'a>>;

/// Anything that answers chat requests: an HTTP client or a layer around another backend.
pub trait ChatBackend: Send + Sync {
    /// Model and address, for cache keys and records.
    fn identity(&self) -> &BackendIdentity;

    /// Answers one request.
    fn chat<'a>(&'a self, request: &'a ChatRequest) -> ChatFuture<'a>;
}

/// An API key read from the environment. Its `Debug` and `Display` never show it.
#[derive(Clone, Default)]
pub struct ApiKey(Option<Arc<str>>);

impl ApiKey {
    /// No key (local servers).
    pub fn none() -> Self {
        Self(None)
    }

    /// A key given directly (e.g. read from a secret store).
    pub fn new(key: impl Into<Arc<str>>) -> Self {
        Self(Some(key.into()))
    }

    /// Reads the key from the environment variable `var`.
    pub fn from_env(var: &str) -> Result<Self, String> {
        match std::env::var(var) {
            Ok(key) if !key.is_empty() => Ok(Self(Some(key.into()))),
            Ok(_) => Err(format!("environment variable {var} (API key) is empty")),
            Err(_) => Err(format!("environment variable {var} (API key) is not set")),
        }
    }

    /// Replaces every occurrence of the key in `text` (error bodies may echo requests).
    pub fn redact(&self, text: &str) -> String {
        match &self.0 {
            Some(key) if key.len() >= 4 => text.replace(&**key, "[redacted]"),
            _ => text.to_owned(),
        }
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "ApiKey(set)"
        } else {
            "ApiKey(none)"
        })
    }
}

/// The longest piece of an error body kept in errors and records.
const BODY_EXCERPT: usize = 300;

/// An error status seen by the HTTP layer, carried through `async-openai` so the retry
/// layer sees the status and `Retry-After`.
#[derive(Debug)]
struct HttpStatus {
    status: u16,
    retry_after: Option<Duration>,
    body: String,
}

impl fmt::Display for HttpStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP {}: {}", self.status, self.body)
    }
}

impl std::error::Error for HttpStatus {}

/// `Retry-After` in seconds (the HTTP-date form is rare for APIs and falls back to the
/// retry layer's own backoff).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(3600.0)))
}

/// `text` with `key` redacted, then cut to [`BODY_EXCERPT`] characters: redacting first, so
/// that a key straddling the cut leaves no prefix behind.
fn excerpt(key: &ApiKey, text: &str) -> String {
    let text = key.redact(text);
    match text.char_indices().nth(BODY_EXCERPT) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// A successful answer whose body is not JSON, caught before `async-openai` reads it (which
/// would log the whole body, key and all, at error level).
#[derive(Debug)]
struct NotJson {
    error: serde_json::Error,
    /// The start of the body, redacted.
    body: String,
}

impl fmt::Display for NotJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not JSON ({}): {}", self.error, self.body)
    }
}

impl std::error::Error for NotJson {}

/// Any OpenAI-compatible chat endpoint over HTTP, without retries of its own (layers add
/// them).
pub struct OpenAiBackend {
    client: Client<OpenAIConfig>,
    identity: BackendIdentity,
    key: ApiKey,
}

impl fmt::Debug for OpenAiBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiBackend")
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

/// An HTTP client; build every one through here. HTTPS goes through rustls with the
/// operating system's certificate verifier and the process's rustls crypto provider:
/// `ring`, installed by the first client, unless the application installed another before
/// (reqwest is built without a provider of its own: its default, aws-lc, is a long C build).
pub fn http_client() -> reqwest::Client {
    static CHOSEN: Once = Once::new();
    CHOSEN.call_once(|| {
        // An error means the application installed its own provider, which reqwest uses.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::new()
}

impl OpenAiBackend {
    /// A client for `model` at `base_url` (e.g. `https://api.openai.com/v1`,
    /// `http://127.0.0.1:8000/v1`). `identity_url` names the endpoint in cache keys.
    /// Its HTTP client is [`http_client`]'s.
    pub fn new(base_url: &str, model: &str, key: ApiKey, identity_url: &str) -> Self {
        let http = http_client();
        let service_key = key.clone();
        let service = tower::service_fn(move |factory: HttpRequestFactory| {
            let (http, key) = (http.clone(), service_key.clone());
            async move {
                let request = factory.build().await?;
                let response = http.execute(request).await.map_err(OpenAIError::Reqwest)?;
                let status = response.status();
                if !status.is_success() {
                    let retry_after = retry_after(response.headers());
                    let body = response.text().await.unwrap_or_default();
                    return Err(OpenAIError::Boxed(Box::new(HttpStatus {
                        status: status.as_u16(),
                        retry_after,
                        body: excerpt(&key, &body),
                    })));
                }
                // The body is checked here so that async-openai only ever reads JSON.
                let headers = response.headers().clone();
                let body = response.bytes().await.map_err(OpenAIError::Reqwest)?;
                if let Err(error) = serde_json::from_slice::<serde::de::IgnoredAny>(&body) {
                    return Err(OpenAIError::Boxed(Box::new(NotJson {
                        error,
                        body: excerpt(&key, &String::from_utf8_lossy(&body)),
                    })));
                }
                let mut checked = http::Response::new(body);
                *checked.status_mut() = status;
                *checked.headers_mut() = headers;
                Ok(reqwest::Response::from(checked))
            }
        });
        let mut config = OpenAIConfig::new().with_api_base(base_url.trim_end_matches('/'));
        config = config.with_api_key(key.0.as_deref().unwrap_or_default());
        Self {
            client: Client::with_config(config).with_http_service(service),
            identity: BackendIdentity {
                model: model.to_owned(),
                base_url: identity_url.to_owned(),
            },
            key,
        }
    }

    fn map_error(&self, error: OpenAIError) -> BackendError {
        let error = match error {
            OpenAIError::Boxed(boxed) => match boxed.downcast::<HttpStatus>() {
                Ok(status) => BackendError::Status {
                    status: status.status,
                    retry_after: status.retry_after,
                    body: status.body,
                },
                Err(other) => BackendError::BadResponse(other.to_string()),
            },
            OpenAIError::Reqwest(e) if e.is_connect() || e.is_request() => {
                BackendError::Connect(e.to_string())
            }
            OpenAIError::Reqwest(e) if e.is_timeout() => BackendError::Timeout(Duration::ZERO),
            OpenAIError::Reqwest(e) => BackendError::BadResponse(e.to_string()),
            OpenAIError::ApiError(api) => BackendError::Status {
                status: api.status_code.as_u16(),
                retry_after: None,
                body: excerpt(&self.key, &api.api_error.message),
            },
            OpenAIError::JSONDeserialize(e, content) => {
                BackendError::BadResponse(format!("{e}: {}", excerpt(&self.key, &content)))
            }
            other => BackendError::BadResponse(other.to_string()),
        };
        self.redact(error)
    }

    /// The error with the key redacted from its texts, and each cut to an excerpt.
    fn redact(&self, error: BackendError) -> BackendError {
        match error {
            BackendError::Status {
                status,
                retry_after,
                body,
            } => BackendError::Status {
                status,
                retry_after,
                body: excerpt(&self.key, &body),
            },
            BackendError::Connect(m) => BackendError::Connect(excerpt(&self.key, &m)),
            BackendError::BadResponse(m) => BackendError::BadResponse(excerpt(&self.key, &m)),
            other => other,
        }
    }
}

/// The part of a chat-completions answer mosaic reads.
#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<WirePromptDetails>,
}

#[derive(Deserialize)]
struct WirePromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WireChoice {
    message: WireMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
}

/// Reads the answer out of a chat-completions response body.
pub fn parse_wire_response(body: Value) -> Result<ChatResponse, BackendError> {
    let wire: WireResponse = serde_json::from_value(body)
        .map_err(|e| BackendError::BadResponse(format!("not a chat completion: {e}")))?;
    let choice = wire
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| BackendError::BadResponse("the answer has no choices".into()))?;
    Ok(ChatResponse {
        text: choice.message.content.unwrap_or_default(),
        finish_reason: choice.finish_reason,
        usage: wire.usage.map_or_else(Usage::default, |u| Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            cached_prompt_tokens: u
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
        }),
        attempts: 1,
        latency_ms: 0,
        cached: false,
    })
}

impl ChatBackend for OpenAiBackend {
    fn identity(&self) -> &BackendIdentity {
        &self.identity
    }

    fn chat<'a>(&'a self, request: &'a ChatRequest) -> ChatFuture<'a> {
        Box::pin(async move {
            let started = Instant::now();
            let body = request.wire(&self.identity.model);
            let answer: Value = self
                .client
                .chat()
                .create_byot(body)
                .await
                .map_err(|e| self.map_error(e))?;
            let mut response = parse_wire_response(answer).map_err(|e| self.redact(e))?;
            response.latency_ms = started.elapsed().as_millis() as u64;
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_body_carries_constraint_and_seed() {
        let request = ChatRequest {
            messages: vec![ChatMessage::text(Role::User, "hi")],
            temperature: 0.0,
            max_tokens: 8,
            seed: Some(3),
            constraint: Constraint::Grammar {
                grammar: "root ::= \"a\"".into(),
            },
            passthrough: Passthrough::default(),
        };
        let body = request.wire("m");
        assert_eq!(body["model"], "m");
        assert_eq!(body["seed"], 3);
        assert_eq!(body["grammar"], "root ::= \"a\"");
        assert_eq!(body["messages"][0]["role"], "user");
        assert_eq!(body["messages"][0]["content"], "hi");
        assert!(body.get("reasoning_effort").is_none());
    }

    #[test]
    fn wire_body_carries_reasoning_effort_and_extra_fields() {
        let extra = json!({
            "chat_template_kwargs": {"enable_thinking": false},
            "top_p": 0.9,
            "temperature": 0.7,
        });
        let request = ChatRequest {
            messages: vec![ChatMessage::text(Role::User, "hi")],
            temperature: 0.0,
            max_tokens: 8,
            seed: None,
            constraint: Constraint::None,
            passthrough: Passthrough {
                reasoning_effort: Some(ReasoningEffort::Off),
                extra_body: extra.as_object().cloned().unwrap(),
            },
        };
        let body = request.wire("m");
        assert_eq!(body["reasoning_effort"], "none");
        assert_eq!(body["chat_template_kwargs"]["enable_thinking"], false);
        assert_eq!(body["top_p"], 0.9);
        assert_eq!(body["temperature"], 0.7, "extra fields are merged last");
        assert_eq!(body["max_tokens"], 8);
        let efforts = [
            (ReasoningEffort::High, "high"),
            (ReasoningEffort::Medium, "medium"),
            (ReasoningEffort::Low, "low"),
            (ReasoningEffort::Minimal, "minimal"),
        ];
        for (effort, wire) in efforts {
            let request = ChatRequest {
                passthrough: Passthrough {
                    reasoning_effort: Some(effort),
                    extra_body: serde_json::Map::new(),
                },
                ..request.clone()
            };
            assert_eq!(request.wire("m")["reasoning_effort"], wire);
            assert_eq!(
                serde_json::to_value(effort).unwrap(),
                json!(format!("{effort:?}").to_lowercase())
            );
        }
    }

    #[test]
    fn image_parts_use_the_openai_layout() {
        let message = ChatMessage {
            role: Role::User,
            content: Content::Parts(vec![
                ContentPart::Text {
                    text: "look".into(),
                },
                ContentPart::ImageUrl {
                    image_url: ImageUrl {
                        url: "data:image/png;base64,AA==".into(),
                    },
                },
            ]),
        };
        let v = serde_json::to_value(&message).unwrap();
        assert_eq!(v["content"][0]["type"], "text");
        assert_eq!(v["content"][1]["type"], "image_url");
        assert_eq!(
            v["content"][1]["image_url"]["url"],
            "data:image/png;base64,AA=="
        );
        assert_eq!(message.content.images(), 1);
    }

    #[test]
    fn empty_choices_and_garbage_are_bad_responses() {
        let err = parse_wire_response(json!({"choices": []})).unwrap_err();
        assert!(matches!(err, BackendError::BadResponse(_)) && err.is_retryable());
        assert!(parse_wire_response(json!([1, 2])).is_err());
        let ok = parse_wire_response(json!({
            "choices": [{"message": {"content": "x"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6,
                      "prompt_tokens_details": {"cached_tokens": 3}}
        }))
        .unwrap();
        assert_eq!(ok.text, "x");
        assert_eq!(ok.usage.prompt_tokens, 5);
        assert_eq!(ok.usage.cached_prompt_tokens, 3);
    }

    #[test]
    fn retryable_errors() {
        let status = |status| BackendError::Status {
            status,
            retry_after: None,
            body: String::new(),
        };
        assert!(status(429).is_retryable());
        assert!(status(503).is_retryable());
        assert!(!status(401).is_retryable());
        assert!(!status(400).is_retryable());
        assert!(BackendError::Connect("x".into()).is_retryable());
    }

    #[test]
    fn api_key_is_redacted_and_hidden() {
        let key = ApiKey(Some("sk-secret-123".into()));
        assert_eq!(format!("{key:?}"), "ApiKey(set)");
        assert_eq!(key.redact("echo sk-secret-123 !"), "echo [redacted] !");
    }
}
