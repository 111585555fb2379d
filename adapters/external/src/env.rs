//! [`ExternalEnv`]: an environment served by a worker process (or socket).
//!
//! Observation modalities travel with every `reset`/`step` reply once someone has asked for
//! them: the first [`Environment::observe`] that wants a modality the cached reply lacks
//! fetches it with an `observe` request and makes it sticky, so in steady state a step is
//! one round trip. The full render works the same way.

use crate::WorkerError;
use crate::link::{Link, Mode};
use crate::settings::{LINK_HELP, Launch, PROCESS_HELP, TOKEN_HELP, WorkerSettings, help_lines};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use mosaic_core::experiment::{SpecError, parse_settings};
use mosaic_core::{
    Action, AgentSpec, EnvError, EnvSpec, Environment, Frame, ObsRequest, Observation, Outcome,
    Settings, Snapshot, Stepping, Transition,
};
use mosaic_protocols::message::{
    Ack, FrameEncoding, Observe, Reset, State, Step, Want, capability, code,
};
use mosaic_protocols::wire::AgentView;
use mosaic_protocols::{Message, WorkerKind, mosaic};
use serde::Deserialize;
use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

/// Settings of external environments (`worker`, `gymnasium:<id>`, `pettingzoo:<path>`),
/// one line each for `mosaic envs`.
pub const SETTINGS_HELP: &[&str] = &HELP;

const HELP: [&str; 19] = help_lines(&[
    &[
        "command = []: the worker's argument vector (worker only; or connect)",
        "connect = \"\": tcp://host:port or unix:///path of a listening worker (worker only)",
        "python = $MOSAIC_PYTHON or python3: interpreter for gymnasium:/pettingzoo: workers",
        "kwargs = {}: constructor arguments of the Gymnasium / PettingZoo env",
        "api = <parallel if offered>: PettingZoo API, aec or parallel",
    ],
    &PROCESS_HELP,
    &["timeout_ms = 60000: deadline of one request (reset, step, observe)"],
    &LINK_HELP,
    &TOKEN_HELP,
    &[
        "options = {}: reset options passed to the env",
        "actions = []: action labels (MOSAIC workers only: they do not announce them)",
        "max_steps = <none>: step limit sent with MOSAIC resets",
    ],
]);

/// The settings of an external environment: the worker's, and how the environment is
/// served and reset.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalEnvSettings {
    /// The worker process and the link to it (`command` for `worker` only).
    #[serde(flatten)]
    pub worker: WorkerSettings,
    /// Interpreter for `gymnasium:` and `pettingzoo:` workers.
    #[serde(default)]
    pub python: Option<String>,
    /// Constructor arguments of the wrapped env.
    #[serde(default)]
    pub kwargs: Settings,
    /// PettingZoo API: `aec` or `parallel`.
    #[serde(default)]
    pub api: Option<String>,
    /// Reset options.
    #[serde(default)]
    pub options: Settings,
    /// Action labels (MOSAIC workers).
    #[serde(default)]
    pub actions: Option<Vec<String>>,
    /// Step limit sent with MOSAIC resets.
    #[serde(default)]
    pub max_steps: Option<u32>,
}

impl ExternalEnvSettings {
    fn python(&self) -> String {
        self.python
            .clone()
            .or_else(|| std::env::var("MOSAIC_PYTHON").ok())
            .unwrap_or_else(|| "python3".into())
    }
}

/// Which `mosaic_worker` front end serves a prefixed env name.
#[derive(Clone, Copy, Debug)]
pub enum Family<'a> {
    /// `gymnasium:<id>`.
    Gymnasium(&'a str),
    /// `pettingzoo:<module path>`.
    PettingZoo(&'a str),
}

/// Builds the external environment of `family` (or a plain `worker`) from settings.
pub fn make_external(
    family: Option<Family<'_>>,
    settings: &Settings,
) -> Result<Box<dyn Environment>, SpecError> {
    let parsed: ExternalEnvSettings = parse_settings(settings)?;
    let name = match family {
        Some(Family::Gymnasium(id)) => format!("gymnasium:{id}"),
        Some(Family::PettingZoo(path)) => format!("pettingzoo:{path}"),
        None => "worker".to_owned(),
    };
    let env =
        ExternalEnv::start(&name, family, &parsed).map_err(|e| match e.is_configuration() {
            true => SpecError::new("", format!("{name}: {e}")),
            false => SpecError::start_failure("", format!("{name}: {e}")),
        })?;
    Ok(Box::new(env))
}

/// An [`Environment`] served by an external worker.
pub struct ExternalEnv {
    link: RefCell<Link>,
    spec: EnvSpec,
    mosaic: bool,
    checkpoints: bool,
    frames: FrameEncoding,
    timeout: Duration,
    options: Settings,
    max_steps: Option<u32>,
    want: RefCell<Want>,
    acting: Vec<usize>,
    views: RefCell<Vec<Option<Observation>>>,
    views_want: ObsRequest,
    render: RefCell<Option<Arc<Frame>>>,
    steps: u32,
    running: bool,
    outcome: Option<Vec<Outcome>>,
    metrics: serde_json::Map<String, serde_json::Value>,
}

impl std::fmt::Debug for ExternalEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalEnv")
            .field("name", &self.spec.name)
            .field("steps", &self.steps)
            .finish_non_exhaustive()
    }
}

impl ExternalEnv {
    /// Starts (or connects to) the worker and completes the handshake.
    pub fn start(
        name: &str,
        family: Option<Family<'_>>,
        settings: &ExternalEnvSettings,
    ) -> Result<Self, WorkerError> {
        let worker = &settings.worker;
        let link = match family {
            Some(_) if worker.command.is_some() || worker.connect.is_some() => {
                return Err(WorkerError::Config(format!(
                    "{name} is served by mosaic_worker: `command` and `connect` are only for `worker`"
                )));
            }
            Some(family) => {
                let command = worker.worker_command_for(&family_argv(family, settings)?)?;
                Link::spawn(&command, name, &worker.link_options(WorkerKind::Env)?)?
            }
            None => match worker.launch(WorkerKind::Env)? {
                Launch::Spawn { command, options } => Link::spawn(&command, name, &options)?,
                Launch::Connect { endpoint, options } => Link::connect(&endpoint, name, &options)?,
            },
        };
        Self::from_link(link, name, settings)
    }

    /// Wraps a greeted link.
    pub fn from_link(
        link: Link,
        name: &str,
        settings: &ExternalEnvSettings,
    ) -> Result<Self, WorkerError> {
        let (spec, mosaic, checkpoints, frames) = match link.mode() {
            Mode::Native { hello, welcome } => {
                let spec = hello.env_spec().map_err(WorkerError::Malformed)?;
                validate_spec(&spec)?;
                (
                    spec,
                    false,
                    hello.has(capability::CHECKPOINT),
                    welcome.frames,
                )
            }
            Mode::Mosaic { .. } => {
                let labels = settings.actions.clone().ok_or_else(|| {
                    WorkerError::Config(
                        "MOSAIC workers do not announce their actions: set `actions = [labels]`"
                            .into(),
                    )
                })?;
                let spec = EnvSpec {
                    name: name.to_owned(),
                    agents: vec![AgentSpec {
                        id: "agent".into(),
                        team: None,
                        role: None,
                    }],
                    action_labels: labels,
                    default_action: Action(0),
                    stepping: Stepping::Single,
                    max_steps: settings.max_steps,
                    symbolic_shape: None,
                    offers: ObsRequest {
                        frame: true,
                        ..ObsRequest::MASK_ONLY
                    },
                    descriptions: Default::default(),
                };
                validate_spec(&spec)?;
                (spec, true, false, FrameEncoding::Rgb)
            }
        };
        let agents = spec.agents.len();
        Ok(Self {
            link: RefCell::new(link),
            spec,
            mosaic,
            checkpoints,
            frames,
            timeout: settings.worker.timeout(),
            options: settings.options.clone(),
            max_steps: settings.max_steps,
            want: RefCell::new(Want::default()),
            acting: Vec::new(),
            views: RefCell::new(vec![None; agents]),
            views_want: ObsRequest::MASK_ONLY,
            render: RefCell::new(None),
            steps: 0,
            running: false,
            outcome: None,
            metrics: serde_json::Map::new(),
        })
    }

    /// The frame encoding agreed with the worker.
    pub fn frame_encoding(&self) -> FrameEncoding {
        self.frames
    }

    /// Stops the worker now (also done on drop); returns its exit status if it was a
    /// process.
    pub fn close(&mut self) -> Option<String> {
        self.running = false;
        self.link.get_mut().close()
    }

    fn fail(&mut self, error: WorkerError) -> EnvError {
        let message = format!("{}: {error}", self.spec.name);
        match error {
            WorkerError::Remote {
                code: c,
                message: m,
            } if c == code::ILLEGAL_ACTION => EnvError::InvalidAction {
                agent: self.acting.first().copied().unwrap_or(0),
                reason: m,
            },
            // The worker refused the request before acting on it: the episode goes on.
            WorkerError::Remote { .. } => EnvError::Other(message),
            error if error.is_fatal() => {
                self.running = false;
                self.link.get_mut().abort();
                EnvError::Crashed(message)
            }
            _ => {
                self.running = false;
                EnvError::Other(message)
            }
        }
    }

    fn accept_views(&mut self, acting: Vec<usize>, views: &[AgentView]) -> Result<(), WorkerError> {
        let agents = self.spec.agents.len();
        if let Some(bad) = acting.iter().find(|a| **a >= agents) {
            return Err(WorkerError::Invalid(format!(
                "acting agent {bad} out of range ({agents} agents)"
            )));
        }
        let mut cache = vec![None; agents];
        for view in views {
            let slot = cache.get_mut(view.agent).ok_or_else(|| {
                WorkerError::Invalid(format!(
                    "observation of agent {} out of range ({agents} agents)",
                    view.agent
                ))
            })?;
            let obs = view
                .to_observation(self.steps, self.spec.action_labels.len())
                .map_err(|e| WorkerError::Invalid(e.to_string()))?;
            *slot = Some(obs);
        }
        self.acting = acting;
        self.views_want = self.want.borrow().obs();
        *self.views.get_mut() = cache;
        Ok(())
    }

    fn accept_render(
        &mut self,
        frame: Option<&mosaic_protocols::wire::WireFrame>,
    ) -> Result<(), WorkerError> {
        let frame = frame
            .map(|f| f.decode().map(Arc::new))
            .transpose()
            .map_err(|e| WorkerError::Invalid(format!("render: {e}")))?;
        *self.render.get_mut() = frame;
        Ok(())
    }

    fn reset_native(&mut self, seed: u64) -> Result<(), WorkerError> {
        let want = *self.want.get_mut();
        let options = self.options.clone();
        let reply = self.link.get_mut().request(
            |id| {
                Message::Reset(Reset {
                    id,
                    seed,
                    options,
                    want,
                })
            },
            self.timeout,
        )?;
        let Message::Observations(reply) = reply else {
            return Err(WorkerError::unexpected("observations", &reply));
        };
        if let Some(spec) = reply.spec {
            validate_spec(&spec)?;
            *self.views.get_mut() = vec![None; spec.agents.len()];
            self.spec = spec;
        }
        self.accept_views(reply.acting, &reply.agents)?;
        self.accept_render(reply.render.as_ref())
    }

    fn step_native(
        &mut self,
        actions: &[Option<Action>],
        out: &mut Transition,
    ) -> Result<(), WorkerError> {
        let want = *self.want.get_mut();
        let actions = actions.to_vec();
        let reply = self
            .link
            .get_mut()
            .request(|id| Message::Step(Step { id, actions, want }), self.timeout)?;
        let Message::Transition(t) = reply else {
            return Err(WorkerError::unexpected("transition", &reply));
        };
        let agents = self.spec.agents.len();
        for (field, len) in [
            ("rewards", t.rewards.len()),
            ("terminated", t.terminated.len()),
            ("truncated", t.truncated.len()),
        ] {
            if len != agents {
                return Err(WorkerError::Invalid(format!(
                    "`{field}` has {len} entries for {agents} agents"
                )));
            }
        }
        self.steps += 1;
        out.clear(agents);
        out.rewards.copy_from_slice(&t.rewards);
        out.terminated.copy_from_slice(&t.terminated);
        out.truncated.copy_from_slice(&t.truncated);
        out.events.extend(t.events);
        self.accept_views(t.acting, &t.agents)?;
        self.accept_render(t.render.as_ref())?;
        if t.outcome.as_ref().is_some_and(|o| o.len() != agents) {
            return Err(WorkerError::Invalid(format!(
                "`outcome` does not have {agents} entries"
            )));
        }
        self.outcome = t.outcome;
        self.metrics = t.metrics.unwrap_or_default();
        Ok(())
    }

    fn mosaic_view(&mut self, frame: Option<Frame>) {
        let legal = vec![true; self.spec.action_labels.len()];
        let frame = frame.map(Arc::new);
        let obs = Observation {
            agent: 0,
            step: self.steps,
            frame: frame.clone(),
            legal,
            ..Observation::default()
        };
        *self.views.get_mut() = vec![Some(obs)];
        self.views_want = ObsRequest::ALL;
        *self.render.get_mut() = frame;
    }

    fn reset_mosaic(&mut self, seed: u64) -> Result<(), WorkerError> {
        let command = mosaic::Command::Reset {
            seed,
            max_steps: self.max_steps,
        };
        let reply = self
            .link
            .get_mut()
            .mosaic_request(&command, "ready", self.timeout)?;
        let mosaic::Reply::Ready { render_payload } = reply else {
            return Err(WorkerError::unexpected_mosaic("ready", &reply));
        };
        self.acting = vec![0];
        self.mosaic_view(render_payload.and_then(|p| p.0));
        Ok(())
    }

    fn step_mosaic(
        &mut self,
        actions: &[Option<Action>],
        out: &mut Transition,
    ) -> Result<(), WorkerError> {
        let requested = actions.first().copied().flatten();
        let command = mosaic::Command::Step {
            action: requested.map(|a| a.0),
        };
        let reply = self
            .link
            .get_mut()
            .mosaic_request(&command, "step", self.timeout)?;
        let mosaic::Reply::Step(step) = reply else {
            return Err(WorkerError::unexpected_mosaic("step", &reply));
        };
        self.steps += 1;
        out.clear(1);
        out.rewards[0] = step.reward as f32;
        out.terminated[0] = step.terminated;
        out.truncated[0] = step.truncated;
        // MOSAIC's env-owning workers choose their own action: the session records the one
        // taken, with the request as an event.
        let taken = step.action.as_ref().and_then(|a| a.as_u64());
        if let Some(taken) = taken.and_then(|a| u32::try_from(a).ok())
            && Some(taken) != requested.map(|a| a.0)
        {
            out.executed[0] = Some(Action(taken));
        }
        self.acting = if step.terminated || step.truncated {
            Vec::new()
        } else {
            vec![0]
        };
        self.mosaic_view(step.render_payload.and_then(|p| p.0));
        Ok(())
    }

    fn fetch_view(&self, agent: usize, want: ObsRequest) -> Result<Observation, WorkerError> {
        let reply = self.link.borrow_mut().request(
            |id| Message::Observe(Observe { id, agent, want }),
            self.timeout,
        )?;
        let Message::Observation(reply) = reply else {
            return Err(WorkerError::unexpected("observation", &reply));
        };
        if reply.view.agent != agent {
            return Err(WorkerError::Invalid(format!(
                "asked for agent {agent}, got agent {}",
                reply.view.agent
            )));
        }
        reply
            .view
            .to_observation(self.steps, self.spec.action_labels.len())
            .map_err(|e| WorkerError::Invalid(e.to_string()))
    }
}

fn covers(have: ObsRequest, want: ObsRequest, offers: ObsRequest) -> bool {
    (have.symbolic || !want.symbolic || !offers.symbolic)
        && (have.text || !want.text || !offers.text)
        && (have.frame || !want.frame || !offers.frame)
}

fn validate_spec(spec: &EnvSpec) -> Result<(), WorkerError> {
    if spec.agents.is_empty() {
        return Err(WorkerError::Invalid("env spec has no agents".into()));
    }
    if spec.action_labels.is_empty() {
        return Err(WorkerError::Invalid("env spec has no actions".into()));
    }
    if spec.default_action.index() >= spec.action_labels.len() {
        return Err(WorkerError::Invalid(format!(
            "default action {} out of range ({} actions)",
            spec.default_action.0,
            spec.action_labels.len()
        )));
    }
    Ok(())
}

fn family_argv(
    family: Family<'_>,
    settings: &ExternalEnvSettings,
) -> Result<Vec<String>, WorkerError> {
    let kwargs = serde_json::Value::Object(settings.kwargs.clone()).to_string();
    let (front, target) = match family {
        Family::Gymnasium(id) => ("gymnasium", id),
        Family::PettingZoo(path) => ("pettingzoo", path),
    };
    if target.is_empty() {
        return Err(WorkerError::Config(format!(
            "`{front}:` needs a name after the colon"
        )));
    }
    let mut argv = vec![
        settings.python(),
        "-m".into(),
        "mosaic_worker".into(),
        front.into(),
        target.into(),
        "--kwargs".into(),
        kwargs,
    ];
    match (family, settings.api.as_deref()) {
        (_, None) => {}
        (Family::PettingZoo(_), Some(api @ ("aec" | "parallel"))) => {
            argv.extend(["--api".to_owned(), api.to_owned()]);
        }
        (_, Some(api)) => {
            return Err(WorkerError::Config(format!(
                "`api = \"{api}\"`: only pettingzoo: envs take an api, aec or parallel"
            )));
        }
    }
    Ok(argv)
}

impl Environment for ExternalEnv {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: u64) -> Result<(), EnvError> {
        self.steps = 0;
        self.outcome = None;
        self.metrics.clear();
        let result = if self.mosaic {
            self.reset_mosaic(seed)
        } else {
            self.reset_native(seed)
        };
        match result {
            Ok(()) => {
                self.running = true;
                Ok(())
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    fn acting(&self) -> Vec<usize> {
        if self.running {
            self.acting.clone()
        } else {
            Vec::new()
        }
    }

    fn observe(&self, agent: usize, want: ObsRequest) -> Observation {
        let fresh = self.want.borrow().obs();
        self.want.replace_with(|w| w.with_obs(want));
        if covers(self.views_want, want, self.spec.offers)
            && let Some(Some(obs)) = self.views.borrow().get(agent)
        {
            return obs.clone();
        }
        let needed = want.union(fresh);
        match self.fetch_view(agent, needed) {
            Ok(obs) => {
                if let Some(slot) = self.views.borrow_mut().get_mut(agent) {
                    *slot = Some(obs.clone());
                }
                obs
            }
            Err(e) => {
                tracing::warn!(target: "mosaic::worker", env = %self.spec.name, agent, "observation unavailable: {e}");
                let mut obs =
                    Observation::with_mask(agent, vec![false; self.spec.action_labels.len()]);
                obs.step = self.steps;
                obs.info = Some(serde_json::json!({ "error": e.to_string() }));
                obs
            }
        }
    }

    fn step(&mut self, actions: &[Option<Action>], out: &mut Transition) -> Result<(), EnvError> {
        if !self.running {
            return Err(EnvError::NotRunning);
        }
        let agents = self.spec.agents.len();
        if actions.len() != agents {
            return Err(EnvError::InvalidAction {
                agent: actions.len().min(agents),
                reason: format!("{} actions for {agents} agents", actions.len()),
            });
        }
        for (agent, action) in actions.iter().enumerate() {
            if let Some(action) = action
                && action.index() >= self.spec.action_labels.len()
            {
                return Err(EnvError::InvalidAction {
                    agent,
                    reason: format!(
                        "action {} out of range ({} actions)",
                        action.0,
                        self.spec.action_labels.len()
                    ),
                });
            }
        }
        let result = if self.mosaic {
            self.step_mosaic(actions, out)
        } else {
            self.step_native(actions, out)
        };
        match result {
            Ok(()) => {
                if self.acting.is_empty() {
                    self.running = false;
                }
                Ok(())
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    fn steps(&self) -> u32 {
        self.steps
    }

    fn render(&self) -> Option<Frame> {
        if let Some(frame) = self.render.borrow().as_ref() {
            return Some(Frame::clone(frame));
        }
        if self.mosaic || self.want.borrow().render {
            return None;
        }
        self.want.borrow_mut().render = true;
        let reply = self
            .link
            .borrow_mut()
            .request(|id| Message::Render(Ack { id }), self.timeout);
        let frame = match reply {
            Ok(Message::Rendered(r)) => r
                .frame
                .map(|f| f.decode())
                .transpose()
                .map_err(|e| e.to_string()),
            Ok(other) => Err(WorkerError::unexpected("rendered", &other).to_string()),
            Err(e) => Err(e.to_string()),
        };
        match frame {
            Ok(frame) => {
                let frame = frame.map(Arc::new);
                self.render.replace(frame.clone());
                frame.map(|f| Frame::clone(&f))
            }
            Err(e) => {
                tracing::warn!(target: "mosaic::worker", env = %self.spec.name, "render unavailable: {e}");
                None
            }
        }
    }

    fn outcome(&self) -> Option<Vec<Outcome>> {
        self.outcome.clone()
    }

    fn metrics(&self) -> serde_json::Map<String, serde_json::Value> {
        self.metrics.clone()
    }

    fn snapshot(&self) -> Option<Snapshot> {
        if !self.checkpoints {
            return None;
        }
        let reply = self
            .link
            .borrow_mut()
            .request(|id| Message::Checkpoint(Ack { id }), self.timeout);
        match reply {
            Ok(Message::State(state)) => {
                let saved = serde_json::json!({
                    "steps": self.steps,
                    "acting": self.acting,
                    "running": self.running,
                    "worker": state.data,
                });
                Some(Snapshot(saved.to_string().into_bytes()))
            }
            Ok(other) => {
                tracing::warn!(target: "mosaic::worker", env = %self.spec.name, "checkpoint: {}", WorkerError::unexpected("state", &other));
                None
            }
            Err(e) => {
                tracing::warn!(target: "mosaic::worker", env = %self.spec.name, "checkpoint failed: {e}");
                None
            }
        }
    }

    fn restore(&mut self, snapshot: &Snapshot) -> Result<(), EnvError> {
        #[derive(Deserialize)]
        struct Saved {
            steps: u32,
            acting: Vec<usize>,
            running: bool,
            worker: String,
        }
        if !self.checkpoints {
            return Err(EnvError::Unsupported(format!(
                "{} has no checkpoint support",
                self.spec.name
            )));
        }
        let saved: Saved = serde_json::from_slice(&snapshot.0)
            .map_err(|e| EnvError::Restore(format!("not an external env snapshot: {e}")))?;
        BASE64
            .decode(saved.worker.as_bytes())
            .map_err(|e| EnvError::Restore(format!("worker state is not base64: {e}")))?;
        let data = saved.worker;
        let reply = self
            .link
            .get_mut()
            .request(|id| Message::Restore(State { id, data }), self.timeout)
            .map_err(|e| EnvError::Restore(e.to_string()))?;
        if !matches!(reply, Message::Restored(_)) {
            return Err(EnvError::Restore(
                WorkerError::unexpected("restored", &reply).to_string(),
            ));
        }
        self.steps = saved.steps;
        self.acting = saved.acting;
        self.running = saved.running;
        *self.views.get_mut() = vec![None; self.spec.agents.len()];
        *self.render.get_mut() = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_default_and_reject_typos() {
        let s = ExternalEnvSettings::default();
        let parsed: ExternalEnvSettings = parse_settings(&Settings::new()).unwrap();
        assert_eq!(format!("{s:?}"), format!("{parsed:?}"));
        assert_eq!(s.worker.timeout_ms, 60_000);
        assert_eq!(s.worker.max_frame_bytes, 16 << 20);
        let mut bad = Settings::new();
        bad.insert("comand".into(), serde_json::json!(["x"]));
        let err = parse_settings::<ExternalEnvSettings>(&bad).unwrap_err();
        assert!(err.message.contains("comand"), "{err}");
    }

    #[test]
    fn worker_settings_are_read_among_the_env_settings() {
        let settings = serde_json::json!({
            "command": ["w"], "timeout_ms": 7, "grace_ms": 9, "frames": "rgb",
            "env": { "K": "v" }, "python": "py", "max_steps": 3
        });
        let serde_json::Value::Object(settings) = settings else {
            unreachable!("an object")
        };
        let parsed: ExternalEnvSettings = parse_settings(&settings).unwrap();
        assert_eq!(parsed.worker.command, Some(vec!["w".to_owned()]));
        assert_eq!((parsed.worker.timeout_ms, parsed.worker.grace_ms), (7, 9));
        assert_eq!(parsed.worker.frames, FrameEncoding::Rgb);
        assert_eq!(parsed.worker.env.get("K").map(String::as_str), Some("v"));
        assert_eq!(
            (parsed.python.as_deref(), parsed.max_steps),
            (Some("py"), Some(3))
        );
        for typo in ["timeout", "grace", "frame"] {
            let mut bad = settings.clone();
            bad.insert(typo.into(), 1.into());
            let err = parse_settings::<ExternalEnvSettings>(&bad).unwrap_err();
            assert!(err.message.contains(typo), "{typo}: {err}");
        }
        assert!(SETTINGS_HELP.iter().all(|line| !line.is_empty()));
        assert!(SETTINGS_HELP[7].starts_with("timeout_ms = "));
    }

    #[test]
    fn family_commands() {
        let mut s = ExternalEnvSettings {
            python: Some("py".into()),
            ..ExternalEnvSettings::default()
        };
        s.kwargs.insert("size".into(), 5.into());
        let argv = family_argv(Family::Gymnasium("MiniGrid-Empty-5x5-v0"), &s).unwrap();
        assert_eq!(
            argv,
            [
                "py",
                "-m",
                "mosaic_worker",
                "gymnasium",
                "MiniGrid-Empty-5x5-v0",
                "--kwargs",
                "{\"size\":5}"
            ]
        );
        s.api = Some("parallel".into());
        let argv = family_argv(Family::PettingZoo("mpe2/simple_spread_v3"), &s).unwrap();
        assert_eq!(argv[argv.len() - 2..], ["--api", "parallel"]);
        assert!(family_argv(Family::Gymnasium("CartPole-v1"), &s).is_err());
        s.api = Some("turns".into());
        assert!(family_argv(Family::PettingZoo("classic/chess_v6"), &s).is_err());
        assert!(family_argv(Family::PettingZoo(""), &ExternalEnvSettings::default()).is_err());
    }

    #[test]
    fn misconfigured_workers_are_errors() {
        let err = ExternalEnv::start("worker", None, &ExternalEnvSettings::default()).unwrap_err();
        assert!(err.to_string().contains("command"), "{err}");
        let both = ExternalEnvSettings {
            worker: WorkerSettings {
                connect: Some("tcp://127.0.0.1:1".into()),
                ..WorkerSettings::new(vec!["x".into()])
            },
            ..ExternalEnvSettings::default()
        };
        assert!(ExternalEnv::start("worker", None, &both).is_err());
        let bad_address = ExternalEnvSettings {
            worker: WorkerSettings {
                connect: Some("udp://x".into()),
                ..WorkerSettings::default()
            },
            ..ExternalEnvSettings::default()
        };
        assert!(matches!(
            ExternalEnv::start("worker", None, &bad_address),
            Err(WorkerError::Config(_))
        ));
        let family_with_command = ExternalEnvSettings {
            worker: WorkerSettings::new(vec!["x".into()]),
            ..ExternalEnvSettings::default()
        };
        assert!(matches!(
            ExternalEnv::start(
                "gymnasium:X",
                Some(Family::Gymnasium("X")),
                &family_with_command
            ),
            Err(WorkerError::Config(_))
        ));
    }

    #[test]
    fn coverage_of_cached_views() {
        let text = ObsRequest {
            text: true,
            ..ObsRequest::MASK_ONLY
        };
        assert!(covers(
            ObsRequest::MASK_ONLY,
            ObsRequest::MASK_ONLY,
            ObsRequest::ALL
        ));
        assert!(!covers(ObsRequest::MASK_ONLY, text, ObsRequest::ALL));
        assert!(covers(ObsRequest::MASK_ONLY, text, ObsRequest::MASK_ONLY));
        assert!(covers(ObsRequest::ALL, text, ObsRequest::ALL));
    }
}
