//! A session's children, the environment and the deciders of its agents: how they are
//! started, which restart together, and how often they may.

use super::SessionConfig;
use crate::channel::{Channel, ChannelConfig};
use crate::decider::{DeciderHandle, DeciderRegistry, SessionResources, SpawnContext};
use crate::env_actor::EnvActor;
use actix::prelude::*;
use mosaic_core::EnvRegistry;
use mosaic_core::count::Count;
use mosaic_core::experiment::{RestartStrategy, SpecError};
use mosaic_core::registry::ScriptedConstructor;
use mosaic_core::{EnvSpec, Environment, OperatorSpec};
use mosaic_supervisor::{Intensity, RestartWindow};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One of a session's children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Child {
    Env,
    Agent(usize),
}

impl Child {
    /// Position in start order (the environment first).
    fn index(self) -> usize {
        match self {
            Child::Env => 0,
            Child::Agent(agent) => agent + 1,
        }
    }
}

/// Starts the session's children: the first time and on every restart.
struct Factory {
    envs: EnvRegistry,
    kinds: DeciderRegistry,
    operator: OperatorSpec,
    spec: Arc<EnvSpec>,
    scripted: Option<ScriptedConstructor>,
    resources: SessionResources,
}

impl Factory {
    fn env(&self) -> Result<Box<dyn Environment>, SpecError> {
        self.envs
            .make(&self.operator.env, &self.operator.env_settings)
    }

    /// Errors name the field relative to the operator spec (e.g. `agents.green_0.kind`).
    fn decider(&self, agent: usize) -> Result<DeciderHandle, SpecError> {
        let agent_id = &self.spec.agents[agent].id;
        let key = if self.operator.agents.contains_key(agent_id) {
            agent_id.as_str()
        } else {
            mosaic_core::experiment::DEFAULT_SLOT
        };
        let slot = self.operator.agents.get(key).ok_or_else(|| {
            SpecError::new(
                "agents",
                format!("no operator for agent `{agent_id}` (name it, or add a `\"*\"` slot)"),
            )
        })?;
        let cx = SpawnContext {
            env_name: &self.operator.env,
            env_settings: &self.operator.env_settings,
            spec: &self.spec,
            agent,
            slot,
            scripted: self.scripted,
            session: &self.resources,
        };
        self.kinds
            .spawn(&cx)
            .map_err(|e| e.within(&format!("agents.{key}")))
    }
}

/// The session's running children, replaced one by one on restarts, with what it takes to
/// restart them.
pub(super) struct Children {
    factory: Factory,
    pub(super) env: Addr<EnvActor>,
    /// Shared with in-flight decisions and viewers; a restart swaps in a new list.
    pub(super) deciders: Rc<Vec<DeciderHandle>>,
    strategy: RestartStrategy,
    /// Restarts per child, in [`Child::index`] order.
    windows: Vec<RestartWindow>,
    /// Whether a restart limit was reached: the session gave up on a child, which stays as
    /// it was (down, or failing) until [`Children::renew_after_escalation`].
    gave_up: bool,
    /// Whether the environment answered its last snapshot request with a snapshot.
    pub(super) env_snapshots: bool,
    /// Per agent: whether its operator answered its last checkpoint request with a state.
    pub(super) decider_states: Vec<bool>,
}

/// The restart limit was reached for a child.
pub(super) struct LimitReached(pub(super) Intensity);

impl Children {
    /// Starts the environment and the deciders of `operator`, trying each again after
    /// start failures within the restart limit of `config.supervision`. Answers the
    /// children, the environment's spec and the session's message channel. Errors name the
    /// offending field relative to the operator spec.
    pub(super) fn start(
        config: &SessionConfig,
        operator: &OperatorSpec,
        envs: &EnvRegistry,
        kinds: &DeciderRegistry,
    ) -> Result<(Self, Arc<EnvSpec>, Addr<Channel>), SpecError> {
        let intensity = Intensity::new(
            config.supervision.max_restarts,
            Duration::from_millis(config.supervision.period_ms),
        );
        let mut env_window = RestartWindow::new(intensity);
        let env = retry_start(&mut env_window, || {
            envs.make(&operator.env, &operator.env_settings)
        })?;
        let spec = Arc::new(env.spec().clone());
        for slot in operator.agents.keys() {
            if slot != mosaic_core::experiment::DEFAULT_SLOT && spec.agent_index(slot).is_none() {
                let known: Vec<_> = spec.agents.iter().map(|a| a.id.as_str()).collect();
                return Err(SpecError::new(
                    format!("agents.{slot}"),
                    format!(
                        "`{slot}` is not an agent of {} (agents: {})",
                        spec.name,
                        known.join(", ")
                    ),
                ));
            }
        }
        let channel = Channel::start(&spec, ChannelConfig::default());
        let factory = Factory {
            envs: envs.clone(),
            kinds: kinds.clone(),
            operator: operator.clone(),
            spec: spec.clone(),
            scripted: envs.get(&operator.env).and_then(|k| k.scripted),
            resources: SessionResources {
                channel: Some(channel.clone()),
                shared: Default::default(),
            },
        };
        let (deciders, decider_windows) = start_deciders(&factory, intensity)?;
        let decider_states = deciders.iter().map(|o| o.state.is_some()).collect();
        let children = Self {
            factory,
            env: EnvActor::new(env).start(),
            deciders: Rc::new(deciders),
            strategy: config.supervision.strategy,
            windows: std::iter::once(env_window).chain(decider_windows).collect(),
            gave_up: false,
            env_snapshots: true,
            decider_states,
        };
        Ok((children, spec, channel))
    }

    /// The children restarted when `failed` fails, in start order, as the strategy says.
    pub(super) fn restart_set(&self, failed: Child) -> Vec<Child> {
        let agents = self.deciders.len();
        let all = std::iter::once(Child::Env).chain((0..agents).map(Child::Agent));
        match self.strategy {
            RestartStrategy::OneForOne => vec![failed],
            RestartStrategy::OneForAll => all.collect(),
            RestartStrategy::RestForOne => all.filter(|c| c.index() >= failed.index()).collect(),
        }
    }

    /// Counts a restart of `child` now; past its limit, answers the limit instead.
    pub(super) fn allow_restart(&mut self, child: Child) -> Result<(), LimitReached> {
        let window = &mut self.windows[child.index()];
        if window.allow(Instant::now()) {
            Ok(())
        } else {
            self.gave_up = true;
            Err(LimitReached(window.intensity()))
        }
    }

    /// After the session gave up on a child, replaces every child with a fresh one and
    /// every restart window with an empty one, so that a later episode starts afresh
    /// instead of inheriting the exhausted window (`docs/semantics.md`, "Escalation").
    /// Does nothing otherwise. A child that cannot start fails this episode; the next one
    /// tries again.
    pub(super) fn renew_after_escalation(&mut self) -> Result<(), SpecError> {
        if !self.gave_up {
            return Ok(());
        }
        let intensity = self.windows[Child::Env.index()].intensity();
        let mut env_window = RestartWindow::new(intensity);
        let env = retry_start(&mut env_window, || self.factory.env())?;
        let (deciders, decider_windows) = start_deciders(&self.factory, intensity)?;
        self.env = EnvActor::new(env).start();
        self.decider_states = deciders.iter().map(|o| o.state.is_some()).collect();
        self.deciders = Rc::new(deciders);
        self.windows = std::iter::once(env_window).chain(decider_windows).collect();
        self.env_snapshots = true;
        self.gave_up = false;
        Ok(())
    }

    /// A new environment actor (not yet in place).
    pub(super) fn new_env(&self) -> Result<Addr<EnvActor>, SpecError> {
        Ok(EnvActor::new(self.factory.env()?).start())
    }

    /// A new operator for `agent` (not yet in place).
    pub(super) fn new_decider(&self, agent: usize) -> Result<DeciderHandle, SpecError> {
        self.factory.decider(agent)
    }

    /// Puts `handle` in place of `agent`'s operator.
    pub(super) fn replace_decider(&mut self, agent: usize, handle: DeciderHandle) {
        let mut deciders = self.deciders.as_ref().clone();
        deciders[agent] = handle;
        self.deciders = Rc::new(deciders);
    }
}

/// Starts the operator of every agent, each with its own restart window.
fn start_deciders(
    factory: &Factory,
    intensity: Intensity,
) -> Result<(Vec<DeciderHandle>, Vec<RestartWindow>), SpecError> {
    let agents = factory.spec.agents.len();
    let mut deciders = Vec::with_capacity(agents);
    let mut windows = Vec::with_capacity(agents);
    for agent in 0..agents {
        let mut window = RestartWindow::new(intensity);
        deciders.push(retry_start(&mut window, || factory.decider(agent))?);
        windows.push(window);
    }
    Ok((deciders, windows))
}

/// Starts a child with `start`, trying again after start failures while `window` allows.
fn retry_start<T>(
    window: &mut RestartWindow,
    mut start: impl FnMut() -> Result<T, SpecError>,
) -> Result<T, SpecError> {
    loop {
        match start() {
            Err(e) if e.start_failure && window.allow(Instant::now()) => {
                tracing::warn!(target: "mosaic::session", "{e}; starting again");
            }
            Err(e) if e.start_failure => {
                let attempts = Count(window.count() as u64, "attempt");
                return Err(SpecError {
                    message: format!("{} (gave up after {attempts})", e.message),
                    ..e
                });
            }
            other => return other,
        }
    }
}
