//! LLM harness throughput on the local model (llama-server with `-np 4`, SmolLM2-135M).
//!
//! 1. `decisions/harness`: decisions/s of 4 LLM agents (4 independent sessions, the full
//!    operator: prompt building, backend layers, parsing), each episode paired with one of
//!    a plain concurrent load generator sending the very same request bodies with 4
//!    workers. Goal: the harness reaches at least 0.9 of the plain rate.
//! 2. `prompt_order/stable_first`: the same agents with the stable prompt prefix first
//!    (default), each episode paired with one putting the observation first, and the
//!    share of prompt tokens the server's prefix cache served in each.
//!
//! The paired ratios are printed after criterion's own figures.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

#[path = "../tests/support/mod.rs"]
mod support;

use actix::{Actor, SystemRunner};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mosaic_actors::decider::{DeciderHandle, DeciderRegistry, SessionResources, SpawnContext};
use mosaic_actors::{BeginEpisode, Decide};
use mosaic_core::{
    Action, AgentContext, AgentSpec, DecisionSource, EnvSpec, ObsRequest, Observation, Settings,
    SlotSpec, Stepping,
};
use mosaic_llm::server::{GetEndpoint, LlmServer, StopServer};
use mosaic_llm::{LlmResources, register};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::proxy::Proxy;

const AGENTS: usize = 4;
const STEPS: u32 = 3;
const LABELS: [&str; 8] = [
    "noop", "left", "right", "forward", "pickup", "drop", "toggle", "done",
];

/// A long, stable rules text: what makes prefix caching matter.
const RULES: &str = "Two teams of two play soccer on a 16 by 11 grid with walls around it. \
Each team defends its goal: green defends the left goal at column 1, blue the right goal at \
column 14, both on row 5. There is one ball. Move with left and right (turn) and forward \
(one cell). Pickup takes the ball in front of you, or steals it from an opponent in front \
of you; both of you then wait ten steps before picking up again. Drop passes the ball to a \
free teammate, or drops it in front of you. You score by standing on the opponent's goal \
while carrying the ball; the ball then reappears at a random cell. The first team to score \
twice wins; after 200 steps the game ends in a draw if nobody has won. Every member of the \
scoring team gets a reward of one. You see a small square around you; walls, the ball, \
goals and other agents are described in text with their positions relative to you.";

struct Bench {
    runner: SystemRunner,
    server: actix::Addr<LlmServer>,
    url: String,
    spec: Arc<EnvSpec>,
    template: tempfile::NamedTempFile,
}

fn spec() -> Arc<EnvSpec> {
    let agents = (0..AGENTS)
        .map(|i| AgentSpec {
            id: format!("player_{i}"),
            team: Some(if i < 2 { "green" } else { "blue" }.into()),
            role: None,
        })
        .collect();
    Arc::new(EnvSpec {
        name: "soccer-2v2".into(),
        agents,
        action_labels: LABELS.iter().map(|s| s.to_string()).collect(),
        default_action: Action(0),
        stepping: Stepping::Simultaneous,
        max_steps: None,
        symbolic_shape: None,
        offers: ObsRequest::ALL,
        descriptions: Default::default(),
    })
}

/// The observation of `agent` at `step` of episode `variant` (no two episodes alike, so
/// the server can only reuse what prompts truly share).
fn observation(agent: usize, step: u32, variant: u32) -> Arc<Observation> {
    Arc::new(Observation {
        agent,
        step,
        text: Some(format!(
            "Match {variant}. You are at column {}, row {} facing east. The ball is {} cells ahead; a wall is {} cells to your left.",
            2 + step,
            3 + agent,
            1 + (step + agent as u32) % 4,
            2 + agent
        )),
        legal: vec![true; LABELS.len()],
        ..Observation::default()
    })
}

impl Bench {
    fn start() -> Self {
        let runner = actix::System::new();
        let config = support::server_config();
        let (server, url) = runner.block_on(async {
            let server = LlmServer::new(config).start();
            let url = server
                .send(GetEndpoint)
                .await
                .expect("server actor")
                .expect("llama-server healthy");
            (server, url)
        });
        let mut template = tempfile::NamedTempFile::new().expect("template file");
        std::io::Write::write_all(
            &mut template,
            format!("[rules]\n\"soccer-2v2\" = \"\"\"{RULES}\"\"\"\n").as_bytes(),
        )
        .expect("template written");
        Self {
            runner,
            server,
            url,
            spec: spec(),
            template,
        }
    }

    /// Four operators on `base_url` with `prompt_order`.
    fn operators(
        &self,
        base_urls: &[String],
        order: &str,
    ) -> (Arc<LlmResources>, Vec<DeciderHandle>) {
        let resources = Arc::new(LlmResources::new());
        let mut registry = DeciderRegistry::default();
        register(&mut registry, resources.clone());
        let session = SessionResources::default();
        let handles = self.runner.block_on(async {
            (0..AGENTS)
                .map(|agent| {
                    let slot: SlotSpec = serde_json::from_value(json!({
                        "kind": "llm",
                        "backend": { "base_url": base_urls[agent % base_urls.len()], "model": "smollm2" },
                        "format": "grammar",
                        "channel": "none",
                        "scratchpad_cap": 0,
                        "max_tokens": 16,
                        "history": 4,
                        "concurrency": AGENTS,
                        "prompt_order": order,
                        "template": self.template.path(),
                    }))
                    .expect("slot");
                    registry
                        .spawn(&SpawnContext {
                            env_name: &self.spec.name,
                            env_settings: &Settings::new(),
                            spec: &self.spec,
                            agent,
                            slot: &slot,
                            scripted: None,
                            session: &session,
                        })
                        .expect("operator")
                })
                .collect()
        });
        (resources, handles)
    }

    /// One episode of `STEPS` decisions per agent, agents concurrently.
    fn episode(&self, handles: &[DeciderHandle], variant: u32) -> Duration {
        self.runner.block_on(async {
            let started = Instant::now();
            futures::future::join_all(handles.iter().enumerate().map(
                |(agent, handle)| async move {
                    let ctx = AgentContext::new(
                        u64::from(variant),
                        agent,
                        format!("player_{agent}"),
                        LABELS.len(),
                    );
                    let spec = self.spec.clone();
                    handle
                        .begin
                        .send(BeginEpisode { ctx, spec })
                        .await
                        .expect("mailbox")
                        .expect("begin");
                    for step in 0..STEPS {
                        let decision = handle
                            .decide
                            .send(Decide {
                                obs: observation(agent, step, variant),
                                step,
                                deadline: None,
                            })
                            .await
                            .expect("mailbox")
                            .expect("decision");
                        assert_eq!(
                            decision.source,
                            DecisionSource::Policy,
                            "{:?}",
                            decision.detail
                        );
                    }
                },
            ))
            .await;
            started.elapsed()
        })
    }

    /// The request bodies of one harness episode, per agent in order (through one
    /// recording proxy per agent).
    fn capture(&self) -> Vec<Vec<String>> {
        let proxies: Vec<Proxy> = self.runner.block_on(async {
            futures::future::join_all((0..AGENTS).map(|_| Proxy::start(&self.url))).await
        });
        let urls: Vec<String> = proxies.iter().map(|p| p.base_url.clone()).collect();
        let (_, handles) = self.operators(&urls, "stable_first");
        self.episode(&handles, 0);
        proxies
            .iter()
            .map(|p| p.seen().into_iter().map(|s| s.body).collect())
            .collect()
    }

    /// The plain load generator: each worker posts its agent's bodies in order.
    fn plain(&self, bodies: &[Vec<String>]) -> Duration {
        let endpoint = format!("{}/chat/completions", self.url);
        self.runner.block_on(async {
            let client = mosaic_llm::backend::http_client();
            let started = Instant::now();
            futures::future::join_all(bodies.iter().map(|agent| {
                let client = client.clone();
                let endpoint = endpoint.clone();
                async move {
                    for body in agent {
                        let answer: Value = client
                            .post(&endpoint)
                            .header("content-type", "application/json")
                            .body(body.clone())
                            .send()
                            .await
                            .expect("request")
                            .json()
                            .await
                            .expect("answer");
                        assert!(answer["choices"][0]["message"]["content"].is_string());
                    }
                }
            }))
            .await;
            started.elapsed()
        })
    }
}

fn rate(decisions: usize, took: Duration) -> f64 {
    decisions as f64 / took.as_secs_f64()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn benches(c: &mut Criterion) {
    let bench = Bench::start();
    let decisions = AGENTS * STEPS as usize;
    let bodies = bench.capture();
    assert!(bodies.iter().all(|b| b.len() == STEPS as usize));
    let (_, harness) = bench.operators(std::slice::from_ref(&bench.url), "stable_first");

    // Paired rounds: each timed harness episode is paired with a plain episode sending
    // the same requests, in alternating order so that neither always follows the other
    // (the second of a pair finds the first one's prompts in the server's cache); both
    // see the same load (two shared cores drift a lot).
    let pairs = std::cell::RefCell::new(Vec::new());
    let mut group = c.benchmark_group("decisions");
    group.sample_size(10).warm_up_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(decisions as u64));
    group.bench_function("harness", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let plain_first = pairs.borrow().len() % 2 == 0;
                    let plain = plain_first.then(|| bench.plain(&bodies));
                    let ours = bench.episode(&harness, 0);
                    let plain = plain.unwrap_or_else(|| bench.plain(&bodies));
                    pairs.borrow_mut().push((plain, ours));
                    ours
                })
                .sum()
        })
    });
    group.finish();
    let pairs = pairs.into_inner();
    let plain = median(pairs.iter().map(|(p, _)| rate(decisions, *p)).collect());
    let ours = median(pairs.iter().map(|(_, h)| rate(decisions, *h)).collect());
    let ratio = median(
        pairs
            .iter()
            .map(|(p, h)| p.as_secs_f64() / h.as_secs_f64())
            .collect(),
    );
    println!(
        "decisions/s over {} paired episodes (medians): harness {ours:.3}, plain load generator {plain:.3}; harness/plain {ratio:.3} (goal >= 0.9)",
        pairs.len()
    );

    // Prompt order, paired the same way; the server reports how many prompt tokens its
    // prefix cache served.
    let (stable_usage, stable) = bench.operators(std::slice::from_ref(&bench.url), "stable_first");
    let (volatile_usage, volatile) =
        bench.operators(std::slice::from_ref(&bench.url), "observation_first");
    let pairs = std::cell::RefCell::new(Vec::new());
    let mut group = c.benchmark_group("prompt_order");
    group.sample_size(10).warm_up_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(decisions as u64));
    group.bench_function("stable_first", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    // Fresh episodes, alternating which order goes first.
                    let round = pairs.borrow().len() as u32;
                    let (first, second) = (1 + 2 * round, 2 + 2 * round);
                    let (other, ours) = if round % 2 == 0 {
                        let other = bench.episode(&volatile, first);
                        (other, bench.episode(&stable, second))
                    } else {
                        let ours = bench.episode(&stable, first);
                        (bench.episode(&volatile, second), ours)
                    };
                    pairs.borrow_mut().push((other, ours));
                    ours
                })
                .sum()
        })
    });
    group.finish();
    let pairs = pairs.into_inner();
    let share = |usage: mosaic_llm::backend::Usage| {
        100.0 * usage.cached_prompt_tokens as f64 / usage.prompt_tokens.max(1) as f64
    };
    println!(
        "prompt order over {} paired episodes (medians): stable_first {:.3} decisions/s ({:.1}% of prompt tokens from the prefix cache), observation_first {:.3} ({:.1}%); speed-up {:.2}x",
        pairs.len(),
        median(pairs.iter().map(|(_, s)| rate(decisions, *s)).collect()),
        share(stable_usage.usage().usage),
        median(pairs.iter().map(|(v, _)| rate(decisions, *v)).collect()),
        share(volatile_usage.usage().usage),
        median(
            pairs
                .iter()
                .map(|(v, s)| v.as_secs_f64() / s.as_secs_f64())
                .collect()
        ),
    );
    bench.runner.block_on(async {
        // A server already gone has nothing to stop.
        let _ = bench.server.send(StopServer).await;
    });
}

criterion_group! {
    name = llm;
    config = Criterion::default();
    targets = benches
}
criterion_main!(llm);
