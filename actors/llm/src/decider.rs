//! The LLM (and VLM) decider: one actor per agent slot answering [`BeginEpisode`] and
//! [`Decide`] with PromptBuilder -> backend -> ResponseParser, plus the agent's rolling
//! history, scratchpad and inbox.
//!
//! Each decision's `detail` records: `prompt` (the final request's messages, with
//! `record_prompt = true`) or `prompt_key` (its response-cache key), `raw` (the last
//! answer, cut to `max_answer_chars`; then `raw_chars` holds its whole length), `parse_ok`,
//! `retries` (format re-prompts), `format_errors`, `message`,
//! `scratchpad`, `received` (messages read), `usage.{prompt_tokens,completion_tokens}`,
//! `latency_ms`, `http_attempts`, `cache_hits` (answers served from the response cache;
//! volatile like `latency_ms`, since a replay serves every answer from it), and `error`
//! when the backend failed.

use crate::backend::{
    BackendError, ChatBackend, ChatMessage, ChatRequest, Content, ContentPart, Passthrough, Role,
    Usage,
};
use crate::layers::CacheKey;
use crate::parser::{Parsed, ResponseParser};
use crate::prompt::{CurrentTurn, PromptBuilder, Turn};
use actix::prelude::*;
use base64::Engine as _;
use mosaic_actors::channel::{Envelope, Post, Voice};
use mosaic_actors::error::DEADLINE_MISSED;
use mosaic_actors::{BeginEpisode, Decide, DeciderError, LoadState, SaveState};
use mosaic_core::{Action, Decision, DecisionSource, Observation};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// What a decider needs that does not change between episodes.
#[derive(Clone)]
pub struct DeciderConfig {
    /// The agent's id.
    pub agent: String,
    /// The agent's part in the session's channel; `None` when it does not talk.
    pub voice: Option<Voice>,
    /// Builds prompts.
    pub prompt: PromptBuilder,
    /// Reads answers.
    pub parser: ResponseParser,
    /// Past turns kept.
    pub history: usize,
    /// Frames sent (0: text only).
    pub max_image_history: usize,
    /// Sampling temperature.
    pub temperature: f32,
    /// Completion token limit.
    pub max_tokens: u32,
    /// Longest answer kept in `raw` and sent back in re-prompts, characters.
    pub max_answer_chars: usize,
    /// Format re-prompts before the default action.
    pub retries: u32,
    /// Settings passed through to the backend with every request.
    pub passthrough: Passthrough,
    /// Render `info.visible_teammates` (observation mode `visible_teammates`).
    pub visible_teammates: bool,
    /// Record whole prompts instead of cache keys.
    pub record_prompt: bool,
    /// The action taken when no usable answer comes.
    pub default_action: Action,
    /// Where requests missing from a replay-only cache are reported.
    pub replay_misses: Arc<ReplayMisses>,
}

/// A request that a replay-only run did not find in its response cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayMiss {
    /// The agent that asked.
    pub agent: String,
    /// The episode's seed.
    pub episode_seed: u64,
    /// The environment step.
    pub step: u32,
    /// The request's cache key.
    pub key: String,
}

impl std::fmt::Display for ReplayMiss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "agent `{}` (episode seed {}, step {}) sent request {}, which the response cache does not hold",
            self.agent, self.episode_seed, self.step, self.key
        )
    }
}

/// The replay misses of a run: how many, and the first.
#[derive(Debug, Default)]
pub struct ReplayMisses(Mutex<(u64, Option<ReplayMiss>)>);

impl ReplayMisses {
    fn note(&self, miss: ReplayMiss) {
        let mut misses = match self.0.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        misses.0 += 1;
        misses.1.get_or_insert(miss);
    }

    /// Forgets the misses (a new cache starts a new count).
    pub(crate) fn clear(&self) {
        match self.0.lock() {
            Ok(mut guard) => *guard = (0, None),
            Err(poisoned) => *poisoned.into_inner() = (0, None),
        }
    }

    /// How many requests missed, and the first of them.
    pub fn summary(&self) -> (u64, Option<ReplayMiss>) {
        match self.0.lock() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// The serialisable state of a decider (checkpointed with the step records).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmState {
    /// The agent's seed for this episode (sent as the sampling seed).
    pub seed: u64,
    /// Past turns, oldest first.
    pub history: VecDeque<Turn>,
    /// The private note.
    pub scratchpad: Option<String>,
    /// PNG data URLs of recent frames, oldest first.
    pub frames: VecDeque<String>,
}

/// Per-agent accounting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageTally {
    /// Decisions made.
    pub decisions: u64,
    /// Requests sent (re-prompts included).
    pub requests: u64,
    /// Decisions that fell back to the default action.
    pub fallbacks: u64,
    /// Unusable answers (each caused a re-prompt or the fallback).
    pub format_errors: u64,
    /// Tokens.
    pub usage: Usage,
    /// Summed request latency, milliseconds.
    pub latency_ms: u64,
}

impl UsageTally {
    fn add(&mut self, other: &UsageTally) {
        self.decisions += other.decisions;
        self.requests += other.requests;
        self.fallbacks += other.fallbacks;
        self.format_errors += other.format_errors;
        self.usage += other.usage;
        self.latency_ms += other.latency_ms;
    }
}

/// An agent's usage in the current episode and since the decider started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentUsage {
    /// This episode.
    pub episode: UsageTally,
    /// Every episode so far.
    pub total: UsageTally,
}

/// Asks a decider for its usage.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "AgentUsage")]
pub struct GetUsage;

/// Asks a decider for its state (checkpoint).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "LlmState")]
pub struct GetState;

/// Restores a decider's state (resume from a checkpoint).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct RestoreState(pub LlmState);

/// The LLM/VLM decider actor.
pub struct LlmDecider {
    config: Arc<DeciderConfig>,
    backend: Arc<dyn ChatBackend>,
    state: LlmState,
    usage: AgentUsage,
    episode_seed: u64,
}

impl LlmDecider {
    /// A decider for one agent slot.
    pub fn new(config: DeciderConfig, backend: Arc<dyn ChatBackend>) -> Self {
        Self {
            config: Arc::new(config),
            backend,
            state: LlmState::default(),
            usage: AgentUsage::default(),
            episode_seed: 0,
        }
    }
}

impl Actor for LlmDecider {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(1024);
    }
}

impl Handler<BeginEpisode> for LlmDecider {
    type Result = Result<(), DeciderError>;

    fn handle(&mut self, msg: BeginEpisode, _: &mut Context<Self>) -> Self::Result {
        self.state = LlmState {
            seed: msg.ctx.seed,
            ..LlmState::default()
        };
        self.episode_seed = msg.ctx.episode_seed;
        self.usage.episode = UsageTally::default();
        Ok(())
    }
}

impl Handler<GetUsage> for LlmDecider {
    type Result = MessageResult<GetUsage>;

    fn handle(&mut self, _: GetUsage, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.usage)
    }
}

impl Handler<GetState> for LlmDecider {
    type Result = MessageResult<GetState>;

    fn handle(&mut self, _: GetState, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.state.clone())
    }
}

impl Handler<RestoreState> for LlmDecider {
    type Result = ();

    fn handle(&mut self, msg: RestoreState, _: &mut Context<Self>) {
        self.state = msg.0;
    }
}

impl Handler<SaveState> for LlmDecider {
    type Result = Result<Option<serde_json::Value>, DeciderError>;

    fn handle(&mut self, _: SaveState, _: &mut Context<Self>) -> Self::Result {
        serde_json::to_value(&self.state)
            .map(Some)
            .map_err(|e| DeciderError::State(e.to_string()))
    }
}

impl Handler<LoadState> for LlmDecider {
    type Result = Result<(), DeciderError>;

    fn handle(&mut self, msg: LoadState, _: &mut Context<Self>) -> Self::Result {
        self.state = LlmState::deserialize(msg.0)
            .map_err(|e| DeciderError::State(format!("not an LLM decider state: {e}")))?;
        Ok(())
    }
}

/// A PNG data URL of the observation's frame.
fn frame_url(obs: &Observation) -> Option<Result<String, String>> {
    let frame = obs.frame.as_ref()?;
    Some(frame.to_png().map_err(|e| e.to_string()).map(|png| {
        format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(png)
        )
    }))
}

/// Messages as recorded: image data replaced by its size.
fn recorded_prompt(messages: &[ChatMessage]) -> Value {
    let shown: Vec<ChatMessage> = messages
        .iter()
        .map(|m| match &m.content {
            Content::Text(_) => m.clone(),
            Content::Parts(parts) => ChatMessage {
                role: m.role,
                content: Content::Parts(
                    parts
                        .iter()
                        .map(|p| match p {
                            ContentPart::ImageUrl { image_url } => ContentPart::Text {
                                text: format!("[image, {} bytes as data URL]", image_url.url.len()),
                            },
                            text => text.clone(),
                        })
                        .collect(),
                ),
            },
        })
        .collect();
    serde_json::to_value(shown).unwrap_or(Value::Null)
}

/// What one decision produced, applied to the actor's state afterwards.
struct Outcome {
    decision: Decision,
    turn: Turn,
    scratchpad: Option<String>,
    frame: Option<String>,
    post: Option<Post>,
    tally: UsageTally,
}

/// Everything a decision needs, detached from the actor so it can run while the actor
/// waits.
struct Job {
    config: Arc<DeciderConfig>,
    backend: Arc<dyn ChatBackend>,
    state: LlmState,
    obs: Arc<Observation>,
    step: u32,
    episode_seed: u64,
}

impl Job {
    async fn run(self) -> Outcome {
        let config = self.config.clone();
        let received: Vec<Envelope> = match &config.voice {
            Some(voice) => voice.inbox(self.step).await,
            None => Vec::new(),
        };
        let frame = match (config.max_image_history, frame_url(&self.obs)) {
            (0, _) | (_, None) => None,
            (_, Some(Ok(url))) => Some(url),
            (_, Some(Err(e))) => {
                tracing::warn!(agent = %config.agent, "frame not sent: {e}");
                None
            }
        };
        let mut images: Vec<String> = self.state.frames.iter().cloned().collect();
        images.extend(frame.clone());
        let skip = images.len().saturating_sub(config.max_image_history);
        let teammates = config
            .visible_teammates
            .then(|| {
                self.obs
                    .info
                    .as_ref()?
                    .get("visible_teammates")
                    .map(render_info)
            })
            .flatten();
        let observation = self.obs.text.as_deref();
        let current = CurrentTurn {
            step: self.step,
            observation,
            received: &received,
            scratchpad: self.state.scratchpad.as_deref(),
            teammates: teammates.as_deref(),
            legal: &self.obs.legal,
            images: &images[skip..],
        };
        let mut messages =
            config
                .prompt
                .build(&config.agent, &self.state.history, &current, &config.parser);
        let constraint = config.parser.constraint(&self.obs.legal);

        let mut tally = UsageTally {
            decisions: 1,
            ..UsageTally::default()
        };
        let mut format_errors = Vec::new();
        let mut raw: Option<String> = None;
        let mut raw_chars = None;
        let mut http_attempts = 0;
        let mut cache_hits = 0u32;
        let mut backend_error = None;
        let mut parsed: Option<Parsed> = None;
        let mut request;
        loop {
            request = ChatRequest {
                messages: messages.clone(),
                temperature: config.temperature,
                max_tokens: config.max_tokens,
                seed: Some(self.state.seed),
                constraint: constraint.clone(),
                passthrough: config.passthrough.clone(),
            };
            tally.requests += 1;
            let response = match self.backend.chat(&request).await {
                Ok(response) => response,
                Err(error) => {
                    http_attempts += error.attempts();
                    if let BackendError::CacheMiss(key) = &error {
                        config.replay_misses.note(ReplayMiss {
                            agent: config.agent.clone(),
                            episode_seed: self.episode_seed,
                            step: self.step,
                            key: key.clone(),
                        });
                    }
                    backend_error = Some(error.to_string());
                    break;
                }
            };
            http_attempts += response.attempts;
            cache_hits += u32::from(response.cached);
            tally.usage += response.usage;
            tally.latency_ms += response.latency_ms;
            let parse = config.parser.parse(&response.text, &self.obs.legal);
            let (kept, whole) = cut(response.text, config.max_answer_chars);
            raw_chars = whole;
            match parse {
                Ok(ok) => {
                    raw = Some(kept);
                    parsed = Some(ok);
                    break;
                }
                Err(error) => {
                    tally.format_errors += 1;
                    // The error may quote the answer: it is kept and sent back as cut.
                    let (error, _) = cut(error.to_string(), config.max_answer_chars);
                    let retry = (format_errors.len() as u32) < config.retries;
                    if retry {
                        messages.push(ChatMessage::text(Role::Assistant, kept.clone()));
                        messages.push(ChatMessage::text(
                            Role::User,
                            config
                                .prompt
                                .format_error(&error, &self.obs.legal, &config.parser),
                        ));
                    }
                    format_errors.push(error);
                    raw = Some(kept);
                    if !retry {
                        break;
                    }
                }
            }
        }

        let parse_ok = parsed.is_some();
        let (action, message, note) = match &parsed {
            Some(p) => (p.action, p.message.clone(), p.scratchpad.clone()),
            None => (config.default_action, None, None),
        };
        let scratchpad = note.or_else(|| self.state.scratchpad.clone());
        let voice = config.voice.as_ref();
        let post = message
            .as_deref()
            .and_then(|m| voice.and_then(|v| v.post(m, self.step)));
        let mut detail = serde_json::Map::new();
        if config.record_prompt {
            detail.insert("prompt".into(), recorded_prompt(&request.messages));
        } else {
            let key = CacheKey::of(self.backend.identity(), &request);
            detail.insert("prompt_key".into(), json!(key.0));
        }
        detail.insert("raw".into(), json!(raw));
        if let Some(chars) = raw_chars {
            detail.insert("raw_chars".into(), json!(chars));
        }
        detail.insert("parse_ok".into(), json!(parse_ok));
        detail.insert("retries".into(), json!(tally.requests.saturating_sub(1)));
        if !format_errors.is_empty() {
            detail.insert("format_errors".into(), json!(format_errors));
        }
        Voice::record(&mut detail, post.as_ref(), received.len());
        detail.insert("scratchpad".into(), json!(scratchpad));
        if let Some(think) = parsed.as_ref().and_then(|p| p.think.as_ref()) {
            detail.insert("think".into(), json!(think));
        }
        detail.insert(
            "usage".into(),
            json!({
                "prompt_tokens": tally.usage.prompt_tokens,
                "completion_tokens": tally.usage.completion_tokens,
            }),
        );
        detail.insert("latency_ms".into(), json!(tally.latency_ms));
        detail.insert("http_attempts".into(), json!(http_attempts));
        detail.insert("cache_hits".into(), json!(cache_hits));
        if let Some(error) = &backend_error {
            detail.insert("error".into(), json!(error));
        }
        let source = if parse_ok {
            DecisionSource::Policy
        } else {
            tally.fallbacks += 1;
            DecisionSource::Error
        };
        let turn = Turn {
            step: self.step,
            observation: observation.unwrap_or_default().to_owned(),
            received,
            answer: config
                .parser
                .render(action, post.as_ref().map(|p| p.text.as_str()), None),
        };
        Outcome {
            decision: Decision {
                action,
                source,
                detail: Some(Value::Object(detail)),
            },
            turn,
            scratchpad,
            frame,
            post,
            tally,
        }
    }
}

/// `text` cut to its first `max` characters, and its whole length in characters when it
/// was cut.
fn cut(mut text: String, max: usize) -> (String, Option<usize>) {
    match text.char_indices().nth(max) {
        Some((end, _)) => {
            let chars = max + text[end..].chars().count();
            text.truncate(end);
            (text, Some(chars))
        }
        None => (text, None),
    }
}

/// `info.visible_teammates` as lines: strings as they are, anything else as JSON.
fn render_info(value: &Value) -> String {
    let line = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match value {
        Value::Array(items) => items.iter().map(line).collect::<Vec<_>>().join("\n"),
        other => line(other),
    }
}

impl LlmDecider {
    fn apply(&mut self, outcome: Outcome) -> Decision {
        let config = &self.config;
        self.state.history.push_back(outcome.turn);
        while self.state.history.len() > config.history {
            self.state.history.pop_front();
        }
        self.state.scratchpad = outcome.scratchpad;
        if let Some(frame) = outcome.frame {
            self.state.frames.push_back(frame);
            // The next prompt adds its own frame: keep one fewer.
            while self.state.frames.len() >= config.max_image_history.max(1) {
                self.state.frames.pop_front();
            }
        }
        if let (Some(post), Some(voice)) = (outcome.post, &config.voice) {
            voice.send(post);
        }
        self.usage.episode.add(&outcome.tally);
        self.usage.total.add(&outcome.tally);
        outcome.decision
    }
}

impl Handler<Decide> for LlmDecider {
    type Result = AtomicResponse<Self, Result<Decision, DeciderError>>;

    fn handle(&mut self, msg: Decide, _: &mut Context<Self>) -> Self::Result {
        // The session's own fallback for a missed deadline, so that the decision recorded
        // is the same whichever of the two deadlines fires first (and in a replay).
        let fallback = msg.obs.fallback(self.config.default_action);
        let job = Job {
            config: self.config.clone(),
            backend: self.backend.clone(),
            state: self.state.clone(),
            obs: msg.obs,
            step: msg.step,
            episode_seed: self.episode_seed,
        };
        let work = async move {
            match msg.deadline {
                None => Ok(job.run().await),
                Some(deadline) => tokio::time::timeout_at(deadline.into(), job.run())
                    .await
                    .map_err(|_| fallback),
            }
        };
        AtomicResponse::new(Box::pin(work.into_actor(self).map(|result, act, _| {
            Ok(match result {
                Ok(outcome) => act.apply(outcome),
                Err(fallback) => {
                    act.usage.episode.fallbacks += 1;
                    act.usage.total.fallbacks += 1;
                    Decision::fallback(fallback, DecisionSource::Timeout, DEADLINE_MISSED)
                }
            })
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_cut_on_character_boundaries() {
        assert_eq!(cut("short".into(), 10), ("short".into(), None));
        assert_eq!(cut("exactly".into(), 7), ("exactly".into(), None));
        assert_eq!(cut("äöüäöü".into(), 4), ("äöüä".into(), Some(6)));
    }

    #[test]
    fn visible_teammates_render_one_per_line() {
        let info = json!(["green_1 two cells north", {"id": "green_2", "pos": [3, 4]}]);
        assert_eq!(
            render_info(&info),
            "green_1 two cells north\n{\"id\":\"green_2\",\"pos\":[3,4]}"
        );
        assert_eq!(render_info(&json!("alone")), "alone");
    }

    #[test]
    fn recorded_prompts_leave_image_data_out() {
        let messages = [ChatMessage {
            role: Role::User,
            content: Content::Parts(vec![
                ContentPart::ImageUrl {
                    image_url: crate::backend::ImageUrl {
                        url: "data:image/png;base64,AAAA".into(),
                    },
                },
                ContentPart::Text { text: "hi".into() },
            ]),
        }];
        let recorded = recorded_prompt(&messages);
        assert_eq!(
            recorded[0]["content"][0]["text"],
            "[image, 26 bytes as data URL]"
        );
        assert_eq!(recorded[0]["content"][1]["text"], "hi");
    }
}
