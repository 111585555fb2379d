//! Manual mode: the experiment's sessions side by side in a [`SessionGroup`], and the board
//! the page shows.
//!
//! Controls go to the group (Reset All, Step All, Run / Pause). A small relay actor hears
//! every session's step and episode events; after each step event (a session's steps come
//! in batches, each within milliseconds) the viewport of that session is refreshed (status from the session, full-view frame from its environment, PNG
//! encoded once and served to every viewer). The frame marks the agents people play
//! ([`mosaic_core::Environment::render_marked`]) where the environment can. Refreshes of one viewport never wait for
//! another's, so a person pondering a move in one game does not freeze the others.
//!
//! When recording, the sessions also report to the run's telemetry sink
//! ([`Recording`]); closing the board ends the episodes in progress, recorded as ended
//! with the error [`CLOSED`].

use crate::WebError;
use crate::record::{RecordConfig, Recording};
use actix::prelude::*;
use mosaic_actors::group::{EndAll, Pause, ResetAll, Resume, SessionGroup, StepAll};
use mosaic_actors::human::{self, ChoiceError, HumanHub};
use mosaic_actors::session::{GetStatus, Session, SessionConfig, SessionStatus};
use mosaic_actors::{DeciderRegistry, EpisodeEvent, StepEvent};
use mosaic_actors::{EnvActor, Render};
use mosaic_core::EnvRegistry;
use mosaic_core::record::EpisodeRecord;
use mosaic_core::{
    Action, DecisionSource, EnvSpec, ExperimentSpec, Outcome, Paradigm, RunId, SeedPlan, SpecError,
};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// Recent events kept per viewport.
const EVENT_LOG: usize = 8;

/// Run's pace when the experiment sets none (flat out is too fast to watch).
const DEFAULT_PACE_MS: u64 = 250;

/// The run id of manual sessions that are not recorded.
const UNRECORDED_RUN: &str = "manual";

/// The error recorded for the episodes in progress when the server stops.
pub(crate) const CLOSED: &str = "abandoned: the server stopped";

/// Why Step All and Run are refused once every episode has ended.
const EVERY_EPISODE_OVER: &str = "every episode is over: Reset All first";

/// A control could not be applied.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ControlError {
    /// Not now (e.g. Step All while running); the message says what to do.
    #[error("{0}")]
    Conflict(String),
    /// The request names something that does not exist.
    #[error("{0}")]
    Unknown(String),
    /// A person's choice was refused.
    #[error(transparent)]
    Choice(#[from] ChoiceError),
}

/// One agent as the page shows it.
#[derive(Clone, Debug, Serialize)]
struct AgentView {
    id: String,
    team: Option<String>,
    paradigm: Paradigm,
    kind: String,
}

struct LiveOperator {
    id: String,
    env: String,
    spec: Arc<EnvSpec>,
    agents: Vec<AgentView>,
    /// The agents people play, marked on the frames.
    humans: Vec<usize>,
    session: Addr<Session>,
    env_actor: Addr<EnvActor>,
}

/// An agent's last decision, as recorded.
#[derive(Clone, Debug, Serialize)]
struct AgentDetail {
    step: u32,
    action: Option<String>,
    source: Option<DecisionSource>,
    /// Operator details: an LLM's `raw`, `think`, `message`, `scratchpad`, `parse_ok`.
    decision: Option<Value>,
}

/// How an episode ended, per agent.
#[derive(Clone, Debug, Serialize)]
struct Ending {
    outcomes: Vec<Option<Outcome>>,
    error: Option<String>,
}

#[derive(Default)]
struct Viewport {
    status: Option<SessionStatus>,
    frame: Option<Arc<Vec<u8>>>,
    frame_version: u64,
    /// Whether the frame marks the people's agents.
    marked: bool,
    details: Vec<Option<AgentDetail>>,
    events: VecDeque<String>,
    ending: Option<Ending>,
    refreshing: bool,
    dirty: bool,
}

#[derive(Default)]
struct Board {
    seed: u64,
    next_seed: u64,
    running: bool,
    pace_ms: u64,
    stepping: bool,
    resetting: bool,
    error: Option<String>,
    viewports: Vec<Viewport>,
}

impl Board {
    /// Whether no viewport has an episode left to step.
    fn every_episode_over(&self) -> bool {
        self.viewports
            .iter()
            .all(|v| v.status.as_ref().is_none_or(|s| s.done))
    }
}

/// What the relay forwards.
enum Heard {
    Step(StepEvent),
    Episode(EpisodeEvent),
}

/// Forwards the sessions' events to the board's consumer task.
struct Relay(mpsc::UnboundedSender<Heard>);

impl Actor for Relay {
    type Context = Context<Self>;
}

impl Handler<StepEvent> for Relay {
    type Result = ();

    fn handle(&mut self, msg: StepEvent, _: &mut Context<Self>) {
        // The receiver lives as long as the server; a send after shutdown is moot.
        let _ = self.0.send(Heard::Step(msg));
    }
}

impl Handler<EpisodeEvent> for Relay {
    type Result = ();

    fn handle(&mut self, msg: EpisodeEvent, _: &mut Context<Self>) {
        let _ = self.0.send(Heard::Episode(msg));
    }
}

/// The experiment's sessions side by side.
pub(crate) struct Live {
    name: String,
    seeds: SeedPlan,
    max_steps: Option<u32>,
    recording: Option<Recording>,
    group: Addr<SessionGroup>,
    operators: Vec<LiveOperator>,
    hub: HumanHub,
    board: Mutex<Board>,
    changed: watch::Sender<u64>,
}

impl Live {
    /// Builds every operator configuration's session (with `human` registered), starts
    /// the group and resets it with the experiment's first seed. With `record`, every
    /// episode played is recorded into that run directory.
    pub(crate) async fn start(
        spec: ExperimentSpec,
        envs: &EnvRegistry,
        kinds: &DeciderRegistry,
        record: Option<&RecordConfig>,
    ) -> Result<Arc<Live>, WebError> {
        spec.validate()?;
        let recording = record
            .map(|config| Recording::create(config, &spec))
            .transpose()?;
        match Self::build(spec, envs, kinds, recording).await {
            Ok(live) => Ok(live),
            Err((error, recording)) => {
                if let Some(recording) = recording
                    && let Err(closing) = recording.close().await
                {
                    tracing::warn!(%closing, "closing the unused recording");
                }
                Err(error)
            }
        }
    }

    async fn build(
        spec: ExperimentSpec,
        envs: &EnvRegistry,
        kinds: &DeciderRegistry,
        recording: Option<Recording>,
    ) -> Result<Arc<Live>, (WebError, Option<Recording>)> {
        let hub = HumanHub::new();
        let (sender, receiver) = mpsc::unbounded_channel();
        let relay = Relay(sender).start();
        let run_id = RunId::from(recording.as_ref().map_or(UNRECORDED_RUN, |r| r.run_id()));
        let mut operators = Vec::with_capacity(spec.operators.len());
        for (index, operator) in spec.operators.iter().enumerate() {
            let mut decider_kinds = kinds.clone();
            human::register(&mut decider_kinds, hub.scoped(&operator.id));
            // The pace only paces script episodes; the board paces Run itself.
            let config = SessionConfig::from_spec(&spec, operator, run_id.clone());
            let mut subscribers = recording
                .as_ref()
                .map(Recording::subscribers)
                .unwrap_or_default();
            subscribers.steps.push(relay.clone().recipient());
            subscribers.episodes.push(relay.clone().recipient());
            let built = Session::build(config, operator, envs, &decider_kinds, subscribers);
            let session = match built {
                Ok(session) => session,
                Err(e) => {
                    let e = e.within(&format!("operators[{index}]"));
                    let error = WebError::Experiment(SpecError::new(e.path, e.message));
                    return Err((error, recording));
                }
            };
            let spec = session.spec().clone();
            let agents = spec
                .agents
                .iter()
                .zip(session.operators().iter())
                .map(|(agent, handle)| AgentView {
                    id: agent.id.clone(),
                    team: agent.team.clone(),
                    paradigm: handle.paradigm,
                    kind: handle.kind.clone(),
                })
                .collect::<Vec<AgentView>>();
            let humans = agents
                .iter()
                .enumerate()
                .filter(|(_, a)| a.paradigm == Paradigm::Human)
                .map(|(index, _)| index)
                .collect();
            let env_actor = session.env();
            operators.push(LiveOperator {
                id: operator.id.clone(),
                env: operator.env.clone(),
                spec,
                agents,
                humans,
                session: session.start(),
                env_actor,
            });
        }
        let group = SessionGroup::new(operators.iter().map(|o| o.session.clone()).collect());
        let first_seed = spec.seeds.seed(0).unwrap_or_default();
        let board = Board {
            seed: first_seed,
            next_seed: first_seed,
            pace_ms: if spec.pace_ms == 0 {
                DEFAULT_PACE_MS
            } else {
                spec.pace_ms
            },
            viewports: operators
                .iter()
                .map(|o| Viewport {
                    details: vec![None; o.agents.len()],
                    ..Viewport::default()
                })
                .collect(),
            ..Board::default()
        };
        let live = Arc::new(Live {
            name: spec.name.clone(),
            seeds: spec.seeds.clone(),
            max_steps: spec.max_steps,
            recording,
            group: group.start(),
            operators,
            hub,
            board: Mutex::new(board),
            changed: watch::Sender::new(0),
        });
        actix::spawn(consume(live.clone(), receiver));
        if let Err(error) = live.reset(first_seed).await {
            live.close().await;
            return Err((WebError::Start(error), None));
        }
        Ok(live)
    }

    /// Ends the episodes in progress (recorded, when recording, as ended with the error
    /// [`CLOSED`]) and closes the recording. Awaited human moves are withdrawn.
    pub(crate) async fn close(&self) -> Option<Result<(), WebError>> {
        self.group.do_send(Pause);
        let mut parked = self.hub.subscribe();
        let end = self.group.send(EndAll {
            reason: CLOSED.into(),
        });
        tokio::pin!(end);
        let ended = loop {
            self.hub.withdraw_all();
            tokio::select! {
                ended = &mut end => break ended,
                changed = parked.changed() => if changed.is_err() { break (&mut end).await },
            }
        };
        match ended {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => tracing::warn!(%error, "ending the manual episodes"),
            Err(error) => tracing::warn!(%error, "ending the manual episodes: group gone"),
        }
        let recording = self.recording.as_ref()?;
        Some(recording.close().await)
    }

    /// The run the board records into: its id and directory.
    pub(crate) fn recording(&self) -> Option<(&str, &std::path::Path)> {
        self.recording.as_ref().map(|r| (r.run_id(), r.dir()))
    }

    fn board(&self) -> MutexGuard<'_, Board> {
        // Board updates are single assignments: a poisoned lock still holds a usable board.
        self.board
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Applies `change` to the board and tells every viewer.
    fn update<T>(&self, change: impl FnOnce(&mut Board) -> T) -> T {
        let out = change(&mut self.board());
        self.changed.send_modify(|v| *v += 1);
        out
    }

    /// Receivers that see a new value whenever the board or the set of awaited human
    /// choices changes.
    pub(crate) fn subscribe(&self) -> (watch::Receiver<u64>, watch::Receiver<u64>) {
        (self.changed.subscribe(), self.hub.subscribe())
    }

    fn operator_index(&self, id: &str) -> Option<usize> {
        self.operators.iter().position(|o| o.id == id)
    }

    /// What never changes: the experiment, its operator configurations and agents.
    pub(crate) fn setup(&self) -> Value {
        let operators: Vec<Value> = self
            .operators
            .iter()
            .map(|o| {
                json!({
                    "id": o.id,
                    "env": o.env,
                    "stepping": o.spec.stepping,
                    "action_labels": o.spec.action_labels,
                    "agents": o.agents,
                })
            })
            .collect();
        let recording = self
            .recording
            .as_ref()
            .map(|r| json!({ "run_id": r.run_id(), "name": r.name() }));
        let [r, g, b] = mosaic_core::canvas::MARK;
        json!({
            "experiment": self.name,
            "max_steps": self.max_steps,
            "mark": {"name": mosaic_core::canvas::MARK_NAME, "colour": format!("#{r:02x}{g:02x}{b:02x}")},
            "operators": operators,
            "recording": recording,
        })
    }

    /// Everything that changes, for the page.
    pub(crate) fn snapshot(&self) -> Value {
        let pending = self.hub.pending();
        let board = self.board();
        let viewports: Vec<Value> = board
            .viewports
            .iter()
            .zip(&self.operators)
            .map(|(v, o)| {
                let waiting: Vec<_> = pending.iter().filter(|p| p.operator_id == o.id).collect();
                let mut status = json!(v.status);
                crate::seed_as_text(&mut status);
                json!({
                    "id": o.id,
                    "status": status,
                    "frame": v.frame.as_ref().map(|_| v.frame_version),
                    "marked": v.marked,
                    "details": v.details,
                    "events": v.events,
                    "ending": v.ending,
                    "waiting": waiting,
                })
            })
            .collect();
        // Seeds are u64: as text they survive JavaScript's doubles.
        let recording = self.recording.as_ref().map(
            |r| json!({ "run_id": r.run_id(), "episodes": r.episodes(), "error": r.failure() }),
        );
        json!({
            "recording": recording,
            "seed": board.seed.to_string(),
            "next_seed": board.next_seed.to_string(),
            "running": board.running,
            "pace_ms": board.pace_ms,
            "stepping": board.stepping,
            "resetting": board.resetting,
            "error": board.error,
            "waiting": pending.len(),
            "viewports": viewports,
        })
    }

    /// The latest frame of an operator configuration, PNG encoded.
    pub(crate) fn frame(&self, operator_id: &str) -> Result<Option<Arc<Vec<u8>>>, ControlError> {
        let index = self.operator_index(operator_id).ok_or_else(|| {
            ControlError::Unknown(format!("no operator configuration `{operator_id}`"))
        })?;
        Ok(self.board().viewports[index].frame.clone())
    }

    /// Reset All with `seed`: awaited human choices are withdrawn (repeatedly, should
    /// queued steps park new ones) until the group has reset.
    pub(crate) async fn reset(self: &Arc<Self>, seed: u64) -> Result<(), String> {
        self.update(|b| {
            b.resetting = true;
            b.running = false;
            b.error = None;
        });
        let mut parked = self.hub.subscribe();
        let reset = self.group.send(ResetAll { seed });
        tokio::pin!(reset);
        let outcome = loop {
            self.hub.withdraw_all();
            tokio::select! {
                outcome = &mut reset => break outcome,
                changed = parked.changed() => if changed.is_err() { break (&mut reset).await },
            }
        };
        let result = match outcome {
            Ok(Ok(statuses)) => Ok(statuses),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(format!("session group gone: {e}")),
        };
        self.update(|b| {
            b.resetting = false;
            match &result {
                Ok(statuses) => {
                    let episode = statuses.first().map_or(0, |s| s.episode_index);
                    b.seed = seed;
                    b.next_seed = self
                        .seeds
                        .seed(episode + 1)
                        .unwrap_or_else(|| seed.wrapping_add(1));
                    for (viewport, status) in b.viewports.iter_mut().zip(statuses) {
                        viewport.status = Some(status.clone());
                        viewport.details.iter_mut().for_each(|d| *d = None);
                        viewport.events.clear();
                        viewport.ending = None;
                    }
                }
                Err(message) => b.error = Some(format!("Reset All failed: {message}")),
            }
        });
        // Answer once every viewport shows its new world.
        futures::future::join_all((0..self.operators.len()).map(|i| self.fetch(i, false))).await;
        result.map(|_| ())
    }

    /// Step All: every operator configuration advances one step (answers at once; the
    /// step completes when every decision, a person's included, has been made).
    pub(crate) fn step(self: &Arc<Self>) -> Result<(), ControlError> {
        self.update(|b| {
            if b.resetting {
                return Err(ControlError::Conflict("Reset All is in progress".into()));
            }
            if b.running {
                return Err(ControlError::Conflict(
                    "the group is running: pause it first".into(),
                ));
            }
            if b.stepping {
                return Err(ControlError::Conflict(
                    "a Step All is in progress (is a human player's move awaited?)".into(),
                ));
            }
            if b.every_episode_over() {
                return Err(ControlError::Conflict(EVERY_EPISODE_OVER.into()));
            }
            b.stepping = true;
            b.error = None;
            Ok(())
        })?;
        let live = self.clone();
        actix::spawn(async move {
            let outcome = live.group.send(StepAll).await;
            live.update(|b| {
                b.stepping = false;
                b.error = match outcome {
                    Ok(Ok(_)) => None,
                    Ok(Err(e)) => Some(format!("Step All failed: {e}")),
                    Err(e) => Some(format!("Step All failed: session group gone: {e}")),
                };
            });
            live.refresh_all();
        });
        Ok(())
    }

    /// Run: steps the group `pace_ms` apart until every episode is over or Pause.
    /// Called again while running, changes the pace.
    pub(crate) fn run(&self, pace_ms: u64) -> Result<(), ControlError> {
        self.update(|b| {
            if b.resetting || b.stepping {
                return Err(ControlError::Conflict(
                    "wait for the Reset All or Step All in progress".into(),
                ));
            }
            if b.every_episode_over() {
                return Err(ControlError::Conflict(EVERY_EPISODE_OVER.into()));
            }
            b.running = true;
            b.pace_ms = pace_ms;
            b.error = None;
            Ok(())
        })?;
        self.group.do_send(Resume {
            pace: Duration::from_millis(pace_ms),
        });
        Ok(())
    }

    /// Pause: stops after the step in progress.
    pub(crate) fn pause(&self) {
        self.group.do_send(Pause);
        self.update(|b| b.running = false);
    }

    /// A person's move for `agent` of `operator_id`.
    pub(crate) fn choose(
        &self,
        operator_id: &str,
        agent: usize,
        action: u32,
    ) -> Result<(), ControlError> {
        if self.operator_index(operator_id).is_none() {
            return Err(ControlError::Unknown(format!(
                "no operator configuration `{operator_id}`"
            )));
        }
        self.hub.choose(operator_id, agent, Action(action))?;
        Ok(())
    }

    /// Takes in one event; answers the viewport it concerns, if any changed.
    fn absorb(&self, heard: Heard) -> Option<usize> {
        if let Some(recording) = &self.recording {
            let episode = match &heard {
                Heard::Step(event) => event.records.first().map(|r| (r.episode_index, r.seed)),
                Heard::Episode(event) => Some((event.record.episode_index, event.record.seed)),
            };
            if let Some((index, seed)) = episode {
                recording.saw(index, seed);
            }
        }
        match heard {
            Heard::Step(event) => {
                let first = event.records.first()?;
                let index = self.operator_index(&first.operator_id)?;
                let spec = &self.operators[index].spec;
                let mut board = self.board();
                let viewport = &mut board.viewports[index];
                if viewport
                    .status
                    .as_ref()
                    .is_some_and(|s| s.episode_index != first.episode_index)
                {
                    return None;
                }
                for record in event.records.iter() {
                    let Some(agent) = spec.agent_index(&record.agent_id) else {
                        continue;
                    };
                    if record.action.is_some() {
                        viewport.details[agent] = Some(AgentDetail {
                            step: record.step_index,
                            action: record.action_label.clone(),
                            source: record.decision_source,
                            decision: record.decision.clone(),
                        });
                    }
                    for event in &record.events {
                        let who = event
                            .agent
                            .and_then(|a| spec.agents.get(a))
                            .map_or(String::new(), |a| format!(" ({})", a.id));
                        if viewport.events.len() == EVENT_LOG {
                            viewport.events.pop_front();
                        }
                        viewport
                            .events
                            .push_back(format!("step {}: {}{who}", record.step_index, event.kind));
                    }
                }
                Some(index)
            }
            Heard::Episode(event) => {
                let record: &EpisodeRecord = &event.record;
                let index = self.operator_index(&record.operator_id)?;
                let mut board = self.board();
                let viewport = &mut board.viewports[index];
                if viewport
                    .status
                    .as_ref()
                    .is_some_and(|s| s.episode_index != record.episode_index)
                {
                    return None;
                }
                viewport.ending = Some(Ending {
                    outcomes: record.agents.iter().map(|a| a.outcome).collect(),
                    error: record.error.clone(),
                });
                Some(index)
            }
        }
    }

    fn refresh_all(self: &Arc<Self>) {
        for index in 0..self.operators.len() {
            self.refresh(index);
        }
    }

    /// Fetches the status and frame of one viewport into the board once; answers whether
    /// it was asked for again meanwhile (only when `coalescing`).
    async fn fetch(&self, index: usize, coalescing: bool) -> bool {
        let operator = &self.operators[index];
        let (status, frame) = futures::join!(
            operator.session.send(GetStatus),
            operator.env_actor.send(Render {
                marked: operator.humans.clone(),
            })
        );
        let png = match frame {
            Ok(Some((frame, marked))) => match frame.to_png() {
                Ok(png) => Some((Arc::new(png), marked)),
                Err(error) => {
                    tracing::warn!(operator = %operator.id, %error, "cannot encode frame");
                    None
                }
            },
            _ => None,
        };
        self.update(|b| {
            let viewport = &mut b.viewports[index];
            if let Ok(Some(status)) = status {
                viewport.status = Some(status);
            }
            if let Some((png, marked)) = png {
                viewport.frame = Some(png);
                viewport.marked = marked;
                viewport.frame_version += 1;
            }
            let again = coalescing && std::mem::take(&mut viewport.dirty);
            if coalescing {
                viewport.refreshing = again;
            }
            if b.running && b.every_episode_over() {
                b.running = false;
            }
            again
        })
    }

    /// Fetches the status and frame of one viewport in the background (again, if asked
    /// while fetching).
    fn refresh(self: &Arc<Self>, index: usize) {
        {
            let mut board = self.board();
            let viewport = &mut board.viewports[index];
            if viewport.refreshing {
                viewport.dirty = true;
                return;
            }
            viewport.refreshing = true;
        }
        let live = self.clone();
        actix::spawn(async move { while live.fetch(index, true).await {} });
    }
}

/// Applies the relay's events in batches: one refresh per touched viewport per batch.
async fn consume(live: Arc<Live>, mut heard: mpsc::UnboundedReceiver<Heard>) {
    while let Some(first) = heard.recv().await {
        let mut touched = BTreeSet::new();
        let mut next = Some(first);
        while let Some(event) = next {
            touched.extend(live.absorb(event));
            next = heard.try_recv().ok();
        }
        for index in touched {
            live.refresh(index);
        }
    }
}
