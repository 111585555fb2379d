//! The LLM actor family of mosaic: language-model (and vision-language-model) agents as
//! decider kinds `llm` and `vlm`, built on the operators, sessions and message channel of
//! `mosaic-actors`.
//!
//! - [`backend`]: chat requests and responses, the [`backend::ChatBackend`] trait, the
//!   HTTP client for any OpenAI-compatible endpoint.
//! - [`layers`]: retry with backoff honouring `Retry-After`, concurrency limit, timeout,
//!   response cache (replay), run-wide accounting; composed around a backend.
//! - [`prompt`]: templates as data (`actors/llm/templates/default.toml`) and the prompt
//!   builder.
//! - [`parser`]: tagged, JSON-schema and grammar-constrained output.
//! - [`decider`]: the operator actor (decider kinds `llm` and `vlm`).
//! - [`server`]: the supervised local `llama-server` (`backend = "local"`).
//!
//! The session-level message channel is [`mosaic_actors::channel`].
//!
//! Register the kinds with [`register`]:
//!
//! ```
//! use mosaic_actors::DeciderRegistry;
//! use mosaic_llm::{LlmResources, register};
//! use std::sync::Arc;
//! let mut registry = DeciderRegistry::baselines();
//! let resources = Arc::new(LlmResources::new());
//! register(&mut registry, resources.clone());
//! assert!(registry.get("llm").is_some() && registry.get("vlm").is_some());
//! ```

pub mod backend;
pub mod decider;
pub mod layers;
pub mod parser;
pub mod prompt;
pub mod server;

use actix::{Actor, Addr};
use backend::{
    ApiKey, BackendError, BackendIdentity, ChatBackend, ChatFuture, ChatRequest, OpenAiBackend,
    Passthrough, ReasoningEffort,
};
use decider::{DeciderConfig, LlmDecider, ReplayMiss, ReplayMisses};
use layers::{
    CacheMode, Cached, ConcurrencyLimit, Metered, Offline, ResponseCache, RetryPolicy, Stack,
    Timeout, UsageMeter, UsageTotals,
};
use mosaic_actors::channel::{CHANNEL_HELP, DEFAULT_MESSAGE_CAP, Voice};
use mosaic_actors::decider::{DeciderHandle, DeciderKind, DeciderRegistry, SpawnContext};
use mosaic_core::experiment::{SpecError, parse_settings};
use mosaic_core::{ObsRequest, Paradigm};
use parser::{OutputFormat, ResponseParser};
use prompt::{
    CoordinationLevel, Disclosure, Identity, ObservationMode, PromptBuilder, PromptOptions,
    PromptOrder, Template,
};
use serde::Deserialize;
use server::{GetEndpoint, LlmServer, LlmServerConfig};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where an agent's model is served.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BackendSetting {
    /// The project's local `llama-server` ([`server::LlmServer`]).
    Local,
    /// Any OpenAI-compatible endpoint.
    Remote {
        /// E.g. `https://api.openai.com/v1` or `http://127.0.0.1:8000/v1` (vLLM).
        base_url: String,
        /// Model name.
        model: String,
        /// Name of the environment variable holding the API key (never the key itself).
        api_key_env: Option<String>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RemoteSetting {
    base_url: String,
    model: String,
    #[serde(default)]
    api_key_env: Option<String>,
}

impl<'de> Deserialize<'de> for BackendSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) if s == "local" => Ok(BackendSetting::Local),
            serde_json::Value::String(s) => Err(D::Error::custom(format!(
                "backend `{s}`: use \"local\" or {{ base_url, model, api_key_env }}"
            ))),
            value => {
                let remote: RemoteSetting = serde_json::from_value(value)
                    .map_err(|e| D::Error::custom(format!("backend: {e}")))?;
                Ok(BackendSetting::Remote {
                    base_url: remote.base_url,
                    model: remote.model,
                    api_key_env: remote.api_key_env,
                })
            }
        }
    }
}

pub use mosaic_actors::channel::ChannelSetting;

/// Settings of the `llm` and `vlm` decider kinds (one agent slot).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSettings {
    /// Where the model is served.
    #[serde(default = "local")]
    pub backend: BackendSetting,
    /// Output format.
    #[serde(default)]
    pub format: OutputFormat,
    /// Past turns in the prompt.
    #[serde(default = "eight")]
    pub history: usize,
    /// Frames sent as images (default 0 for `llm`, 1 for `vlm`).
    #[serde(default)]
    pub max_image_history: Option<usize>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: f32,
    /// Completion token limit.
    #[serde(default = "max_tokens")]
    pub max_tokens: u32,
    /// Longest answer kept in records and sent back in re-prompts, characters (servers may
    /// not honour `max_tokens`); longer answers are still parsed whole.
    #[serde(default = "max_answer_chars")]
    pub max_answer_chars: usize,
    /// Format re-prompts before the default action.
    #[serde(default = "two")]
    pub retries: u32,
    /// HTTP retries (429, 5xx, connection errors, timeouts).
    #[serde(default = "five")]
    pub http_retries: u32,
    /// Timeout of one HTTP attempt, milliseconds.
    #[serde(default = "timeout_ms")]
    pub timeout_ms: u64,
    /// Requests in flight at once to this backend, shared by its agents.
    #[serde(default = "four")]
    pub concurrency: usize,
    /// A template file merged over the built-in one.
    #[serde(default)]
    pub template: Option<String>,
    /// MOSAIC observation mode.
    #[serde(default)]
    pub observation_mode: ObservationMode,
    /// MOSAIC coordination level.
    #[serde(default)]
    pub coordination: CoordinationLevel,
    /// The agent's role (role-based coordination); default from the template.
    #[serde(default)]
    pub role: Option<String>,
    /// Who the agent's messages reach.
    #[serde(default)]
    pub channel: ChannelSetting,
    /// Longest message, characters (0: no messages).
    #[serde(default = "message_cap")]
    pub message_cap: usize,
    /// Longest scratchpad note, characters (0: no scratchpad).
    #[serde(default = "scratchpad_cap")]
    pub scratchpad_cap: usize,
    /// Record whole prompts in decisions (else their cache keys).
    #[serde(default)]
    pub record_prompt: bool,
    /// Stable prefix first (default) or observation first.
    #[serde(default)]
    pub prompt_order: PromptOrder,
    /// What the system prompt discloses: 0 everything, 1 no coordination information, 2
    /// no environment information either.
    #[serde(default)]
    pub disclosure: Disclosure,
    /// Reasoning effort asked of the model (`reasoning_effort` of the request); not sent
    /// when absent.
    #[serde(default)]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Fields merged into every request body (a TOML table), e.g.
    /// `{ chat_template_kwargs = { enable_thinking = false } }`.
    #[serde(default)]
    pub extra_body: serde_json::Map<String, serde_json::Value>,
}

fn local() -> BackendSetting {
    BackendSetting::Local
}
fn two() -> u32 {
    2
}
fn four() -> usize {
    4
}
fn five() -> u32 {
    5
}
fn eight() -> usize {
    8
}
fn max_tokens() -> u32 {
    256
}
fn max_answer_chars() -> usize {
    4000
}
fn timeout_ms() -> u64 {
    60_000
}
fn message_cap() -> usize {
    DEFAULT_MESSAGE_CAP
}
fn scratchpad_cap() -> usize {
    1000
}

/// The settings lines shown by `mosaic operators`.
pub const SETTINGS_HELP: &[&str] = &[
    "backend = \"local\": \"local\" (the project's llama-server) or { base_url, model, api_key_env }",
    "format = \"json\": json (JSON schema) | grammar (llama.cpp GBNF) | tagged (free text)",
    "history = 8: past turns in the prompt",
    "max_image_history = 0 (llm) / 1 (vlm): recent frames sent as PNG images",
    "temperature = 0.0: sampling temperature",
    "max_tokens = 256: completion token limit",
    "max_answer_chars = 4000: longest answer kept in records and sent back in re-prompts",
    "retries = 2: re-prompts after an unusable answer, then the default action",
    "http_retries = 5: retries on 429, 5xx, connection errors and timeouts",
    "timeout_ms = 60000: timeout of one HTTP attempt",
    "concurrency = 4: requests in flight to this backend (base URL and model), the same for all its agents",
    "template = <built-in>: \"alem\" (ALEM's prompt for coord-world) or a TOML file, merged over the built-in prompt template",
    "observation_mode = \"egocentric\": egocentric | visible_teammates",
    "coordination = \"emergent\": emergent | hints | role_based",
    "role = <from template>: the agent's role (role_based)",
    CHANNEL_HELP[0],
    CHANNEL_HELP[1],
    "scratchpad_cap = 1000: longest private note (characters), 0 disables",
    "record_prompt = false: record whole prompts (else their cache keys)",
    "prompt_order = \"stable_first\": stable_first | observation_first",
    "disclosure = 0: 0 everything | 1 no coordination information | 2 no environment information either (system prompt)",
    "reasoning_effort = <not sent>: high | medium | low | minimal | off (sends \"none\"): the request's reasoning_effort",
    "extra_body = {}: fields merged into every request body (part of the response-cache key)",
];

/// What the LLM deciders of a run share: the local server, backend stacks (one per
/// backend configuration), one concurrency limit per backend (endpoint and model, so the
/// limit holds across agents whatever their other settings), the response cache and
/// run-wide accounting.
pub struct LlmResources {
    cache: Mutex<Option<(Arc<dyn ResponseCache>, CacheMode)>>,
    meter: Arc<UsageMeter>,
    replay_misses: Arc<ReplayMisses>,
    local_config: Option<LlmServerConfig>,
    local: Mutex<Option<Addr<LlmServer>>>,
    stacks: Mutex<BTreeMap<String, Arc<dyn ChatBackend>>>,
    limits: Mutex<BTreeMap<(String, String), ConcurrencyLimit>>,
}

impl Default for LlmResources {
    fn default() -> Self {
        Self::new()
    }
}

impl LlmResources {
    /// No cache; the local server configured from the environment on first use.
    pub fn new() -> Self {
        Self {
            cache: Mutex::new(None),
            meter: Arc::default(),
            replay_misses: Arc::default(),
            local_config: None,
            local: Mutex::new(None),
            stacks: Mutex::new(BTreeMap::new()),
            limits: Mutex::new(BTreeMap::new()),
        }
    }

    /// Answers from (and stores into) `cache`; [`CacheMode::ReplayOnly`] never calls a
    /// model.
    pub fn with_cache(self, cache: Arc<dyn ResponseCache>, mode: CacheMode) -> Self {
        self.use_cache(Some((cache, mode)));
        self
    }

    /// Sets (or, with `None`, removes) the response cache of the operators built from now
    /// on: backend stacks built before are dropped from the table, so set the cache
    /// before the operators that should use it are built (e.g. after a run's experiment
    /// was validated and its run store opened). With [`CacheMode::ReplayOnly`] no model
    /// is called and no local server is started. The count of replay misses starts over.
    pub fn use_cache(&self, cache: Option<(Arc<dyn ResponseCache>, CacheMode)>) {
        let mut current = match self.cache.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        *current = cache;
        self.replay_misses.clear();
        match self.stacks.lock() {
            Ok(mut stacks) => stacks.clear(),
            Err(poisoned) => poisoned.into_inner().clear(),
        }
        match self.limits.lock() {
            Ok(mut limits) => limits.clear(),
            Err(poisoned) => poisoned.into_inner().clear(),
        }
    }

    /// Runs the local server with `config` instead of the environment's.
    pub fn with_local_server(mut self, config: LlmServerConfig) -> Self {
        self.local_config = Some(config);
        self
    }

    /// Run-wide totals.
    pub fn usage(&self) -> UsageTotals {
        self.meter.totals()
    }

    /// The run-wide meter.
    pub fn meter(&self) -> Arc<UsageMeter> {
        self.meter.clone()
    }

    /// Requests a replay-only cache did not hold: how many, and the first.
    pub fn replay_misses(&self) -> (u64, Option<ReplayMiss>) {
        self.replay_misses.summary()
    }

    /// The most requests seen in flight at once on any backend.
    pub fn peak_concurrency(&self) -> usize {
        self.limits
            .lock()
            .map(|l| l.values().map(ConcurrencyLimit::peak).max().unwrap_or(0))
            .unwrap_or(0)
    }

    /// How the local server runs: as configured, else from the environment.
    fn local_config(&self) -> Result<LlmServerConfig, SpecError> {
        match &self.local_config {
            Some(config) => Ok(config.clone()),
            None => {
                LlmServerConfig::from_env().map_err(|e| SpecError::new("backend", e.to_string()))
            }
        }
    }

    /// The local server, started on first use (inside an actix system).
    pub fn local_server(&self) -> Result<Addr<LlmServer>, SpecError> {
        let mut local = self
            .local
            .lock()
            .map_err(|_| SpecError::new("backend", "local server state poisoned"))?;
        if let Some(addr) = local.as_ref().filter(|a| a.connected()) {
            return Ok(addr.clone());
        }
        let addr = LlmServer::new(self.local_config()?).start();
        *local = Some(addr.clone());
        Ok(addr)
    }

    /// Stops the local server, if one runs.
    pub async fn shutdown(&self) {
        let server = self.local.lock().ok().and_then(|mut l| l.take());
        if let Some(server) = server {
            // A server actor that is already gone has nothing left to stop.
            let _ = server.send(server::StopServer).await;
        }
    }

    /// The shared backend stack for these settings. Its concurrency limit is the one of its
    /// backend (base URL and model, or the local server), which every agent on it shares:
    /// agents on one backend must ask for the same `concurrency`.
    pub fn backend(&self, settings: &LlmSettings) -> Result<Arc<dyn ChatBackend>, SpecError> {
        let key = format!(
            "{:?}|{}|{}",
            settings.backend, settings.timeout_ms, settings.http_retries
        );
        let cache = self
            .cache
            .lock()
            .map_err(|_| SpecError::new("backend", "response cache poisoned"))?
            .clone();
        let mut stacks = self
            .stacks
            .lock()
            .map_err(|_| SpecError::new("backend", "backend table poisoned"))?;
        let limit = self.limit(settings)?;
        if let Some(stack) = stacks.get(&key) {
            return Ok(stack.clone());
        }
        let stack = match cache {
            Some((cache, CacheMode::ReplayOnly)) => {
                let identity = self.replay_identity(&settings.backend, cache.as_ref())?;
                Stack::new(Offline(identity)).layer(Cached {
                    cache,
                    mode: CacheMode::ReplayOnly,
                })
            }
            cache => {
                let stack = Stack::from_arc(self.http_backend(&settings.backend)?)
                    .layer(Timeout(Duration::from_millis(settings.timeout_ms.max(1))))
                    .layer(limit)
                    .layer(RetryPolicy {
                        max_retries: settings.http_retries,
                        ..RetryPolicy::default()
                    });
                match cache {
                    Some((cache, mode)) => stack.layer(Cached { cache, mode }),
                    None => stack,
                }
            }
        };
        let stack = stack.layer(Metered(self.meter.clone())).build();
        stacks.insert(key, stack.clone());
        Ok(stack)
    }

    /// The concurrency limit of the backend `settings` name, made on first use.
    fn limit(&self, settings: &LlmSettings) -> Result<ConcurrencyLimit, SpecError> {
        let backend = match &settings.backend {
            BackendSetting::Local => (LOCAL.to_owned(), String::new()),
            BackendSetting::Remote {
                base_url, model, ..
            } => (base_url.trim_end_matches('/').to_owned(), model.clone()),
        };
        let mut limits = self
            .limits
            .lock()
            .map_err(|_| SpecError::new("backend", "concurrency limits poisoned"))?;
        let limit = limits
            .entry(backend)
            .or_insert_with(|| ConcurrencyLimit::layer(settings.concurrency));
        if limit.permits() != settings.concurrency.max(1) {
            return Err(SpecError::new(
                "concurrency",
                format!(
                    "{} differs from the {} another agent asked for on this backend: the agents of a backend (base URL and model) share one limit",
                    settings.concurrency,
                    limit.permits()
                ),
            ));
        }
        Ok(limit.clone())
    }

    /// The HTTP backend (or the local server) for `setting`.
    fn http_backend(&self, setting: &BackendSetting) -> Result<Arc<dyn ChatBackend>, SpecError> {
        Ok(match setting {
            BackendSetting::Local => Arc::new(LocalBackend {
                server: self.local_server()?,
                identity: BackendIdentity {
                    model: self.local_config()?.model_name(),
                    base_url: LOCAL.into(),
                },
                client: Mutex::new(None),
            }),
            BackendSetting::Remote {
                base_url,
                model,
                api_key_env,
            } => {
                let key = match api_key_env {
                    Some(var) => ApiKey::from_env(var)
                        .map_err(|e| SpecError::new("backend.api_key_env", e))?,
                    None => ApiKey::none(),
                };
                Arc::new(OpenAiBackend::new(base_url, model, key, base_url))
            }
        })
    }

    /// The identity under which a replayed backend's answers were recorded. A remote
    /// backend is its settings; the local model is the one the cache holds answers of
    /// (its file need not exist on a machine that only replays), or, if the cache holds
    /// several, the configured one.
    fn replay_identity(
        &self,
        setting: &BackendSetting,
        cache: &dyn ResponseCache,
    ) -> Result<BackendIdentity, SpecError> {
        let BackendSetting::Remote {
            base_url, model, ..
        } = setting
        else {
            let local: Vec<BackendIdentity> = cache
                .identities()
                .map_err(|e| SpecError::new("backend", e.to_string()))?
                .into_iter()
                .filter(|i| i.base_url == LOCAL)
                .collect();
            return match local.as_slice() {
                [only] => Ok(only.clone()),
                [] => Err(SpecError::new(
                    "backend",
                    "replay: the response cache holds no answers of the local model",
                )),
                several => {
                    let configured = self.local_config()?.model_name();
                    several
                        .iter()
                        .find(|i| i.model == configured)
                        .cloned()
                        .ok_or_else(|| {
                            SpecError::new(
                                "backend",
                                format!(
                                    "replay: the response cache holds answers of the local models {}, not of the configured {configured}",
                                    several
                                        .iter()
                                        .map(|i| i.model.as_str())
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ),
                            )
                        })
                }
            };
        };
        Ok(BackendIdentity {
            model: model.clone(),
            base_url: base_url.clone(),
        })
    }
}

/// The address of the local server in backend identities (its port changes from run to
/// run).
const LOCAL: &str = "local";

/// The local server behind a chat backend: asks the server for its current address
/// (it changes when the server restarts) and sends the request there.
struct LocalBackend {
    server: Addr<LlmServer>,
    identity: BackendIdentity,
    client: Mutex<Option<(String, Arc<OpenAiBackend>)>>,
}

impl LocalBackend {
    fn client_for(&self, url: &str) -> Arc<OpenAiBackend> {
        let mut client = match self.client.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        match client.as_ref() {
            Some((current, backend)) if current == url => backend.clone(),
            _ => {
                let backend = Arc::new(OpenAiBackend::new(
                    url,
                    &self.identity.model,
                    ApiKey::none(),
                    LOCAL,
                ));
                *client = Some((url.to_owned(), backend.clone()));
                backend
            }
        }
    }
}

impl ChatBackend for LocalBackend {
    fn identity(&self) -> &BackendIdentity {
        &self.identity
    }

    fn chat<'a>(&'a self, request: &'a ChatRequest) -> ChatFuture<'a> {
        Box::pin(async move {
            let url = self
                .server
                .send(GetEndpoint)
                .await
                .map_err(|e| BackendError::Server(e.to_string()))?
                .map_err(|e| BackendError::Server(e.to_string()))?;
            self.client_for(&url).chat(request).await
        })
    }
}

/// Builds the operator of one slot.
fn spawn(
    cx: &SpawnContext<'_>,
    resources: &LlmResources,
    paradigm: Paradigm,
) -> Result<DeciderHandle, SpecError> {
    let settings: LlmSettings = parse_settings(&cx.slot.settings)?;
    let spec = cx.spec;
    let kind = paradigm.name();
    let max_image_history = settings
        .max_image_history
        .unwrap_or(usize::from(paradigm == Paradigm::Vlm));
    let sees_frames = max_image_history > 0 && spec.offers.frame;
    if !spec.offers.text && !sees_frames {
        return Err(SpecError::new(
            "kind",
            format!(
                "environment `{}` gives no text observation{}",
                spec.name,
                if spec.offers.frame { "; use `vlm`" } else { "" }
            ),
        ));
    }
    if max_image_history > 0 && !spec.offers.frame {
        return Err(SpecError::new(
            "max_image_history",
            format!("environment `{}` renders no frames", spec.name),
        ));
    }
    let me = spec.agents.get(cx.agent).ok_or_else(|| {
        SpecError::new("agents", format!("no agent {} in {}", cx.agent, spec.name))
    })?;
    let voice = Voice::for_slot(
        settings.channel,
        settings.message_cap,
        cx.session,
        spec,
        cx.agent,
    )?;
    let scope = voice.as_ref().map(Voice::scope);
    let message_cap = voice.as_ref().map_or(0, Voice::message_cap);
    let template = Arc::new(
        Template::builtin_or(settings.template.as_deref())
            .map_err(|e| SpecError::new("template", e.to_string()))?,
    );
    let identity = Identity::of(spec, cx.agent, settings.role.as_deref(), &template);
    let options = PromptOptions {
        format: settings.format,
        coordination: settings.coordination,
        scope,
        message_cap,
        scratchpad_cap: settings.scratchpad_cap,
        order: settings.prompt_order,
        disclosure: settings.disclosure,
        max_tokens: settings.max_tokens,
    };
    let config = DeciderConfig {
        agent: me.id.clone(),
        voice,
        prompt: PromptBuilder::new(template, options, spec, &identity),
        parser: ResponseParser::new(
            settings.format,
            &spec.action_labels,
            message_cap,
            settings.scratchpad_cap,
        ),
        history: settings.history,
        max_image_history,
        temperature: settings.temperature,
        max_tokens: settings.max_tokens,
        max_answer_chars: settings.max_answer_chars,
        retries: settings.retries,
        passthrough: Passthrough {
            reasoning_effort: settings.reasoning_effort,
            extra_body: settings.extra_body.clone(),
        },
        visible_teammates: settings.observation_mode == ObservationMode::VisibleTeammates,
        record_prompt: settings.record_prompt,
        default_action: spec.default_action,
        replay_misses: resources.replay_misses.clone(),
    };
    let backend = resources.backend(&settings)?;
    let addr = LlmDecider::new(config, backend).start();
    Ok(DeciderHandle::new(
        kind.to_owned(),
        paradigm,
        ObsRequest {
            symbolic: false,
            text: spec.offers.text,
            frame: max_image_history > 0,
        },
        &addr,
    )
    .with_state(&addr))
}

/// Registers the decider kinds `llm` and `vlm` (a VLM is the same operator sending the
/// last `max_image_history` frames as images).
pub fn register(registry: &mut DeciderRegistry, resources: Arc<LlmResources>) {
    let llm = resources.clone();
    registry.register(DeciderKind {
        name: "llm",
        summary: "a language model reading text observations (any OpenAI-compatible backend or the local llama-server)",
        settings: SETTINGS_HELP,
        spawn: Arc::new(move |cx| spawn(cx, &llm, Paradigm::Llm)),
    });
    registry.register(DeciderKind {
        name: "vlm",
        summary: "a vision-language model: the llm operator plus the last frames as PNG images",
        settings: SETTINGS_HELP,
        spawn: Arc::new(move |cx| spawn(cx, &resources, Paradigm::Vlm)),
    });
}

#[cfg(test)]
mod tests;
