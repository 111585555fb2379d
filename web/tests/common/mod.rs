//! The web tests' harness: a server on its own thread, a small HTTP client, and runs of
//! the `walk` test world (from the test kit) recorded into run directories.

#![allow(dead_code)]

pub(crate) mod api;

pub(crate) use mosaic_test_kit::walk::registry;

/// A server running on its own thread (with its own actix system) until dropped.
pub(crate) struct Running {
    pub addr: std::net::SocketAddr,
    /// The address to open the page at, as `mosaic serve` prints it.
    pub login_url: String,
    handle: actix_web::dev::ServerHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

pub(crate) fn serve_in_background(
    config: mosaic_web::ServeConfig,
) -> Result<Running, mosaic_web::WebError> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        actix_rt::System::new().block_on(async move {
            match mosaic_web::start(config).await {
                Ok(server) => {
                    let _ = sender.send(Ok((
                        server.local_addr(),
                        server.login_url(),
                        server.handle(),
                    )));
                    server.run().await.unwrap();
                }
                Err(error) => {
                    let _ = sender.send(Err(error));
                }
            }
        });
    });
    match receiver.recv().expect("server thread answers") {
        Ok((addr, login_url, handle)) => Ok(Running {
            addr,
            login_url,
            handle,
            thread: Some(thread),
        }),
        Err(error) => {
            thread.join().unwrap();
            Err(error)
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        futures::executor::block_on(self.handle.stop(false));
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

/// An HTTP answer read off the socket.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Answer {
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One HTTP/1.1 request over a fresh connection (`Host` is the server's unless given).
pub(crate) fn http(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(request.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let mut body = raw[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    Answer { status, head, body }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = raw.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(std::str::from_utf8(&raw[..end]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        out.extend_from_slice(&raw[end + 2..end + 2 + size]);
        raw = &raw[end + 2 + size + 2..];
    }
    out
}

/// A run recorded into a run directory.
pub(crate) struct Recorded {
    pub path: std::path::PathBuf,
    /// Every step's records, grouped by step.
    pub steps: Vec<Vec<mosaic_core::record::StepRecord>>,
    pub episodes: Vec<mosaic_core::record::EpisodeRecord>,
}

impl Recorded {
    /// The steps of one episode, in order.
    pub(crate) fn episode_steps(
        &self,
        operator: &str,
        episode: u32,
    ) -> Vec<&Vec<mosaic_core::record::StepRecord>> {
        let mut steps: Vec<_> = self
            .steps
            .iter()
            .filter(|s| s[0].operator_id == operator && s[0].episode_index == episode)
            .collect();
        steps.sort_by_key(|s| s[0].step_index);
        steps
    }
}

type Steps = Vec<Vec<mosaic_core::record::StepRecord>>;

fn manifest(run_id: &str, spec: &mosaic_core::ExperimentSpec) -> mosaic_core::record::RunManifest {
    mosaic_core::record::RunManifest {
        schema: mosaic_core::record::RUN_SCHEMA.into(),
        run_id: run_id.into(),
        seeds: spec.episode_seeds(),
        experiment: spec.clone(),
        versions: Default::default(),
        started: mosaic_core::record::now_ms(),
        shard: None,
    }
}

/// The baseline decider kinds plus `llm` (for runs of language-model agents answered by a
/// `mosaic_test_kit::chat_stub`).
fn deciders() -> mosaic_actors::DeciderRegistry {
    let mut deciders = mosaic_actors::DeciderRegistry::baselines();
    mosaic_llm::register(
        &mut deciders,
        std::sync::Arc::new(mosaic_llm::LlmResources::new()),
    );
    deciders
}

/// Runs `spec` in script mode (walk environments, baseline and `llm` operators), recording into
/// `sinks` when given, and collects every step's records (by operator, episode and step)
/// and the roll-ups.
fn run_with(
    run_id: &str,
    spec: &mosaic_core::ExperimentSpec,
    record: Option<(&mosaic_recorder::RunDir, &mosaic_recorder::RunStore)>,
) -> (Steps, Vec<mosaic_core::record::EpisodeRecord>) {
    let (episodes, collected) = actix_rt::System::new().block_on(async move {
        let (collected, mut subscribers) = mosaic_test_kit::collect::collector();
        let sinks = record.map(|(run, store)| {
            mosaic_actors::sink::Sinks::start(run, store, mosaic_recorder::Durability::Flush)
                .unwrap()
        });
        if let Some(sinks) = &sinks {
            subscribers.steps.extend(sinks.steps.iter().cloned());
            subscribers.episodes.extend(sinks.episodes.iter().cloned());
        }
        let runner = mosaic_actors::runner::Runner::new(
            spec.clone(),
            mosaic_core::RunId::from(run_id),
            std::sync::Arc::new(registry()),
            std::sync::Arc::new(deciders()),
        );
        let mut episodes = Vec::new();
        runner
            .run(mosaic_actors::runner::UnitPlan::All, subscribers, |e| {
                episodes.push(e.clone())
            })
            .await
            .unwrap();
        if let Some(sinks) = sinks {
            sinks.close().await.unwrap();
        }
        // Unit order: episode-major, operators in the experiment's order.
        let position = |id: &str| spec.operators.iter().position(|o| o.id == id);
        episodes.sort_by_key(|e| (e.episode_index, position(&e.operator_id)));
        (episodes, collected)
    });
    // Sessions wait for episode subscribers: once the collector has handled an episode's
    // roll-up, it has every step record before it. Grouped by step, agents in order.
    let mut by_step = std::collections::BTreeMap::<_, Vec<_>>::new();
    for record in collected.steps.lock().unwrap().iter() {
        let key = (
            record.operator_id.clone(),
            record.episode_index,
            record.step_index,
        );
        by_step.entry(key).or_default().push(record.clone());
    }
    (by_step.into_values().collect(), episodes)
}

/// Runs `spec` without recording it.
pub(crate) fn run_experiment(
    run_id: &str,
    spec: &mosaic_core::ExperimentSpec,
) -> (Steps, Vec<mosaic_core::record::EpisodeRecord>) {
    run_with(run_id, spec, None)
}

/// Stores the given records as run `run_id` in `runs_dir` with the recorder's writer (for
/// runs whose records a test has altered).
pub(crate) fn write_run(
    runs_dir: &std::path::Path,
    run_id: &str,
    spec: &mosaic_core::ExperimentSpec,
    steps: &Steps,
    episodes: &[mosaic_core::record::EpisodeRecord],
) -> std::path::PathBuf {
    let path = runs_dir.join(run_id);
    let (run, store) = mosaic_recorder::RunDir::create(&path, &manifest(run_id, spec)).unwrap();
    let mut writer = run
        .writer(&store, mosaic_recorder::Durability::Flush)
        .unwrap();
    for episode in episodes {
        for step in steps.iter().filter(|s| {
            s[0].operator_id == episode.operator_id && s[0].episode_index == episode.episode_index
        }) {
            writer.write_step(step).unwrap();
        }
        writer.write_episode(episode).unwrap();
        writer.commit().unwrap();
        writer.mark_complete(episode).unwrap();
    }
    writer.close().unwrap();
    path
}

/// Runs `spec` and records it as run `run_id` in `runs_dir` through the telemetry sink,
/// as `mosaic run` does.
pub(crate) fn record_run(
    runs_dir: &std::path::Path,
    run_id: &str,
    spec: mosaic_core::ExperimentSpec,
) -> Recorded {
    let path = runs_dir.join(run_id);
    let (run, store) = mosaic_recorder::RunDir::create(&path, &manifest(run_id, &spec)).unwrap();
    let (steps, episodes) = run_with(run_id, &spec, Some((&run, &store)));
    Recorded {
        path,
        steps,
        episodes,
    }
}

/// The frames of a recorded episode, replayed independently of the server: PNG of the
/// world after 0, 1, ... steps.
pub(crate) fn expected_frames(
    env_settings: &mosaic_core::Settings,
    seed: u64,
    steps: &[&Vec<mosaic_core::record::StepRecord>],
) -> Vec<Vec<u8>> {
    let mut env = registry().make("walk", env_settings).unwrap();
    env.reset(seed).unwrap();
    let agents = env.spec().agents.len();
    let mut frames = vec![env.render().unwrap().to_png().unwrap()];
    let mut transition = mosaic_core::Transition::new(agents);
    for records in steps {
        let mut actions = vec![None; agents];
        for r in records.iter() {
            actions[env.spec().agent_index(&r.agent_id).unwrap()] =
                r.action.map(mosaic_core::Action);
        }
        env.step(&actions, &mut transition).unwrap();
        frames.push(env.render().unwrap().to_png().unwrap());
    }
    frames
}

/// The `n`th answer of the talking runs' stub model: a `<think>` block, then stay, a note
/// in the scratchpad, and a message addressed to `blue` (from `red`; `blue` cannot address
/// itself, so its `@blue` stays in a broadcast), a broadcast, or nothing, in turn.
fn talk_answer(n: u32) -> String {
    let message = match n % 3 {
        0 => format!(r#", "message": "@blue note {n}""#),
        1 => format!(r#", "message": "note {n}""#),
        _ => String::new(),
    };
    format!(
        r#"<think>weighing move {n}</think>{{"action": "stay", "scratchpad": "plan {n}"{message}}}"#
    )
}

/// Records run `run_id` of two operators on the walk world: `talk`, two language-model
/// agents (answered by a stub model, see [`talk_answer`]) that message everyone, and
/// `quiet`, two random agents that never talk.
pub(crate) fn record_talking_run(runs_dir: &std::path::Path, run_id: &str) -> Recorded {
    let answers = std::sync::atomic::AtomicU32::new(0);
    let stub = mosaic_test_kit::chat_stub::start(move |_| {
        talk_answer(answers.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    });
    let llm = serde_json::json!({
        "kind": "llm",
        "backend": {"base_url": stub.url, "model": "stub"},
        "channel": "all",
        "record_prompt": true,
        "http_retries": 0,
    });
    let spec: mosaic_core::ExperimentSpec = serde_json::from_value(serde_json::json!({
        "name": "talking",
        "episodes": 2,
        "seeds": {"plan": "procedural", "base": 21},
        "max_steps": 6,
        "operators": [
            {"id": "talk", "env": "walk", "agents": {"*": llm}},
            {"id": "quiet", "env": "walk", "agents": {"*": {"kind": "random"}}}
        ]
    }))
    .unwrap();
    record_run(runs_dir, run_id, spec)
}

/// Trains a policy briefly (`mosaic train`'s trainer: PPO on MiniGrid DoorKey 5x5 cut at
/// 10 steps, 8 updates of 64 steps) into run `run_id` of `runs_dir`.
pub(crate) fn record_training_run(
    runs_dir: &std::path::Path,
    run_id: &str,
) -> mosaic_rl::train::TrainOutcome {
    mosaic_rl::train::Trainer::builder("web-training", "gridworld")
        .env_setting("task", "doorkey")
        .env_setting("size", 5)
        .env_setting("max_steps", 10)
        .learn("*")
        .seed(3)
        .total_steps(512)
        .parallel(2, 1)
        .rollout(32)
        .checkpoint_every(2)
        .build()
        .unwrap()
        .run(&mosaic_rl::train::TrainOptions {
            dir: runs_dir.join(run_id),
            run_id: run_id.into(),
            versions: Default::default(),
            progress: false,
        })
        .unwrap()
}
