//! A small deterministic grid game that draws itself, for exercising the web interface in
//! every stepping mode: agents walk on a walled grid towards a goal; the first to reach it
//! gets +1 and ends the episode. Moves into walls or other agents are illegal. The seed
//! places the goal and the agents.

#![allow(dead_code)]

use mosaic_core::canvas::Canvas;
use mosaic_core::experiment::parse_settings;
use mosaic_core::rng::seeded;
use mosaic_core::{
    Action, AgentSpec, EnvError, EnvSpec, Environment, Event, Frame, ObsRequest, Observation,
    Outcome, Settings, SpecError, Stepping, Transition,
};
use mosaic_core::{EnvKind, EnvRegistry};
use rand::Rng;

pub const TILE: u32 = 24;
pub const LABELS: [&str; 5] = ["stay", "left", "right", "up", "down"];
const COLOURS: [[u8; 3]; 2] = [[220, 60, 60], [60, 110, 230]];

pub struct Walk {
    spec: EnvSpec,
    width: i32,
    height: i32,
    goal: (i32, i32),
    positions: Vec<(i32, i32)>,
    steps: u32,
    turn: usize,
    winner: Option<usize>,
    running: bool,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct WalkSettings {
    #[serde(default = "simultaneous")]
    stepping: Stepping,
    #[serde(default = "default_width")]
    width: i32,
    #[serde(default = "default_height")]
    height: i32,
}

fn simultaneous() -> Stepping {
    Stepping::Simultaneous
}
fn default_width() -> i32 {
    8
}
fn default_height() -> i32 {
    6
}

impl Walk {
    pub fn new(stepping: Stepping, width: i32, height: i32) -> Self {
        let agents = match stepping {
            Stepping::Single => vec![AgentSpec {
                id: "solo".into(),
                team: None,
            }],
            _ => vec![
                AgentSpec {
                    id: "red".into(),
                    team: Some("red".into()),
                },
                AgentSpec {
                    id: "blue".into(),
                    team: Some("blue".into()),
                },
            ],
        };
        Self {
            spec: EnvSpec {
                name: "walk".into(),
                agents,
                action_labels: LABELS.iter().map(|l| l.to_string()).collect(),
                default_action: Action(0),
                stepping,
                max_steps: None,
                symbolic_shape: None,
                offers: ObsRequest {
                    symbolic: false,
                    text: true,
                    frame: false,
                },
            },
            width,
            height,
            goal: (0, 0),
            positions: Vec::new(),
            steps: 0,
            turn: 0,
            winner: None,
            running: false,
        }
    }

    fn target(&self, agent: usize, action: Action) -> (i32, i32) {
        let (x, y) = self.positions[agent];
        match action.0 {
            1 => (x - 1, y),
            2 => (x + 1, y),
            3 => (x, y - 1),
            4 => (x, y + 1),
            _ => (x, y),
        }
    }

    pub fn legal(&self, agent: usize) -> Vec<bool> {
        (0..LABELS.len() as u32)
            .map(|a| {
                let (x, y) = self.target(agent, Action(a));
                a == 0
                    || (x >= 0
                        && y >= 0
                        && x < self.width
                        && y < self.height
                        && !self.positions.contains(&(x, y)))
            })
            .collect()
    }
}

impl Environment for Walk {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: u64) -> Result<(), EnvError> {
        let mut rng = seeded(seed);
        let mut cell = |taken: &[(i32, i32)]| loop {
            let c = (
                rng.random_range(0..self.width),
                rng.random_range(0..self.height),
            );
            if !taken.contains(&c) {
                return c;
            }
        };
        self.goal = cell(&[]);
        let mut taken = vec![self.goal];
        self.positions.clear();
        for _ in 0..self.spec.agents.len() {
            let c = cell(&taken);
            taken.push(c);
            self.positions.push(c);
        }
        self.steps = 0;
        self.turn = 0;
        self.winner = None;
        self.running = true;
        Ok(())
    }

    fn acting(&self) -> Vec<usize> {
        if !self.running {
            return vec![];
        }
        match self.spec.stepping {
            Stepping::Sequential => vec![self.turn],
            _ => (0..self.spec.agents.len()).collect(),
        }
    }

    fn observe(&self, agent: usize, want: ObsRequest) -> Observation {
        let mut obs = Observation::with_mask(agent, self.legal(agent));
        obs.step = self.steps;
        if want.text {
            let (x, y) = self.positions[agent];
            obs.text = Some(format!(
                "you are at ({x}, {y}); the goal is at ({}, {})",
                self.goal.0, self.goal.1
            ));
        }
        obs
    }

    fn step(&mut self, actions: &[Option<Action>], out: &mut Transition) -> Result<(), EnvError> {
        if !self.running {
            return Err(EnvError::NotRunning);
        }
        let agents = self.spec.agents.len();
        out.clear(agents);
        for agent in self.acting() {
            let action =
                actions
                    .get(agent)
                    .copied()
                    .flatten()
                    .ok_or_else(|| EnvError::InvalidAction {
                        agent,
                        reason: "no action".into(),
                    })?;
            if !self
                .legal(agent)
                .get(action.index())
                .copied()
                .unwrap_or(false)
            {
                return Err(EnvError::InvalidAction {
                    agent,
                    reason: format!("{} is not legal", action.0),
                });
            }
            self.positions[agent] = self.target(agent, action);
            if self.positions[agent] == self.goal && self.winner.is_none() {
                self.winner = Some(agent);
            }
        }
        self.steps += 1;
        self.turn = (self.turn + 1) % agents;
        if let Some(winner) = self.winner {
            out.rewards[winner] = 1.0;
            out.terminated = vec![true; agents];
            out.events.push(Event {
                kind: "goal".into(),
                agent: Some(winner),
                detail: None,
            });
            self.running = false;
        }
        Ok(())
    }

    fn steps(&self) -> u32 {
        self.steps
    }

    fn render(&self) -> Option<Frame> {
        let (w, h) = (self.width as u32 * TILE, self.height as u32 * TILE);
        let mut canvas = Canvas::new(w, h, [34, 38, 46]);
        for x in 0..self.width {
            for y in 0..self.height {
                canvas.outline_rect(
                    i64::from(x) * i64::from(TILE),
                    i64::from(y) * i64::from(TILE),
                    TILE,
                    TILE,
                    [60, 66, 78],
                );
            }
        }
        let at = |c: i32| i64::from(c) * i64::from(TILE);
        canvas.fill_rect(
            at(self.goal.0) + 3,
            at(self.goal.1) + 3,
            TILE - 6,
            TILE - 6,
            [70, 190, 90],
        );
        for (agent, (x, y)) in self.positions.iter().enumerate() {
            let colour = if self.spec.agents.len() == 1 {
                [240, 150, 40]
            } else {
                COLOURS[agent % 2]
            };
            let centre = |c: i32| (c as f32 + 0.5) * TILE as f32;
            canvas.fill_circle(centre(*x), centre(*y), TILE as f32 * 0.36, colour);
        }
        Some(canvas.into_frame())
    }

    fn outcome(&self) -> Option<Vec<Outcome>> {
        let winner = self.winner?;
        Some(
            (0..self.spec.agents.len())
                .map(|a| {
                    if a == winner {
                        Outcome::Win
                    } else {
                        Outcome::Loss
                    }
                })
                .collect(),
        )
    }
}

fn make(settings: &Settings) -> Result<Box<dyn Environment>, SpecError> {
    let s: WalkSettings = parse_settings(settings)?;
    Ok(Box::new(Walk::new(s.stepping, s.width, s.height)))
}

pub fn registry() -> EnvRegistry {
    let mut registry = EnvRegistry::default();
    registry.register(EnvKind {
        name: "walk",
        summary: "agents walk to a goal on a small grid",
        settings: &[
            "stepping = simultaneous: single, sequential or simultaneous",
            "width = 8: columns",
            "height = 6: rows",
        ],
        make,
        scripted: None,
    });
    registry
}

/// A server running on its own thread (with its own actix system) until dropped.
pub struct Running {
    pub addr: std::net::SocketAddr,
    /// The address to open the page at, as `mosaic serve` prints it.
    pub login_url: String,
    handle: actix_web::dev::ServerHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

pub fn serve_in_background(
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
pub struct Answer {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One HTTP/1.1 request over a fresh connection (`Host` is the server's unless given).
pub fn http(
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

/// Collects the step events and roll-ups of a run.
#[derive(Clone, Default)]
struct Collected {
    steps: std::sync::Arc<std::sync::Mutex<Vec<mosaic_actors::StepEvent>>>,
}

struct Collector(Collected);

impl actix::Actor for Collector {
    type Context = actix::Context<Self>;
}

impl actix::Handler<mosaic_actors::StepEvent> for Collector {
    type Result = ();
    fn handle(&mut self, msg: mosaic_actors::StepEvent, _: &mut actix::Context<Self>) {
        self.0.steps.lock().unwrap().push(msg);
    }
}

/// Sessions wait for episode subscribers: once the collector has handled an episode's
/// roll-up, it has handled every step event before it.
impl actix::Handler<mosaic_actors::EpisodeEvent> for Collector {
    type Result = ();
    fn handle(&mut self, _: mosaic_actors::EpisodeEvent, _: &mut actix::Context<Self>) {}
}

/// A run recorded into a run directory.
pub struct Recorded {
    pub path: std::path::PathBuf,
    /// Every step's records, grouped by step.
    pub steps: Vec<Vec<mosaic_core::record::StepRecord>>,
    pub episodes: Vec<mosaic_core::record::EpisodeRecord>,
}

impl Recorded {
    /// The steps of one episode, in order.
    pub fn episode_steps(
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

/// Runs `spec` in script mode (walk environments, baseline operators), recording into
/// `sinks` when given, and collects every step's records (by operator, episode and step)
/// and the roll-ups.
fn run_with(
    run_id: &str,
    spec: &mosaic_core::ExperimentSpec,
    record: Option<(&mosaic_recorder::RunDir, &mosaic_recorder::RunStore)>,
) -> (Steps, Vec<mosaic_core::record::EpisodeRecord>) {
    use actix::Actor;
    let collected = Collected::default();
    let episodes = {
        let collected = collected.clone();
        actix_rt::System::new().block_on(async move {
            let collector = Collector(collected).start();
            let mut subscribers = mosaic_actors::session::Subscribers {
                steps: vec![collector.clone().recipient()],
                episodes: vec![collector.recipient()],
                checkpoints: Vec::new(),
            };
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
                std::sync::Arc::new(mosaic_actors::DeciderRegistry::baselines()),
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
            episodes
        })
    };
    let mut steps: Steps = collected
        .steps
        .lock()
        .unwrap()
        .iter()
        .flat_map(|batch| batch.steps().map(<[_]>::to_vec))
        .collect();
    steps.sort_by_key(|s| {
        (
            s[0].operator_id.clone(),
            s[0].episode_index,
            s[0].step_index,
        )
    });
    (steps, episodes)
}

/// Runs `spec` without recording it.
pub fn run_experiment(
    run_id: &str,
    spec: &mosaic_core::ExperimentSpec,
) -> (Steps, Vec<mosaic_core::record::EpisodeRecord>) {
    run_with(run_id, spec, None)
}

/// Stores the given records as run `run_id` in `runs_dir` with the recorder's writer (for
/// runs whose records a test has altered).
pub fn write_run(
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
pub fn record_run(
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
pub fn expected_frames(
    env_settings: &Settings,
    seed: u64,
    steps: &[&Vec<mosaic_core::record::StepRecord>],
) -> Vec<Vec<u8>> {
    let mut env = make(env_settings).unwrap();
    env.reset(seed).unwrap();
    let agents = env.spec().agents.len();
    let mut frames = vec![env.render().unwrap().to_png().unwrap()];
    let mut transition = Transition::new(agents);
    for records in steps {
        let mut actions = vec![None; agents];
        for r in records.iter() {
            actions[env.spec().agent_index(&r.agent_id).unwrap()] = r.action.map(Action);
        }
        env.step(&actions, &mut transition).unwrap();
        frames.push(env.render().unwrap().to_png().unwrap());
    }
    frames
}
