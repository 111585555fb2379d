//! Deciders: whatever answers [`Decide`] for an agent slot.
//!
//! Synchronous policies (random, scripted, RL inference) run inside a [`PolicyActor`];
//! asynchronous deciders (LLM, human, external worker) are actors of their own that answer
//! the same two messages. The [`DeciderRegistry`] turns an experiment's slot spec into an
//! [`DeciderHandle`].

use crate::{BeginEpisode, Decide, DeciderError, LoadState, SaveState, StateError};
use actix::{Actor, Addr, Context, Handler, Recipient};
use mosaic_core::experiment::{SpecError, parse_settings};
use mosaic_core::registry::ScriptedConstructor;
use mosaic_core::{Decision, EnvSpec, ObsRequest, Paradigm, Policy, Settings, SlotSpec};
use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

/// The actor around a synchronous [`Policy`].
pub struct PolicyActor {
    policy: Box<dyn Policy>,
}

impl std::fmt::Debug for PolicyActor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyActor").finish_non_exhaustive()
    }
}

impl PolicyActor {
    /// Wraps `policy`.
    pub fn new(policy: Box<dyn Policy>) -> Self {
        Self { policy }
    }
}

impl Actor for PolicyActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // Sessions pipeline many agents' requests; the default capacity of 16 is too small
        // for wide games and costs a wake-up per overflow.
        ctx.set_mailbox_capacity(1024);
    }
}

impl Handler<BeginEpisode> for PolicyActor {
    type Result = Result<(), DeciderError>;

    fn handle(&mut self, msg: BeginEpisode, _: &mut Context<Self>) -> Self::Result {
        self.policy.reset(&msg.ctx);
        Ok(())
    }
}

impl Handler<Decide> for PolicyActor {
    type Result = Result<Decision, DeciderError>;

    fn handle(&mut self, msg: Decide, _: &mut Context<Self>) -> Self::Result {
        Ok(self.policy.decide(&msg.obs))
    }
}

impl Handler<SaveState> for PolicyActor {
    type Result = Result<Option<serde_json::Value>, DeciderError>;

    fn handle(&mut self, _: SaveState, _: &mut Context<Self>) -> Self::Result {
        Ok(self.policy.save_state())
    }
}

impl Handler<LoadState> for PolicyActor {
    type Result = Result<(), DeciderError>;

    fn handle(&mut self, msg: LoadState, _: &mut Context<Self>) -> Self::Result {
        self.policy
            .load_state(&msg.0)
            .map_err(|reason| StateError::Policy(reason).into())
    }
}

/// A running decider for one agent slot.
#[derive(Clone)]
pub struct DeciderHandle {
    /// The registered kind, e.g. `scripted`.
    pub kind: String,
    /// Shown as the agent's badge and recorded.
    pub paradigm: Paradigm,
    /// Observation modalities the decider reads.
    pub wants: ObsRequest,
    /// Episode start.
    pub begin: Recipient<BeginEpisode>,
    /// Decisions.
    pub decide: Recipient<Decide>,
    /// Checkpoints, when the decider can save and restore its state.
    pub state: Option<StateHandle>,
}

/// Where a decider's state is saved and restored (see [`SaveState`], [`LoadState`]).
#[derive(Clone)]
pub struct StateHandle {
    /// Answers checkpoints.
    pub save: Recipient<SaveState>,
    /// Restores them.
    pub load: Recipient<LoadState>,
}

impl std::fmt::Debug for StateHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateHandle").finish_non_exhaustive()
    }
}

impl fmt::Debug for DeciderHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeciderHandle")
            .field("kind", &self.kind)
            .field("paradigm", &self.paradigm)
            .finish_non_exhaustive()
    }
}

impl DeciderHandle {
    /// The handle of a running decider actor (without checkpoints; see
    /// [`DeciderHandle::with_state`]).
    pub fn new<A>(
        kind: impl Into<String>,
        paradigm: Paradigm,
        wants: ObsRequest,
        addr: &Addr<A>,
    ) -> Self
    where
        A: Actor + Handler<BeginEpisode> + Handler<Decide>,
        A::Context: actix::dev::ToEnvelope<A, BeginEpisode> + actix::dev::ToEnvelope<A, Decide>,
    {
        Self {
            kind: kind.into(),
            paradigm,
            wants,
            begin: addr.clone().recipient(),
            decide: addr.clone().recipient(),
            state: None,
        }
    }

    /// With checkpoints through `addr`.
    pub fn with_state<A>(mut self, addr: &Addr<A>) -> Self
    where
        A: Actor + Handler<SaveState> + Handler<LoadState>,
        A::Context: actix::dev::ToEnvelope<A, SaveState> + actix::dev::ToEnvelope<A, LoadState>,
    {
        self.state = Some(StateHandle {
            save: addr.clone().recipient(),
            load: addr.clone().recipient(),
        });
        self
    }

    /// Starts `policy` in a [`PolicyActor`] on the current arbiter.
    pub fn start_policy(kind: impl Into<String>, policy: Box<dyn Policy>) -> Self {
        let paradigm = policy.paradigm();
        let wants = policy.wants();
        let addr = PolicyActor::new(policy).start();
        Self::new(kind, paradigm, wants, &addr).with_state(&addr)
    }
}

/// What the deciders of one session share (the session builds it once).
#[derive(Debug, Default, Clone)]
pub struct SessionResources {
    /// The session's message channel, when its agents may talk.
    pub channel: Option<actix::Addr<crate::channel::Channel>>,
    /// Objects a decider kind shares between the agents of the session.
    pub shared: SessionShared,
}

/// Objects shared between the deciders of one session, by key: e.g. one loaded network
/// answering for every agent that acts with the same checkpoint. They live as long as the
/// session (restarted deciders find them again).
///
/// ```
/// use mosaic_actors::decider::SessionShared;
/// let shared = SessionShared::default();
/// let first: Result<u32, ()> = shared.get_or_try_insert("net:a", || Ok(7));
/// let again: Result<u32, ()> = shared.get_or_try_insert("net:a", || Ok(8));
/// assert_eq!((first, again), (Ok(7), Ok(7)));
/// ```
#[derive(Clone, Default)]
pub struct SessionShared(Arc<Mutex<HashMap<String, Box<dyn Any + Send>>>>);

impl SessionShared {
    /// The object under `key`, made by `make` the first time it is asked for. A `make`
    /// that fails stores nothing, so the next decider asking tries again (and reports its
    /// own error). Keys are namespaced by the kinds using them (e.g. `rl:`); an object of
    /// another type under `key` is replaced.
    pub fn get_or_try_insert<T, E>(
        &self,
        key: &str,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E>
    where
        T: Clone + Send + 'static,
    {
        // A decider that panicked while holding the lock left the map whole: each insert
        // is a single call.
        let mut objects = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = objects.get(key).and_then(|o| o.downcast_ref::<T>()) {
            return Ok(found.clone());
        }
        let made = make()?;
        objects.insert(key.to_owned(), Box::new(made.clone()));
        Ok(made)
    }
}

impl fmt::Debug for SessionShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let objects = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_set().entries(objects.keys()).finish()
    }
}

/// What a decider kind gets to build the decider of one agent slot.
#[derive(Debug)]
pub struct SpawnContext<'a> {
    /// Environment name.
    pub env_name: &'a str,
    /// Environment settings.
    pub env_settings: &'a Settings,
    /// The environment's spec.
    pub spec: &'a Arc<EnvSpec>,
    /// The agent's index.
    pub agent: usize,
    /// The slot's kind and settings.
    pub slot: &'a SlotSpec,
    /// The environment's scripted heuristic, if it has one.
    pub scripted: Option<ScriptedConstructor>,
    /// What the deciders of this session share.
    pub session: &'a SessionResources,
}

/// Builds the decider of one agent slot; runs inside an actix system.
pub type SpawnFn = Arc<dyn Fn(&SpawnContext<'_>) -> Result<DeciderHandle, SpecError> + Send + Sync>;

/// A registered decider kind.
#[derive(Clone)]
pub struct DeciderKind {
    /// Name used in experiment files, e.g. `random`.
    pub name: &'static str,
    /// One line for `mosaic deciders`.
    pub summary: &'static str,
    /// Settings with their defaults, one `name = default: meaning` line each.
    pub settings: &'static [&'static str],
    /// Builder.
    pub spawn: SpawnFn,
}

impl fmt::Debug for DeciderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeciderKind")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The decider kinds an experiment can name.
#[derive(Clone, Debug, Default)]
pub struct DeciderRegistry {
    kinds: Vec<DeciderKind>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NoSettings {}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NoopSettings {
    #[serde(default)]
    action: Option<String>,
}

impl DeciderRegistry {
    /// The baselines: `random`, `noop`, `cycling`, `scripted`.
    pub fn baselines() -> Self {
        let mut registry = Self::default();
        registry.register(DeciderKind {
            name: "random",
            summary: "uniform over the legal actions; seeded from (episode seed, agent id)",
            settings: &[],
            spawn: Arc::new(|cx| {
                parse_settings::<NoSettings>(&cx.slot.settings)?;
                Ok(DeciderHandle::start_policy(
                    "random",
                    Box::new(mosaic_core::baseline::Random::default()),
                ))
            }),
        });
        registry.register(DeciderKind {
            name: "noop",
            summary: "always the same action (the environment's default unless set)",
            settings: &["action = <env default>: label of the action to repeat"],
            spawn: Arc::new(|cx| {
                let settings = parse_settings::<NoopSettings>(&cx.slot.settings)?;
                let action = match settings.action {
                    None => cx.spec.default_action,
                    Some(label) => {
                        let index = cx
                            .spec
                            .action_labels
                            .iter()
                            .position(|l| *l == label)
                            .ok_or_else(|| {
                                SpecError::new(
                                    "action",
                                    format!(
                                        "`{label}` is not an action of {} (actions: {})",
                                        cx.spec.name,
                                        cx.spec.action_labels.join(", ")
                                    ),
                                )
                            })?;
                        mosaic_core::Action(index as u32)
                    }
                };
                Ok(DeciderHandle::start_policy(
                    "noop",
                    Box::new(mosaic_core::baseline::Noop {
                        action: Some(action),
                    }),
                ))
            }),
        });
        registry.register(DeciderKind {
            name: "cycling",
            summary: "cycles through the legal actions in order",
            settings: &[],
            spawn: Arc::new(|cx| {
                parse_settings::<NoSettings>(&cx.slot.settings)?;
                Ok(DeciderHandle::start_policy(
                    "cycling",
                    Box::new(mosaic_core::baseline::Cycling::default()),
                ))
            }),
        });
        registry.register(DeciderKind {
            name: "scripted",
            summary: "the environment's own heuristic (settings depend on the environment)",
            settings: &[],
            spawn: Arc::new(|cx| {
                let make = cx.scripted.ok_or_else(|| {
                    SpecError::new(
                        "kind",
                        format!("environment `{}` has no scripted heuristic", cx.env_name),
                    )
                })?;
                let policy = make(cx.env_settings, &cx.slot.settings)?;
                Ok(DeciderHandle::start_policy("scripted", policy))
            }),
        });
        registry
    }

    /// Adds (or replaces) a kind.
    pub fn register(&mut self, kind: DeciderKind) {
        self.kinds.retain(|k| k.name != kind.name);
        self.kinds.push(kind);
    }

    /// Looks a kind up.
    pub fn get(&self, name: &str) -> Option<&DeciderKind> {
        self.kinds.iter().find(|k| k.name == name)
    }

    /// All kinds in registration order.
    pub fn kinds(&self) -> &[DeciderKind] {
        &self.kinds
    }

    /// Builds the decider for one slot.
    pub fn spawn(&self, cx: &SpawnContext<'_>) -> Result<DeciderHandle, SpecError> {
        let kind = self.get(&cx.slot.kind).ok_or_else(|| {
            let known: Vec<_> = self.kinds.iter().map(|k| k.name).collect();
            SpecError::new(
                "kind",
                format!(
                    "unknown decider kind `{}` (known: {})",
                    cx.slot.kind,
                    known.join(", ")
                ),
            )
        })?;
        SpecError::guard(
            "",
            || format!("decider kind `{}`", kind.name),
            || (kind.spawn)(cx),
        )
    }
}
