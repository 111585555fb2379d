//! A model (or server) that ignores `max_tokens` cannot blow up records or requests: an
//! answer longer than `max_answer_chars` is kept cut in the decision, with a note of its
//! whole length, and sent back cut in the re-prompt. The endpoint is the fault-injecting
//! proxy answering by itself (no model needed).

mod support;

use mosaic_actors::decider::{DeciderHandle, DeciderRegistry, SessionResources, SpawnContext};
use mosaic_actors::{BeginEpisode, Decide};
use mosaic_core::{
    Action, AgentContext, AgentSpec, DecisionSource, EnvSpec, ObsRequest, Observation, Settings,
    SlotSpec, Stepping,
};
use mosaic_llm::{LlmResources, register};
use serde_json::{Value, json};
use std::sync::Arc;
use support::proxy::{Fault, Proxy};

/// Never contacted: every request is answered by a scripted fault.
const NO_UPSTREAM: &str = "http://127.0.0.1:9/v1";
const ANSWER_CHARS: usize = 200_000;
const DEFAULT_CAP: usize = 4000;

fn spec() -> Arc<EnvSpec> {
    Arc::new(EnvSpec {
        name: "walk".into(),
        agents: vec![AgentSpec {
            id: "a".into(),
            team: None,
            role: None,
        }],
        action_labels: vec!["noop".into(), "go".into()],
        default_action: Action(0),
        stepping: Stepping::Single,
        max_steps: None,
        symbolic_shape: None,
        offers: ObsRequest::ALL,
        descriptions: Default::default(),
    })
}

fn spawn(spec: &Arc<EnvSpec>, slot: Value) -> DeciderHandle {
    let mut registry = DeciderRegistry::default();
    register(&mut registry, Arc::new(LlmResources::new()));
    let slot: SlotSpec = serde_json::from_value(slot).unwrap();
    registry
        .spawn(&SpawnContext {
            env_name: &spec.name,
            env_settings: &Settings::new(),
            spec,
            agent: 0,
            slot: &slot,
            scripted: None,
            session: &SessionResources::default(),
        })
        .unwrap()
}

/// A chat completion whose text is `text`.
fn completion(text: &str) -> String {
    json!({
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    })
    .to_string()
}

#[actix_rt::test]
async fn long_answers_are_kept_and_sent_back_cut() {
    let proxy = Proxy::start(NO_UPSTREAM).await;
    let prose = "I am thinking about the grid at length. ".repeat(ANSWER_CHARS / 40);
    proxy.script([
        Fault::Answer(completion(&prose)),
        Fault::Answer(completion(&prose)),
    ]);
    let spec = spec();
    let handle = spawn(
        &spec,
        json!({
            "kind": "llm",
            "backend": {"base_url": proxy.base_url, "model": "m"},
            "format": "tagged",
            "retries": 1,
            "http_retries": 0,
        }),
    );
    handle
        .begin
        .send(BeginEpisode {
            ctx: AgentContext::new(7, 0, "a".into(), 2),
            spec: spec.clone(),
        })
        .await
        .unwrap()
        .unwrap();
    let obs = Arc::new(Observation {
        agent: 0,
        step: 0,
        text: Some("You stand on a path.".into()),
        legal: vec![true, true],
        ..Observation::default()
    });
    let decision = handle
        .decide
        .send(Decide {
            obs,
            step: 0,
            deadline: None,
        })
        .await
        .unwrap()
        .unwrap();

    assert_eq!(decision.source, DecisionSource::Error);
    let detail = decision.detail.as_ref().unwrap();
    assert_eq!(detail["retries"], 1);
    let raw = detail["raw"].as_str().unwrap();
    assert_eq!(raw.chars().count(), DEFAULT_CAP);
    assert!(prose.starts_with(raw));
    assert_eq!(detail["raw_chars"], prose.chars().count());
    assert!(
        detail.to_string().len() < 3 * DEFAULT_CAP,
        "a decision of {} bytes",
        detail.to_string().len()
    );

    let seen = proxy.seen();
    assert_eq!(seen.len(), 2);
    let reprompt: Value = serde_json::from_str(&seen[1].body).unwrap();
    let messages = reprompt["messages"].as_array().unwrap();
    let echoed = messages
        .iter()
        .find(|m| m["role"] == "assistant")
        .and_then(|m| m["content"].as_str())
        .expect("the answer is sent back");
    assert_eq!(echoed, raw);
    assert!(
        seen[1].body.len() < seen[0].body.len() + 3 * DEFAULT_CAP,
        "a re-prompt of {} bytes",
        seen[1].body.len()
    );
}

#[actix_rt::test]
async fn the_cap_is_a_setting() {
    let proxy = Proxy::start(NO_UPSTREAM).await;
    proxy.script([Fault::Answer(completion(&"x".repeat(500)))]);
    let spec = spec();
    let handle = spawn(
        &spec,
        json!({
            "kind": "llm",
            "backend": {"base_url": proxy.base_url, "model": "m"},
            "format": "tagged",
            "retries": 0,
            "http_retries": 0,
            "max_answer_chars": 100,
        }),
    );
    handle
        .begin
        .send(BeginEpisode {
            ctx: AgentContext::new(7, 0, "a".into(), 2),
            spec: spec.clone(),
        })
        .await
        .unwrap()
        .unwrap();
    let decision = handle
        .decide
        .send(Decide {
            obs: Arc::new(Observation {
                agent: 0,
                step: 0,
                text: Some("You stand on a path.".into()),
                legal: vec![true, true],
                ..Observation::default()
            }),
            step: 0,
            deadline: None,
        })
        .await
        .unwrap()
        .unwrap();
    let detail = decision.detail.as_ref().unwrap();
    assert_eq!(detail["raw"].as_str().unwrap(), "x".repeat(100));
    assert_eq!(detail["raw_chars"], 500);
}
