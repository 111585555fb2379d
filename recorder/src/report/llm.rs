//! The LLM figures of the report, read from the step records' `decision` details (the
//! contract in the parent module's docs).

use super::step_fields::{DecisionFields, ReportStep};
use mosaic_core::{DecisionSource, Paradigm};
use serde::Serialize;

/// LLM figures of an agent (or summed over a team / an operator).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LlmStats {
    /// Decisions whose details were read.
    pub decisions: u64,
    /// Decisions of a language-model agent (paradigm `llm` or `vlm`) that missed their
    /// deadline: the fallback action was taken and no answer was recorded, so they are not
    /// among `decisions`.
    pub timeouts: u64,
    /// HTTP requests sent, failed attempts included (`http_attempts`; records without it
    /// count one per decision plus its re-prompts).
    pub requests: u64,
    /// Answers served from the response cache.
    pub cache_hits: u64,
    /// Summed request latency, milliseconds.
    pub latency_ms: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Decisions that reported a parse outcome.
    pub parses: u64,
    /// Of those, parsed into a legal action.
    pub parse_ok: u64,
    /// Re-prompts after format errors.
    pub retries: u64,
    /// Messages sent to teammates.
    pub messages: u64,
}

/// The LLM fields of one decision's details (the contract in the module docs), when it
/// has any of the token, parse, retry and message fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LlmDecision<'a> {
    /// `usage.prompt_tokens`.
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`.
    pub completion_tokens: Option<u64>,
    /// `parse_ok`.
    pub parse_ok: Option<bool>,
    /// `retries`.
    pub retries: Option<u64>,
    /// `cache_hits`.
    pub cache_hits: Option<u64>,
    /// `latency_ms`.
    pub latency_ms: Option<u64>,
    /// `http_attempts`.
    pub http_attempts: Option<u64>,
    /// `message`.
    pub message: Option<&'a str>,
}

impl<'a> LlmDecision<'a> {
    /// The LLM fields of a decision's details; `None` when none of the token, parse, retry
    /// and message fields is there (not an LLM decision).
    pub(crate) fn of(fields: &'a DecisionFields<'_>) -> Option<Self> {
        let read = LlmDecision {
            prompt_tokens: fields.prompt_tokens,
            completion_tokens: fields.completion_tokens,
            parse_ok: fields.parse_ok,
            retries: fields.retries,
            cache_hits: fields.cache_hits,
            latency_ms: fields.latency_ms,
            http_attempts: fields.http_attempts,
            message: fields.message.as_deref(),
        };
        let any = read.prompt_tokens.is_some()
            || read.completion_tokens.is_some()
            || read.parse_ok.is_some()
            || read.retries.is_some()
            || read.message.is_some();
        any.then_some(read)
    }
}

impl LlmStats {
    /// Counts one step record: a language-model agent's decision that missed its deadline,
    /// or the LLM fields of any decision. `false` when it is neither.
    pub(crate) fn add_step(&mut self, step: &ReportStep) -> bool {
        if matches!(step.paradigm, Paradigm::Llm | Paradigm::Vlm)
            && step.decision_source == Some(DecisionSource::Timeout)
        {
            self.timeouts += 1;
            return true;
        }
        step.decision
            .as_ref()
            .is_some_and(|decision| self.add_decision(decision))
    }

    /// Reads the details of one decision; `false` when they hold none of the fields.
    pub(crate) fn add_decision(&mut self, decision: &DecisionFields) -> bool {
        let Some(read) = LlmDecision::of(decision) else {
            return false;
        };
        self.decisions += 1;
        self.requests += read.http_attempts.unwrap_or(1 + read.retries.unwrap_or(0));
        self.cache_hits += read.cache_hits.unwrap_or(0);
        self.latency_ms += read.latency_ms.unwrap_or(0);
        self.prompt_tokens += read.prompt_tokens.unwrap_or(0);
        self.completion_tokens += read.completion_tokens.unwrap_or(0);
        if let Some(ok) = read.parse_ok {
            self.parses += 1;
            self.parse_ok += u64::from(ok);
        }
        self.retries += read.retries.unwrap_or(0);
        self.messages += u64::from(read.message.is_some_and(|m| !m.is_empty()));
        true
    }

    pub(crate) fn merge(&mut self, other: &LlmStats) {
        self.decisions += other.decisions;
        self.timeouts += other.timeouts;
        self.requests += other.requests;
        self.cache_hits += other.cache_hits;
        self.latency_ms += other.latency_ms;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.parses += other.parses;
        self.parse_ok += other.parse_ok;
        self.retries += other.retries;
        self.messages += other.messages;
    }

    /// Share of parse outcomes that succeeded.
    pub fn parse_rate(&self) -> Option<f64> {
        (self.parses > 0).then(|| self.parse_ok as f64 / self.parses as f64)
    }

    /// Mean request latency per decision, milliseconds.
    pub fn latency_per_decision_ms(&self) -> Option<f64> {
        (self.decisions > 0).then(|| self.latency_ms as f64 / self.decisions as f64)
    }
}
