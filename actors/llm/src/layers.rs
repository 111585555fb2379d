//! Layers around a [`ChatBackend`], composed like tower layers: each wraps an inner backend
//! and is itself a backend.
//!
//! The usual stack, outermost first (see [`Stack`]):
//! [`Metered`] (run-wide accounting) -> [`Cached`] (response cache, replay) -> [`RetryPolicy`]
//! (backoff, `Retry-After`) -> [`ConcurrencyLimit`] (permits per backend) -> [`Timeout`]
//! (per attempt) -> the HTTP backend. Retries wait outside the concurrency limit so a
//! backing-off request holds no permit.

use crate::backend::{
    BackendError, BackendIdentity, ChatBackend, ChatFuture, ChatRequest, ChatResponse, Usage,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// Wraps a backend in another.
pub trait ChatLayer {
    /// The wrapped backend.
    fn layer(self, inner: Arc<dyn ChatBackend>) -> Arc<dyn ChatBackend>;
}

/// Builds a backend stack: `Stack::new(http).layer(a).layer(b)` puts `b` outermost.
///
/// ```
/// use mosaic_llm::backend::{ApiKey, OpenAiBackend};
/// use mosaic_llm::layers::{ConcurrencyLimit, RetryPolicy, Stack, Timeout};
/// use std::time::Duration;
/// let http = OpenAiBackend::new("http://127.0.0.1:9/v1", "m", ApiKey::none(), "test");
/// let backend = Stack::new(http)
///     .layer(Timeout(Duration::from_secs(30)))
///     .layer(ConcurrencyLimit::layer(4))
///     .layer(RetryPolicy::default())
///     .build();
/// assert_eq!(backend.identity().model, "m");
/// ```
pub struct Stack(Arc<dyn ChatBackend>);

impl std::fmt::Debug for Stack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stack").finish_non_exhaustive()
    }
}

impl Stack {
    /// Starts from the innermost backend.
    pub fn new(inner: impl ChatBackend + 'static) -> Self {
        Self(Arc::new(inner))
    }

    /// Starts from a shared backend.
    pub fn from_arc(inner: Arc<dyn ChatBackend>) -> Self {
        Self(inner)
    }

    /// Adds a layer outside the current stack.
    pub fn layer(self, layer: impl ChatLayer) -> Self {
        Self(layer.layer(self.0))
    }

    /// The finished stack.
    pub fn build(self) -> Arc<dyn ChatBackend> {
        self.0
    }
}

/// Fails an attempt that takes longer than the duration.
#[derive(Clone, Copy, Debug)]
pub struct Timeout(pub Duration);

struct TimeoutBackend {
    inner: Arc<dyn ChatBackend>,
    limit: Duration,
}

impl ChatLayer for Timeout {
    fn layer(self, inner: Arc<dyn ChatBackend>) -> Arc<dyn ChatBackend> {
        Arc::new(TimeoutBackend {
            inner,
            limit: self.0,
        })
    }
}

impl ChatBackend for TimeoutBackend {
    fn identity(&self) -> &BackendIdentity {
        self.inner.identity()
    }

    fn chat<'a>(&'a self, request: &'a ChatRequest) -> ChatFuture<'a> {
        Box::pin(async move {
            match tokio::time::timeout(self.limit, self.inner.chat(request)).await {
                Ok(result) => result,
                Err(_) => Err(BackendError::Timeout(self.limit)),
            }
        })
    }
}

/// At most `permits` requests in flight through this layer, shared by every agent using
/// the backend. Also reports the peak it has seen.
#[derive(Clone)]
pub struct ConcurrencyLimit {
    permits: usize,
    semaphore: Arc<tokio::sync::Semaphore>,
    in_flight: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

impl std::fmt::Debug for ConcurrencyLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConcurrencyLimit").finish_non_exhaustive()
    }
}

impl ConcurrencyLimit {
    /// A limit of `permits` (at least 1).
    pub fn layer(permits: usize) -> Self {
        let permits = permits.max(1);
        Self {
            permits,
            semaphore: Arc::new(tokio::sync::Semaphore::new(permits)),
            in_flight: Arc::default(),
            peak: Arc::default(),
        }
    }

    /// Requests allowed in flight at once.
    pub fn permits(&self) -> usize {
        self.permits
    }

    /// The most requests seen in flight at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }
}

struct LimitedBackend {
    inner: Arc<dyn ChatBackend>,
    limit: ConcurrencyLimit,
}

impl ChatLayer for ConcurrencyLimit {
    fn layer(self, inner: Arc<dyn ChatBackend>) -> Arc<dyn ChatBackend> {
        Arc::new(LimitedBackend { inner, limit: self })
    }
}

impl ChatBackend for LimitedBackend {
    fn identity(&self) -> &BackendIdentity {
        self.inner.identity()
    }

    fn chat<'a>(&'a self, request: &'a ChatRequest) -> ChatFuture<'a> {
        Box::pin(async move {
            let _permit = self
                .limit
                .semaphore
                .acquire()
                .await
                .map_err(|_| BackendError::Server("concurrency limit closed".into()))?;
            let now = self.limit.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.limit.peak.fetch_max(now, Ordering::SeqCst);
            let result = self.inner.chat(request).await;
            self.limit.in_flight.fetch_sub(1, Ordering::SeqCst);
            result
        })
    }
}

/// Retries retryable errors ([`BackendError::is_retryable`]) with exponential backoff,
/// waiting what the server asks in `Retry-After` when it says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Wait before the first retry; doubles each retry.
    pub base_delay: Duration,
    /// Cap of the exponential wait.
    pub max_delay: Duration,
    /// Cap of a server's `Retry-After`.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    /// 5 retries from 0.5 s, at most 30 s apart (BALROG retries 5 times with backoff).
    fn default() -> Self {
        Self {
            max_retries: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (0-based) after `error`.
    pub fn delay(&self, retry: u32, error: &BackendError) -> Duration {
        if let BackendError::Status {
            retry_after: Some(wait),
            ..
        } = error
        {
            return (*wait).min(self.max_retry_after);
        }
        self.base_delay
            .saturating_mul(2u32.saturating_pow(retry))
            .min(self.max_delay)
    }
}

struct RetryBackend {
    inner: Arc<dyn ChatBackend>,
    policy: RetryPolicy,
}

impl ChatLayer for RetryPolicy {
    fn layer(self, inner: Arc<dyn ChatBackend>) -> Arc<dyn ChatBackend> {
        Arc::new(RetryBackend {
            inner,
            policy: self,
        })
    }
}

impl ChatBackend for RetryBackend {
    fn identity(&self) -> &BackendIdentity {
        self.inner.identity()
    }

    fn chat<'a>(&'a self, request: &'a ChatRequest) -> ChatFuture<'a> {
        Box::pin(async move {
            // A decision's latency is what the agent waited: failed attempts and the waits
            // between them included.
            let started = std::time::Instant::now();
            let mut attempts = 0;
            loop {
                attempts += 1;
                match self.inner.chat(request).await {
                    Ok(mut response) => {
                        response.attempts = attempts;
                        response.latency_ms = started.elapsed().as_millis() as u64;
                        return Ok(response);
                    }
                    Err(error) if error.is_retryable() && attempts <= self.policy.max_retries => {
                        let wait = self.policy.delay(attempts - 1, &error);
                        tracing::warn!(
                            model = %self.inner.identity().model,
                            attempt = attempts,
                            wait_ms = wait.as_millis() as u64,
                            "LLM request failed, retrying: {error}"
                        );
                        tokio::time::sleep(wait).await;
                    }
                    Err(error) if attempts == 1 && !error.is_retryable() => return Err(error),
                    Err(error) => {
                        return Err(BackendError::Exhausted {
                            attempts,
                            last: Box::new(error),
                        });
                    }
                }
            }
        })
    }
}

/// The key of a request in the response cache: SHA-256 of the backend identity and the
/// whole request (messages, sampling parameters, constraint), hex.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CacheKey(pub String);

impl CacheKey {
    /// The key of `request` sent to `identity`.
    pub fn of(identity: &BackendIdentity, request: &ChatRequest) -> Self {
        let mut hasher = Sha256::new();
        // Serialising these types cannot fail (no non-string map keys, no custom
        // serialisers); an empty payload would still give a stable key.
        hasher.update(serde_json::to_vec(&(identity, request)).unwrap_or_default());
        let digest = hasher.finalize();
        Self(digest.iter().map(|b| format!("{b:02x}")).collect())
    }
}

impl std::fmt::Display for CacheKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a cached request ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CachedOutcome {
    /// The model's answer, as first received.
    Answer {
        /// The answer.
        response: ChatResponse,
    },
    /// The request failed for good (retries exhausted, or an error not worth retrying).
    Failed {
        /// The error as the caller saw it.
        error: String,
        /// HTTP attempts made.
        attempts: u32,
    },
    /// The caller stopped waiting (its decision deadline passed) before an answer came.
    Abandoned,
}

/// One cached exchange: the request (so a recorded `prompt_key` can be looked up) and how
/// it ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheEntry {
    /// Model and address.
    pub identity: BackendIdentity,
    /// The request.
    pub request: ChatRequest,
    /// The answer, the failure, or that nobody waited for it.
    pub outcome: CachedOutcome,
}

/// Where answers are kept between runs.
pub trait ResponseCache: Send + Sync {
    /// The entry under `key`, if any.
    fn get(&self, key: &CacheKey) -> Result<Option<CacheEntry>, BackendError>;
    /// Stores an entry.
    fn put(&self, key: &CacheKey, entry: &CacheEntry) -> Result<(), BackendError>;
    /// The backends whose requests the cache holds (to replay a local model's answers
    /// without knowing its file).
    fn identities(&self) -> Result<Vec<BackendIdentity>, BackendError>;
}

/// A [`ResponseCache`] in a sled tree (the run store's `llm-cache` tree). Besides the
/// entries (keyed by [`CacheKey`], 64 hex digits) it keeps one `identity:`-prefixed key
/// per backend it has seen.
#[derive(Clone, Debug)]
pub struct SledCache {
    tree: sled::Tree,
}

const IDENTITY_PREFIX: &[u8] = b"identity:";

impl SledCache {
    /// Keeps entries in `tree`.
    pub fn new(tree: sled::Tree) -> Self {
        Self { tree }
    }

    /// Copies every entry of `source` into this cache (replacing entries under the same
    /// keys); returns how many requests were copied.
    pub fn extend_from(&self, source: &SledCache) -> Result<u64, BackendError> {
        let mut requests = 0;
        for item in source.tree.iter() {
            let (key, value) =
                item.map_err(|e| BackendError::Cache(format!("reading the source cache: {e}")))?;
            self.tree
                .insert(&key, value)
                .map_err(|e| BackendError::Cache(format!("copying the cache: {e}")))?;
            requests += u64::from(!key.starts_with(IDENTITY_PREFIX));
        }
        Ok(requests)
    }
}

impl ResponseCache for SledCache {
    fn get(&self, key: &CacheKey) -> Result<Option<CacheEntry>, BackendError> {
        let Some(bytes) = self
            .tree
            .get(key.0.as_bytes())
            .map_err(|e| BackendError::Cache(format!("reading {key}: {e}")))?
        else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| BackendError::Cache(format!("entry {key} is corrupt: {e}")))
    }

    fn put(&self, key: &CacheKey, entry: &CacheEntry) -> Result<(), BackendError> {
        let bytes = serde_json::to_vec(entry)
            .map_err(|e| BackendError::Cache(format!("encoding {key}: {e}")))?;
        let identity = serde_json::to_vec(&entry.identity)
            .map_err(|e| BackendError::Cache(format!("encoding {key}: {e}")))?;
        let mut batch = sled::Batch::default();
        batch.insert([IDENTITY_PREFIX, &identity].concat(), &[]);
        batch.insert(key.0.as_bytes(), bytes);
        self.tree
            .apply_batch(batch)
            .map_err(|e| BackendError::Cache(format!("writing {key}: {e}")))
    }

    fn identities(&self) -> Result<Vec<BackendIdentity>, BackendError> {
        self.tree
            .scan_prefix(IDENTITY_PREFIX)
            .keys()
            .map(|key| {
                let key = key.map_err(|e| BackendError::Cache(format!("reading: {e}")))?;
                serde_json::from_slice(&key[IDENTITY_PREFIX.len()..]).map_err(|e| {
                    BackendError::Cache(format!(
                        "backend key {} is corrupt: {e}",
                        String::from_utf8_lossy(&key)
                    ))
                })
            })
            .collect()
    }
}

/// How the response cache is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheMode {
    /// Answer from the cache when it holds an answer, else call the model; store how every
    /// request ended (answer, failure, abandoned).
    #[default]
    ReadWrite,
    /// Never call a model: answers, failures and abandoned requests are replayed as
    /// recorded; a request missing from the cache is [`BackendError::CacheMiss`].
    ReplayOnly,
}

/// Serves repeated requests from a [`ResponseCache`].
///
/// Replaying an abandoned request waits forever, so that the caller's deadline passes
/// exactly as it did in the recorded run.
#[derive(Clone)]
pub struct Cached {
    /// The store.
    pub cache: Arc<dyn ResponseCache>,
    /// Read-write or replay-only.
    pub mode: CacheMode,
}

impl std::fmt::Debug for Cached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cached").finish_non_exhaustive()
    }
}

struct CachedBackend {
    inner: Arc<dyn ChatBackend>,
    cache: Arc<dyn ResponseCache>,
    mode: CacheMode,
}

impl ChatLayer for Cached {
    fn layer(self, inner: Arc<dyn ChatBackend>) -> Arc<dyn ChatBackend> {
        Arc::new(CachedBackend {
            inner,
            cache: self.cache,
            mode: self.mode,
        })
    }
}

/// Records a request as abandoned unless it is disarmed before it is dropped (its future
/// dropped before the answer came).
struct AbandonGuard<'a> {
    cache: &'a dyn ResponseCache,
    key: &'a CacheKey,
    entry: Option<CacheEntry>,
}

impl AbandonGuard<'_> {
    fn finish(mut self, outcome: CachedOutcome) {
        if let Some(mut entry) = self.entry.take() {
            entry.outcome = outcome;
            store(self.cache, self.key, &entry);
        }
    }
}

impl Drop for AbandonGuard<'_> {
    fn drop(&mut self) {
        if let Some(entry) = self.entry.take() {
            store(self.cache, self.key, &entry);
        }
    }
}

fn store(cache: &dyn ResponseCache, key: &CacheKey, entry: &CacheEntry) {
    if let Err(error) = cache.put(key, entry) {
        // The call itself went through; only a later replay of this request will miss.
        tracing::warn!("LLM response not cached: {error}");
    }
}

impl ChatBackend for CachedBackend {
    fn identity(&self) -> &BackendIdentity {
        self.inner.identity()
    }

    fn chat<'a>(&'a self, request: &'a ChatRequest) -> ChatFuture<'a> {
        Box::pin(async move {
            let key = CacheKey::of(self.inner.identity(), request);
            let cached = self.cache.get(&key)?.map(|entry| entry.outcome);
            match (cached, self.mode) {
                (Some(CachedOutcome::Answer { mut response }), _) => {
                    // Attempts and latency stay as recorded, so a replayed run records
                    // what the original run did.
                    response.cached = true;
                    return Ok(response);
                }
                (Some(CachedOutcome::Failed { error, attempts }), CacheMode::ReplayOnly) => {
                    return Err(BackendError::Replayed { error, attempts });
                }
                (Some(CachedOutcome::Abandoned), CacheMode::ReplayOnly) => {
                    return std::future::pending().await;
                }
                (None, CacheMode::ReplayOnly) => return Err(BackendError::CacheMiss(key.0)),
                // Failures and abandoned requests are tried again when the model may be
                // called.
                (_, CacheMode::ReadWrite) => {}
            }
            let guard = AbandonGuard {
                cache: self.cache.as_ref(),
                key: &key,
                entry: Some(CacheEntry {
                    identity: self.inner.identity().clone(),
                    request: request.clone(),
                    outcome: CachedOutcome::Abandoned,
                }),
            };
            let result = self.inner.chat(request).await;
            guard.finish(match &result {
                Ok(response) => CachedOutcome::Answer {
                    response: response.clone(),
                },
                Err(error) => CachedOutcome::Failed {
                    error: error.to_string(),
                    attempts: error.attempts(),
                },
            });
            result
        })
    }
}

/// The innermost backend of a replay-only stack: it has the identity of the recorded
/// backend and calls no model.
pub struct Offline(pub BackendIdentity);

impl std::fmt::Debug for Offline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Offline").finish_non_exhaustive()
    }
}

impl ChatBackend for Offline {
    fn identity(&self) -> &BackendIdentity {
        &self.0
    }

    fn chat<'a>(&'a self, _: &'a ChatRequest) -> ChatFuture<'a> {
        Box::pin(async {
            Err(BackendError::Server(
                "replay only: no model is called".into(),
            ))
        })
    }
}

/// Run-wide LLM accounting: calls, cache hits, HTTP attempts, failures, tokens, latency.
#[derive(Debug, Default)]
pub struct UsageMeter {
    calls: AtomicU64,
    cache_hits: AtomicU64,
    attempts: AtomicU64,
    failures: AtomicU64,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
    cached_prompt_tokens: AtomicU64,
    latency_ms: AtomicU64,
    errors: Mutex<Vec<String>>,
}

/// A snapshot of a [`UsageMeter`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageTotals {
    /// Requests answered or failed.
    pub calls: u64,
    /// Answers served from the cache.
    pub cache_hits: u64,
    /// HTTP attempts (retries included).
    pub attempts: u64,
    /// Requests that failed after all retries.
    pub failures: u64,
    /// Tokens (answers from the cache cost none).
    pub usage: Usage,
    /// Summed latency of answered calls, milliseconds (cache hits excluded).
    pub latency_ms: u64,
}

impl UsageMeter {
    /// The totals so far.
    pub fn totals(&self) -> UsageTotals {
        UsageTotals {
            calls: self.calls.load(Ordering::Relaxed),
            cache_hits: self.cache_hits.load(Ordering::Relaxed),
            attempts: self.attempts.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            usage: Usage {
                prompt_tokens: self.prompt_tokens.load(Ordering::Relaxed),
                completion_tokens: self.completion_tokens.load(Ordering::Relaxed),
                cached_prompt_tokens: self.cached_prompt_tokens.load(Ordering::Relaxed),
            },
            latency_ms: self.latency_ms.load(Ordering::Relaxed),
        }
    }

    /// The distinct final errors seen (at most 16), for reports.
    pub fn errors(&self) -> Vec<String> {
        self.errors.lock().map(|e| e.clone()).unwrap_or_default()
    }

    fn record(&self, result: &Result<ChatResponse, BackendError>) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        match result {
            Ok(response) if response.cached => {
                // A replayed answer costs nothing in this run.
                self.cache_hits.fetch_add(1, Ordering::Relaxed);
            }
            Ok(response) => {
                self.attempts
                    .fetch_add(u64::from(response.attempts), Ordering::Relaxed);
                self.prompt_tokens
                    .fetch_add(response.usage.prompt_tokens, Ordering::Relaxed);
                self.completion_tokens
                    .fetch_add(response.usage.completion_tokens, Ordering::Relaxed);
                self.cached_prompt_tokens
                    .fetch_add(response.usage.cached_prompt_tokens, Ordering::Relaxed);
                self.latency_ms
                    .fetch_add(response.latency_ms, Ordering::Relaxed);
            }
            Err(error) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                self.attempts
                    .fetch_add(u64::from(error.attempts()), Ordering::Relaxed);
                if let Ok(mut errors) = self.errors.lock() {
                    let text = error.to_string();
                    if errors.len() < 16 && !errors.contains(&text) {
                        errors.push(text);
                    }
                }
            }
        }
    }
}

/// Counts every call into a shared [`UsageMeter`].
#[derive(Clone, Debug)]
pub struct Metered(pub Arc<UsageMeter>);

struct MeteredBackend {
    inner: Arc<dyn ChatBackend>,
    meter: Arc<UsageMeter>,
}

impl ChatLayer for Metered {
    fn layer(self, inner: Arc<dyn ChatBackend>) -> Arc<dyn ChatBackend> {
        Arc::new(MeteredBackend {
            inner,
            meter: self.0,
        })
    }
}

impl ChatBackend for MeteredBackend {
    fn identity(&self) -> &BackendIdentity {
        self.inner.identity()
    }

    fn chat<'a>(&'a self, request: &'a ChatRequest) -> ChatFuture<'a> {
        Box::pin(async move {
            let result = self.inner.chat(request).await;
            self.meter.record(&result);
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{ChatMessage, Constraint, Role};

    fn request(text: &str) -> ChatRequest {
        ChatRequest {
            messages: vec![ChatMessage::text(Role::User, text)],
            temperature: 0.0,
            max_tokens: 4,
            seed: Some(1),
            constraint: Constraint::None,
            passthrough: Default::default(),
        }
    }

    fn identity() -> BackendIdentity {
        BackendIdentity {
            model: "m".into(),
            base_url: "local".into(),
        }
    }

    #[test]
    fn cache_key_covers_the_whole_request() {
        let base = CacheKey::of(&identity(), &request("a"));
        assert_eq!(base, CacheKey::of(&identity(), &request("a")));
        assert_ne!(base, CacheKey::of(&identity(), &request("b")));
        let mut hotter = request("a");
        hotter.temperature = 0.5;
        assert_ne!(base, CacheKey::of(&identity(), &hotter));
        let mut seeded = request("a");
        seeded.seed = Some(2);
        assert_ne!(base, CacheKey::of(&identity(), &seeded));
        let other_model = BackendIdentity {
            model: "n".into(),
            ..identity()
        };
        assert_ne!(base, CacheKey::of(&other_model, &request("a")));
        assert_eq!(base.0.len(), 64);
    }

    #[test]
    fn passthrough_settings_are_part_of_the_key_only_when_set() {
        use crate::backend::{Passthrough, ReasoningEffort};
        // A request as serialised before pass-through settings existed: its cached answers
        // keep their key.
        let old_layout = r#"[{"model":"m","base_url":"local"},{"messages":[{"role":"user","content":"a"}],"temperature":0.0,"max_tokens":4,"seed":1,"constraint":{"kind":"none"}}]"#;
        let digest = Sha256::digest(old_layout.as_bytes());
        let old_key: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        let plain = CacheKey::of(&identity(), &request("a"));
        assert_eq!(plain.0, old_key);

        let with = |reasoning_effort, extra: serde_json::Value| {
            let mut request = request("a");
            request.passthrough = Passthrough {
                reasoning_effort,
                extra_body: extra.as_object().cloned().unwrap_or_default(),
            };
            CacheKey::of(&identity(), &request)
        };
        let keys = [
            plain.clone(),
            with(Some(ReasoningEffort::High), serde_json::json!({})),
            with(Some(ReasoningEffort::Low), serde_json::json!({})),
            with(Some(ReasoningEffort::Off), serde_json::json!({})),
            with(None, serde_json::json!({"top_p": 0.9})),
            with(None, serde_json::json!({"top_p": 0.8})),
            with(
                Some(ReasoningEffort::Off),
                serde_json::json!({"top_p": 0.9}),
            ),
        ];
        for (i, key) in keys.iter().enumerate() {
            for other in &keys[i + 1..] {
                assert_ne!(key, other, "settings must not share cached answers");
            }
        }
        assert_eq!(with(None, serde_json::json!({})), plain);

        // Entries stored before the settings existed still read, as requests without them.
        let old_entry = serde_json::json!({
            "identity": identity(),
            "request": serde_json::from_str::<serde_json::Value>(old_layout).unwrap()[1],
            "outcome": {"kind": "abandoned"},
        });
        let entry: CacheEntry = serde_json::from_value(old_entry).unwrap();
        assert_eq!(entry.request, request("a"));
    }

    #[test]
    fn retry_delay_doubles_and_honours_retry_after() {
        let policy = RetryPolicy {
            max_retries: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
            max_retry_after: Duration::from_secs(2),
        };
        let err = BackendError::Connect("x".into());
        assert_eq!(policy.delay(0, &err), Duration::from_millis(100));
        assert_eq!(policy.delay(1, &err), Duration::from_millis(200));
        assert_eq!(policy.delay(2, &err), Duration::from_millis(350));
        let limited = |secs| BackendError::Status {
            status: 429,
            retry_after: Some(Duration::from_secs(secs)),
            body: String::new(),
        };
        assert_eq!(policy.delay(0, &limited(1)), Duration::from_secs(1));
        assert_eq!(policy.delay(0, &limited(99)), Duration::from_secs(2));
    }

    /// Fails its first request (a lost connection), then answers with a latency of 3 ms.
    struct FailsOnce {
        calls: std::sync::atomic::AtomicU32,
        identity: BackendIdentity,
    }

    impl ChatBackend for FailsOnce {
        fn identity(&self) -> &BackendIdentity {
            &self.identity
        }

        fn chat<'a>(&'a self, _: &'a ChatRequest) -> ChatFuture<'a> {
            Box::pin(async move {
                if self.calls.fetch_add(1, Ordering::Relaxed) == 0 {
                    return Err(BackendError::Connect("reset".into()));
                }
                Ok(ChatResponse {
                    text: "x".into(),
                    finish_reason: None,
                    usage: Usage::default(),
                    attempts: 1,
                    latency_ms: 3,
                    cached: false,
                })
            })
        }
    }

    #[actix_rt::test]
    async fn latency_includes_failed_attempts_and_the_waits_between_them() {
        let policy = RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(40),
            max_delay: Duration::from_millis(40),
            max_retry_after: Duration::from_secs(1),
        };
        let backend = policy.layer(Arc::new(FailsOnce {
            calls: Default::default(),
            identity: identity(),
        }));
        let response = backend.chat(&request("a")).await.unwrap();
        assert_eq!(response.attempts, 2);
        assert!(response.latency_ms >= 40, "{}", response.latency_ms);
    }

    #[test]
    fn sled_cache_round_trips_and_reports_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let tree = db.open_tree("llm-cache").unwrap();
        let cache = SledCache::new(tree.clone());
        let key = CacheKey::of(&identity(), &request("a"));
        assert_eq!(cache.get(&key).unwrap(), None);
        let entry = CacheEntry {
            identity: identity(),
            request: request("a"),
            outcome: CachedOutcome::Answer {
                response: ChatResponse {
                    text: "x".into(),
                    finish_reason: None,
                    usage: Usage::default(),
                    attempts: 1,
                    latency_ms: 3,
                    cached: false,
                },
            },
        };
        cache.put(&key, &entry).unwrap();
        assert_eq!(cache.get(&key).unwrap(), Some(entry));
        assert_eq!(cache.identities().unwrap(), vec![identity()]);
        tree.insert(key.0.as_bytes(), b"not json".to_vec()).unwrap();
        let err = cache.get(&key).unwrap_err();
        assert!(err.to_string().contains(&key.0), "{err}");
    }
}
