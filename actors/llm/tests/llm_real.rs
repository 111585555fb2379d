//! The LLM deciders against a real local model (SmolLM2-135M on llama.cpp's server, set
//! up by `scripts/setup/llm-server.sh`), directly and through a fault-injecting proxy.

mod support;

use mosaic_actors::channel::{Channel, ChannelConfig};
use mosaic_actors::decider::{DeciderHandle, DeciderRegistry, SessionResources, SpawnContext};
use mosaic_actors::{BeginEpisode, Decide};
use mosaic_core::record::strip_volatile;
use mosaic_core::{
    Action, AgentContext, AgentSpec, Decision, DecisionSource, EnvSpec, Frame, ObsRequest,
    Observation, Settings, SlotSpec, Stepping,
};
use mosaic_llm::layers::{CacheMode, SledCache};
use mosaic_llm::server::{GetEndpoint, KillProcess, LlmServer, Starts, StopServer};
use mosaic_llm::{LlmResources, register};
use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::Captured;
use support::proxy::{Fault, Proxy};

const LABELS: [&str; 8] = [
    "noop", "left", "right", "forward", "pickup", "drop", "toggle", "done",
];

fn spec() -> Arc<EnvSpec> {
    let agent = |id: &str, team: &str| AgentSpec {
        id: id.into(),
        team: Some(team.into()),
        role: None,
    };
    Arc::new(EnvSpec {
        name: "soccer-2v2".into(),
        agents: vec![
            agent("green_0", "green"),
            agent("green_1", "green"),
            agent("blue_0", "blue"),
            agent("blue_1", "blue"),
        ],
        action_labels: LABELS.iter().map(|s| s.to_string()).collect(),
        default_action: Action(0),
        stepping: Stepping::Simultaneous,
        max_steps: Some(200),
        symbolic_shape: None,
        offers: ObsRequest::ALL,
        descriptions: Default::default(),
    })
}

/// Runs a test inside an actix system, one real-server test at a time.
fn run<F: Future<Output = ()>>(test: impl FnOnce() -> F) {
    let _guard = support::exclusive();
    actix::System::new().block_on(test());
}

fn registry(resources: &Arc<LlmResources>) -> DeciderRegistry {
    let mut registry = DeciderRegistry::default();
    register(&mut registry, resources.clone());
    registry
}

fn spawn(
    registry: &DeciderRegistry,
    spec: &Arc<EnvSpec>,
    agent: usize,
    slot: Value,
    session: &SessionResources,
) -> DeciderHandle {
    let slot: SlotSpec = serde_json::from_value(slot).expect("slot spec");
    registry
        .spawn(&SpawnContext {
            env_name: &spec.name,
            env_settings: &Settings::new(),
            spec,
            agent,
            slot: &slot,
            scripted: None,
            session,
        })
        .expect("operator spawns")
}

async fn begin(handle: &DeciderHandle, spec: &Arc<EnvSpec>, agent: usize, seed: u64) {
    let ctx = AgentContext::new(seed, agent, spec.agents[agent].id.clone(), LABELS.len());
    handle
        .begin
        .send(BeginEpisode {
            ctx,
            spec: spec.clone(),
        })
        .await
        .expect("mailbox")
        .expect("episode begins");
}

fn observation(agent: usize, step: u32, legal: Vec<bool>) -> Arc<Observation> {
    Arc::new(Observation {
        agent,
        step,
        text: Some(format!(
            "You are at ({}, 5) facing east. The ball is {} cells ahead.",
            2 + step,
            3 + agent
        )),
        legal,
        ..Observation::default()
    })
}

async fn decide(handle: &DeciderHandle, obs: Arc<Observation>) -> Decision {
    let step = obs.step;
    handle
        .decide
        .send(Decide {
            obs,
            step,
            deadline: None,
        })
        .await
        .expect("mailbox")
        .expect("decision")
}

fn detail(decision: &Decision) -> &Value {
    decision
        .detail
        .as_ref()
        .expect("LLM decisions carry details")
}

/// The real server behind a proxy: returns the server actor and the proxy.
async fn proxied_server() -> (actix::Addr<LlmServer>, Proxy) {
    use actix::Actor;
    let server = LlmServer::new(support::server_config()).start();
    let url = server
        .send(GetEndpoint)
        .await
        .unwrap()
        .expect("server healthy");
    (server, Proxy::start(&url).await)
}

fn remote(proxy: &Proxy, extra: Value) -> Value {
    let mut slot = json!({
        "kind": "llm",
        "backend": { "base_url": proxy.base_url, "model": "smollm2" },
        "format": "grammar",
        "channel": "none",
        "scratchpad_cap": 0,
        "max_tokens": 16,
        "history": 1,
    });
    for (k, v) in extra.as_object().unwrap() {
        slot[k] = v.clone();
    }
    slot
}

#[test]
fn constrained_decisions_are_always_legal() {
    run(|| async {
        let resources = Arc::new(LlmResources::new().with_local_server(support::server_config()));
        let registry = registry(&resources);
        let spec = spec();
        let session = SessionResources::default();
        let mut decisions = 0;
        for (agent, slot) in [
            json!({"kind": "llm", "format": "json", "channel": "none", "scratchpad_cap": 0, "max_tokens": 24, "history": 2}),
            json!({"kind": "llm", "format": "grammar", "channel": "none", "scratchpad_cap": 0, "max_tokens": 16, "history": 2}),
        ]
        .into_iter()
        .enumerate()
        {
            let handle = spawn(&registry, &spec, agent, slot, &session);
            begin(&handle, &spec, agent, 11).await;
            for step in 0..5u32 {
                // A different legal subset every step, never the same as the last.
                let legal: Vec<bool> = (0..8u32)
                    .map(|a| (a + step) % 3 == 0 || a == (step * 5 + 1) % 8)
                    .collect();
                let obs = observation(agent, step, legal);
                let decision = decide(&handle, obs.clone()).await;
                assert!(obs.is_legal(decision.action), "illegal {:?} at {step}", decision.action);
                assert_eq!(decision.source, DecisionSource::Policy, "{:?}", decision.detail);
                assert_eq!(detail(&decision)["parse_ok"], true);
                assert!(detail(&decision)["usage"]["completion_tokens"].as_u64().unwrap() > 0);
                decisions += 1;
            }
        }
        let usage = resources.usage();
        assert_eq!(usage.calls, decisions);
        assert!(usage.usage.prompt_tokens > 0);
        resources.shutdown().await;
    });
}

#[test]
fn concurrency_limit_holds_across_agents() {
    run(|| async {
        let (server, proxy) = proxied_server().await;
        let resources = Arc::new(LlmResources::new());
        let registry = registry(&resources);
        let spec = spec();
        let session = SessionResources::default();
        let handles: Vec<_> = (0..4)
            .map(|agent| {
                spawn(
                    &registry,
                    &spec,
                    agent,
                    remote(&proxy, json!({"concurrency": 2})),
                    &session,
                )
            })
            .collect();
        for (agent, handle) in handles.iter().enumerate() {
            begin(handle, &spec, agent, 3).await;
        }
        for step in 0..2 {
            let all = futures::future::join_all(
                handles
                    .iter()
                    .enumerate()
                    .map(|(agent, h)| decide(h, observation(agent, step, vec![true; 8]))),
            )
            .await;
            assert!(all.iter().all(|d| d.source == DecisionSource::Policy));
        }
        assert_eq!(proxy.count(), 8);
        assert_eq!(
            proxy.peak(),
            2,
            "the server saw {} requests at once",
            proxy.peak()
        );
        assert_eq!(resources.peak_concurrency(), 2);
        server.send(StopServer).await.unwrap();
    });
}

/// A decision with a deadline `after` from now.
async fn decide_by(handle: &DeciderHandle, obs: Arc<Observation>, after: Duration) -> Decision {
    let step = obs.step;
    handle
        .decide
        .send(Decide {
            obs,
            step,
            deadline: Some(Instant::now() + after),
        })
        .await
        .expect("mailbox")
        .expect("decision")
}

#[test]
fn cached_rerun_is_identical_and_sends_nothing() {
    run(|| async {
        let (server, proxy) = proxied_server().await;
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let tree = db.open_tree("llm-cache").unwrap();
        let spec = spec();
        // Three steps of two talking agents; then green_0 alone: a request that fails for
        // good (two 500s), one whose deadline passes while the proxy hangs, and (replay
        // only) an observation never recorded.
        let episode = |mode: CacheMode| {
            let resources = Arc::new(
                LlmResources::new().with_cache(Arc::new(SledCache::new(tree.clone())), mode),
            );
            let registry = registry(&resources);
            let spec = spec.clone();
            let proxy = proxy.clone();
            async move {
                let channel = Channel::start(&spec, ChannelConfig::default());
                let session = SessionResources {
                    channel: Some(channel),
                    ..SessionResources::default()
                };
                let slot = remote(
                    &proxy,
                    json!({"channel": "team", "message_cap": 12, "scratchpad_cap": 12, "max_tokens": 32, "history": 3, "http_retries": 1}),
                );
                let handles: Vec<_> = (0..2)
                    .map(|agent| spawn(&registry, &spec, agent, slot.clone(), &session))
                    .collect();
                for (agent, handle) in handles.iter().enumerate() {
                    begin(handle, &spec, agent, 5).await;
                }
                let mut records = Vec::new();
                for step in 0..3 {
                    let decisions = futures::future::join_all(
                        handles
                            .iter()
                            .enumerate()
                            .map(|(agent, h)| decide(h, observation(agent, step, vec![true; 8]))),
                    )
                    .await;
                    records.extend(decisions);
                }
                let recording = mode == CacheMode::ReadWrite;
                if recording {
                    proxy.script([Fault::ServerError, Fault::ServerError]);
                }
                records.push(decide(&handles[0], observation(0, 3, vec![true; 8])).await);
                if recording {
                    proxy.script([Fault::Hang(Duration::from_secs(4))]);
                }
                let obs = observation(0, 4, vec![true; 8]);
                records.push(decide_by(&handles[0], obs, Duration::from_millis(1500)).await);
                if !recording {
                    let mut unseen = (*observation(0, 5, vec![true; 8])).clone();
                    unseen.text = Some("A field never seen before.".into());
                    records.push(decide(&handles[0], Arc::new(unseen)).await);
                }
                let records: Vec<Value> = records
                    .into_iter()
                    .map(|d| {
                        let mut value = serde_json::to_value(d).unwrap();
                        strip_volatile(&mut value);
                        value
                    })
                    .collect();
                (records, resources.usage(), resources.replay_misses())
            }
        };
        let (first, first_usage, _) = episode(CacheMode::ReadWrite).await;
        let sent = proxy.count();
        assert_eq!(sent, 6 + 2 + 1);
        assert_eq!(first_usage.cache_hits, 0);
        assert_eq!(first[6]["source"], "error", "{}", first[6]);
        assert_eq!(first[7]["source"], "timeout", "{}", first[7]);
        let (replay, replay_usage, misses) = episode(CacheMode::ReplayOnly).await;
        assert_eq!(proxy.count(), sent, "the replay called the model");
        assert_eq!(replay_usage.cache_hits, 6);
        assert_eq!(replay_usage.usage.prompt_tokens, 0);
        // Answers, the failure (same error, same attempts) and the missed deadline.
        assert_eq!(first, replay[..8]);
        // The unseen request: the default action, an error naming it, a miss for the run.
        assert_eq!(replay[8]["source"], "error");
        let error = replay[8]["detail"]["error"].as_str().unwrap();
        assert!(error.contains("not in the response cache"), "{error}");
        let (count, miss) = misses;
        let miss = miss.expect("the miss is reported");
        assert_eq!((count, miss.agent.as_str(), miss.step), (1, "green_0", 5));
        assert!(error.contains(&miss.key), "{error}");
        assert!(miss.to_string().contains("agent `green_0`"), "{miss}");
        server.send(StopServer).await.unwrap();
    });
}

#[test]
fn history_scratchpad_and_messages_reach_the_next_prompts() {
    run(|| async {
        let resources = Arc::new(LlmResources::new().with_local_server(support::server_config()));
        let registry = registry(&resources);
        let spec = spec();
        let channel = Channel::start(&spec, ChannelConfig::default());
        let session = SessionResources {
            channel: Some(channel),
            ..SessionResources::default()
        };
        let slot = json!({
            "kind": "llm", "format": "json", "channel": "team", "message_cap": 16,
            "scratchpad_cap": 16, "max_tokens": 64, "history": 2, "record_prompt": true,
        });
        // green_0 and green_1 are teammates, blue_0 their opponent.
        let agents = [0usize, 1, 2];
        let handles: Vec<_> = agents
            .iter()
            .map(|&agent| spawn(&registry, &spec, agent, slot.clone(), &session))
            .collect();
        for (&agent, handle) in agents.iter().zip(&handles) {
            begin(handle, &spec, agent, 9).await;
        }
        let mut steps: Vec<Vec<Value>> = Vec::new();
        for step in 0..4u32 {
            let decisions = futures::future::join_all(
                agents
                    .iter()
                    .zip(&handles)
                    .map(|(&agent, h)| decide(h, observation(agent, step, vec![true; 8]))),
            )
            .await;
            steps.push(decisions.iter().map(|d| detail(d).clone()).collect());
        }
        let prompt_text = |d: &Value| {
            d["prompt"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
                .collect::<Vec<_>>()
        };
        let (mut messages_checked, mut notes_checked) = (0, 0);
        for step in 1..steps.len() {
            for (i, &agent) in agents.iter().enumerate() {
                let prompt = prompt_text(&steps[step][i]);
                let current = prompt.last().unwrap();
                // History: the last two observations, in order, before the current turn.
                let past: Vec<&String> = prompt[1..prompt.len() - 1].iter().collect();
                for back in 1..=step.min(2) {
                    let seen = observation(agent, (step - back) as u32, vec![]);
                    let text = seen.text.as_deref().unwrap();
                    assert!(
                        past.iter().any(|p| p.contains(text)),
                        "step {step} agent {agent}: history lacks {text}"
                    );
                }
                if step > 2 {
                    let old = observation(agent, (step - 3) as u32, vec![]);
                    assert!(
                        !prompt
                            .iter()
                            .any(|p| p.contains(old.text.as_deref().unwrap()))
                    );
                }
                // The note written last step.
                if let Some(note) = steps[step - 1][i]["scratchpad"].as_str() {
                    assert!(
                        current.contains(&format!("Your notes:\n{note}")),
                        "note missing at {step}:\n{current}"
                    );
                    notes_checked += 1;
                }
                // Teammates' messages of the last step; never an opponent's.
                for (j, &other) in agents.iter().enumerate() {
                    let Some(text) = steps[step - 1][j]["message"].as_str() else {
                        continue;
                    };
                    let line = format!("- step {}, {}: {text}", step - 1, spec.agents[other].id);
                    let teammate = spec.agents[other].team == spec.agents[agent].team;
                    if other != agent && teammate {
                        assert!(
                            current.contains(&line),
                            "missing {line:?} at {step}:\n{current}"
                        );
                        messages_checked += 1;
                    } else {
                        assert!(!current.contains(&line), "leaked {line:?} at {step}");
                    }
                }
            }
        }
        assert!(
            messages_checked > 0,
            "no teammate message was ever sent: nothing checked"
        );
        assert!(
            notes_checked > 0,
            "no note was ever written: nothing checked"
        );
        resources.shutdown().await;
    });
}

#[test]
fn http_faults_are_retried_and_accounted() {
    run(|| async {
        let (server, proxy) = proxied_server().await;
        let resources = Arc::new(LlmResources::new());
        let registry = registry(&resources);
        let spec = spec();
        let session = SessionResources::default();
        // Generous timeouts: a loaded two-core machine can take many seconds per answer.
        let patient = spawn(
            &registry,
            &spec,
            0,
            remote(&proxy, json!({"timeout_ms": 300_000, "http_retries": 3})),
            &session,
        );
        begin(&patient, &spec, 0, 1).await;
        let clean = decide(&patient, observation(0, 0, vec![true; 8])).await;
        assert_eq!(detail(&clean)["http_attempts"], 1);
        let answer = proxy.seen()[0].answer.clone().expect("a forwarded answer");
        let cases = [
            (vec![Fault::RateLimit(1)], 2),
            (vec![Fault::ServerError, Fault::ServerError], 3),
            (vec![Fault::Truncate], 2),
            (vec![Fault::EmptyChoices], 2),
        ];
        for (step, (faults, attempts)) in cases.into_iter().enumerate() {
            let before = proxy.count();
            let rate_limited = faults == [Fault::RateLimit(1)];
            proxy.script(faults.clone());
            let started = Instant::now();
            let decision = decide(&patient, observation(0, step as u32 + 1, vec![true; 8])).await;
            assert_eq!(
                decision.source,
                DecisionSource::Policy,
                "{faults:?}: {:?}",
                decision.detail
            );
            assert_eq!(detail(&decision)["http_attempts"], attempts, "{faults:?}");
            assert_eq!(proxy.count() - before, attempts as usize, "{faults:?}");
            if rate_limited {
                assert!(
                    started.elapsed() >= Duration::from_secs(1),
                    "Retry-After not honoured"
                );
            }
        }
        // A hung attempt times out; the retry gets the answer the server gave before.
        let hasty = spawn(
            &registry,
            &spec,
            1,
            remote(&proxy, json!({"timeout_ms": 500, "http_retries": 3})),
            &session,
        );
        begin(&hasty, &spec, 1, 1).await;
        proxy.script([Fault::Hang(Duration::from_secs(3)), Fault::Answer(answer)]);
        let started = Instant::now();
        let decision = decide(&hasty, observation(1, 0, vec![true; 8])).await;
        assert_eq!(
            decision.source,
            DecisionSource::Policy,
            "{:?}",
            decision.detail
        );
        assert_eq!(detail(&decision)["http_attempts"], 2);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "the timeout did not cut the hung attempt"
        );
        let usage = resources.usage();
        assert_eq!(usage.calls, 6);
        assert_eq!(usage.failures, 0);
        assert_eq!(usage.attempts, 1 + 2 + 3 + 2 + 2 + 2);
        server.send(StopServer).await.unwrap();
    });
}

#[test]
fn exhausted_retries_and_client_errors_take_the_default_action() {
    run(|| async {
        let (server, proxy) = proxied_server().await;
        let resources = Arc::new(LlmResources::new());
        let registry = registry(&resources);
        let spec = spec();
        let session = SessionResources::default();
        let handle = spawn(
            &registry,
            &spec,
            0,
            remote(&proxy, json!({"http_retries": 2})),
            &session,
        );
        begin(&handle, &spec, 0, 1).await;
        proxy.script([Fault::ServerError, Fault::ServerError, Fault::ServerError]);
        let decision = decide(&handle, observation(0, 0, vec![true; 8])).await;
        assert_eq!(decision.source, DecisionSource::Error);
        assert_eq!(decision.action, spec.default_action);
        assert_eq!(detail(&decision)["http_attempts"], 3);
        assert_eq!(detail(&decision)["parse_ok"], false);
        assert!(
            detail(&decision)["error"]
                .as_str()
                .unwrap()
                .contains("gave up after 3 attempts")
        );
        assert_eq!(proxy.count(), 3);

        // A model name the server rejects is a client error: no retry.
        let bad =
            json!({"backend": {"base_url": format!("{}/nowhere", proxy.base_url), "model": "x"}});
        let handle = spawn(&registry, &spec, 1, remote(&proxy, bad), &session);
        begin(&handle, &spec, 1, 1).await;
        let before = proxy.count();
        let decision = decide(&handle, observation(1, 0, vec![true; 8])).await;
        assert_eq!(decision.source, DecisionSource::Error);
        assert_eq!(proxy.count() - before, 1, "a 404 must not be retried");
        assert!(detail(&decision)["error"].as_str().unwrap().contains("404"));
        assert_eq!(resources.usage().failures, 2);
        server.send(StopServer).await.unwrap();
    });
}

#[test]
fn unusable_answers_are_reprompted_then_defaulted() {
    run(|| async {
        let (server, proxy) = proxied_server().await;
        let resources = Arc::new(LlmResources::new());
        let registry = registry(&resources);
        let spec = spec();
        let session = SessionResources::default();
        // Free text: the small model does not follow the tagged format.
        let handle = spawn(
            &registry,
            &spec,
            0,
            remote(
                &proxy,
                json!({"format": "tagged", "retries": 2, "max_tokens": 8, "record_prompt": true}),
            ),
            &session,
        );
        begin(&handle, &spec, 0, 1).await;
        let mut fallbacks = 0;
        for step in 0..3 {
            let decision = decide(&handle, observation(0, step, vec![true; 8])).await;
            let d = detail(&decision);
            if d["parse_ok"] == false {
                fallbacks += 1;
                assert_eq!(decision.source, DecisionSource::Error);
                assert_eq!(decision.action, spec.default_action);
                assert_eq!(d["retries"], 2);
                assert_eq!(d["format_errors"].as_array().unwrap().len(), 3);
                // The final prompt carries the re-prompts with the format error.
                let prompt = d["prompt"].as_array().unwrap();
                let last = prompt.last().unwrap()["content"].as_str().unwrap();
                assert!(last.starts_with("Your answer could not be used:"), "{last}");
                assert_eq!(
                    prompt.iter().filter(|m| m["role"] == "assistant").count(),
                    2 + step.min(1) as usize
                );
            } else {
                assert_eq!(decision.source, DecisionSource::Policy);
            }
        }
        assert!(
            fallbacks > 0,
            "the model followed the free-text format every time: nothing tested"
        );
        server.send(StopServer).await.unwrap();
    });
}

#[test]
fn vlm_sends_the_last_frames_as_png_data_urls() {
    run(|| async {
        let (server, proxy) = proxied_server().await;
        let resources = Arc::new(LlmResources::new());
        let registry = registry(&resources);
        let spec = spec();
        let session = SessionResources::default();
        let slot = remote(
            &proxy,
            json!({"kind": "vlm", "max_image_history": 2, "http_retries": 0}),
        );
        let handle = spawn(&registry, &spec, 0, slot, &session);
        assert!(handle.wants.frame && handle.wants.text);
        begin(&handle, &spec, 0, 1).await;
        let frames: Vec<Frame> = (0..3u8)
            .map(|i| Frame::filled(4, 3, [i * 80, 10, 20]))
            .collect();
        for (step, frame) in frames.iter().enumerate() {
            let mut obs = (*observation(0, step as u32, vec![true; 8])).clone();
            obs.frame = Some(Arc::new(frame.clone()));
            // This text-only model cannot read images; what matters is what was sent.
            let _ = decide(&handle, Arc::new(obs)).await;
        }
        let sent: Vec<Vec<Frame>> = proxy
            .seen()
            .iter()
            .map(|seen| {
                let body: Value = serde_json::from_str(&seen.body).unwrap();
                let last = body["messages"].as_array().unwrap().last().unwrap().clone();
                last["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|p| p["type"] == "image_url")
                    .map(|p| {
                        let url = p["image_url"]["url"].as_str().unwrap();
                        let data = url.strip_prefix("data:image/png;base64,").unwrap();
                        use base64::Engine as _;
                        let png = base64::engine::general_purpose::STANDARD
                            .decode(data)
                            .unwrap();
                        Frame::from_png(&png).unwrap()
                    })
                    .collect()
            })
            .collect();
        assert_eq!(
            sent,
            vec![
                vec![frames[0].clone()],
                frames[0..2].to_vec(),
                frames[1..3].to_vec()
            ]
        );
        server.send(StopServer).await.unwrap();
    });
}

#[test]
fn local_server_is_supervised() {
    run(|| async {
        use actix::Actor;
        let server = LlmServer::new(support::server_config()).start();
        let first = server.send(GetEndpoint).await.unwrap().expect("healthy");
        assert!(first.starts_with("http://127.0.0.1:"));
        let http = mosaic_llm::backend::http_client();
        let health = |url: &str| {
            http.get(url.trim_end_matches("/v1").to_owned() + "/health")
                .send()
        };
        assert!(health(&first).await.unwrap().status().is_success());
        assert!(server.send(KillProcess).await.unwrap());
        // It comes back (on a new port) and serves again.
        let mut again = None;
        for _ in 0..200 {
            if server.send(Starts).await.unwrap() == 2 {
                again = server.send(GetEndpoint).await.unwrap().ok();
                if again.is_some() {
                    break;
                }
            }
            actix_rt::time::sleep(Duration::from_millis(50)).await;
        }
        let again = again.expect("the server restarted");
        assert!(health(&again).await.unwrap().status().is_success());
        server.send(StopServer).await.unwrap();
        actix_rt::time::sleep(Duration::from_millis(300)).await;
        assert!(
            health(&again).await.is_err(),
            "the server still answers after StopServer"
        );
    });
}

/// Plants an API key in the environment of a child test process (this very test,
/// re-run) and searches everything it produced: decisions, usage, errors, logs, the run
/// store, its console output.
#[test]
fn the_api_key_never_leaves_the_request() {
    const VAR: &str = "MOSAIC_TEST_PLANTED_API_KEY";
    const KEY: &str = "sk-planted-7f3c9e1d2b4a";
    if std::env::var_os(VAR).is_none() {
        let _guard = support::exclusive();
        let config = support::server_config();
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "the_api_key_never_leaves_the_request",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(VAR, KEY)
            .env(mosaic_llm::server::SERVER_ENV, &config.binary)
            .env(mosaic_llm::server::MODEL_ENV, &config.model)
            .output()
            .unwrap();
        let console = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            output.status.success(),
            "the planted-key run failed:\n{console}"
        );
        assert!(
            console.contains("1 passed"),
            "the planted-key run ran no test:\n{console}"
        );
        assert!(!console.contains(KEY), "the API key appears on the console");
        return;
    }
    assert_eq!(std::env::var(VAR).as_deref(), Ok(KEY));
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);
    let dir = tempfile::tempdir().unwrap();
    let mut outputs = String::new();
    let collected = &mut outputs;
    let store_dir = dir.path().to_owned();
    run(move || async move {
        let (server, proxy) = proxied_server().await;
        let db = sled::open(&store_dir).unwrap();
        let cache = Arc::new(SledCache::new(db.open_tree("llm-cache").unwrap()));
        let resources = Arc::new(LlmResources::new().with_cache(cache, CacheMode::ReadWrite));
        let registry = registry(&resources);
        let spec = spec();
        let session = SessionResources::default();
        let backend = json!({"base_url": proxy.base_url, "model": "smollm2", "api_key_env": VAR});
        let handle = spawn(
            &registry,
            &spec,
            0,
            remote(
                &proxy,
                json!({"backend": backend, "http_retries": 1, "record_prompt": true}),
            ),
            &session,
        );
        begin(&handle, &spec, 0, 1).await;
        // Error bodies that echo the request head (with its Authorization header), once
        // recovered from and once fatal.
        proxy.script([Fault::ServerError]);
        let ok = decide(&handle, observation(0, 0, vec![true; 8])).await;
        proxy.script([Fault::ServerError, Fault::ServerError]);
        let failed = decide(&handle, observation(0, 1, vec![true; 8])).await;
        assert_eq!(failed.source, DecisionSource::Error);
        assert!(
            detail(&failed)["error"]
                .as_str()
                .unwrap()
                .contains("[redacted]")
        );
        assert!(
            proxy
                .seen()
                .iter()
                .all(|s| s.head.contains(&format!("Bearer {KEY}"))),
            "the key must still be sent to the server"
        );
        for decision in [&ok, &failed] {
            collected.push_str(&serde_json::to_string(decision).unwrap());
        }
        collected.push_str(&format!("{:?}", resources.usage()));
        collected.push_str(&resources.meter().errors().join("\n"));
        collected.push_str(&format!("{:?}", handle));
        db.flush().unwrap();
        server.send(StopServer).await.unwrap();
    });
    let logs = logs.text();
    assert!(
        logs.contains("retrying"),
        "the retries were not logged: nothing checked"
    );
    let mut store = Vec::new();
    for entry in walk(dir.path()) {
        store.extend(std::fs::read(entry).unwrap());
    }
    for (name, text) in [
        ("records", outputs.as_bytes()),
        ("logs", logs.as_bytes()),
        ("store", &store[..]),
    ] {
        assert!(
            !text.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
            "the API key appears in the {name}"
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
