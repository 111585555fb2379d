//! Human players: the `human` decider kind.
//!
//! A human decider parks every [`Decide`] it gets in a [`HumanHub`] until a user interface
//! (the web page of `mosaic serve`, a test) answers it with [`HumanHub::choose`]. Only
//! legal actions are accepted. The session waits for the answer like for any slow
//! decider: a decision deadline, if the experiment sets one, turns a person who does not
//! answer in time into the environment's default action.
//!
//! The decider lives here rather than in the web crate because nothing in it is about
//! HTTP: any interface that can list [`HumanHub::pending`] choices and call
//! [`HumanHub::choose`] can seat a person.
//!
//! ```
//! use mosaic_actors::human::{self, HumanHub};
//! use mosaic_actors::DeciderRegistry;
//!
//! let hub = HumanHub::new();
//! let mut kinds = DeciderRegistry::baselines();
//! human::register(&mut kinds, hub.scoped("duel"));
//! assert!(kinds.get("human").is_some());
//! assert!(hub.pending().is_empty());
//! ```

use crate::decider::{DeciderHandle, DeciderKind, DeciderRegistry};
use crate::{BeginEpisode, Decide, DeciderError, LoadState, SaveState};
use actix::{Actor, Context, Handler, ResponseFuture};
use mosaic_core::experiment::parse_settings;
use mosaic_core::{Action, Decision, ObsRequest, Paradigm};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{oneshot, watch};

/// A decision a person is asked for.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PendingChoice {
    /// The operator configuration the agent plays in.
    pub operator_id: String,
    /// The agent's index.
    pub agent: usize,
    /// The agent's slot name.
    pub agent_id: String,
    /// The environment step the choice is for.
    pub step: u32,
    /// Indices of the legal actions.
    pub legal: Vec<u32>,
    /// The agent's text observation, when the environment writes one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Which way the agent faces on the full view (`up`, `down`, `left` or `right`), when
    /// the environment says so in its observation's info ([`mosaic_core::FACING_INFO`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facing: Option<String>,
}

/// A person's choice could not be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChoiceError {
    /// Nobody is waiting for this agent's decision (already answered, withdrawn, or not a
    /// human agent).
    #[error("no decision of agent {agent} in `{operator_id}` is awaited")]
    NotAwaited {
        /// The operator configuration named.
        operator_id: String,
        /// The agent index named.
        agent: usize,
    },
    /// The action is not legal at this step.
    #[error("action {action} is not legal for {agent_id} at step {step} (legal: {legal:?})")]
    Illegal {
        /// The agent.
        agent_id: String,
        /// The step.
        step: u32,
        /// The action chosen.
        action: u32,
        /// The legal actions.
        legal: Vec<u32>,
    },
}

/// A human agent gave no decision (its decision becomes the default action).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HumanError {
    /// The seat was withdrawn before the person chose (the episode was reset or ended).
    #[error("the human's choice was withdrawn")]
    Withdrawn,
    /// The decision deadline passed first.
    #[error("no choice before the deadline")]
    NoChoice,
}

type SeatKey = (String, usize);

struct Parked {
    choice: PendingChoice,
    ticket: u64,
    answer: oneshot::Sender<Action>,
}

struct Shared {
    parked: Mutex<BTreeMap<SeatKey, Parked>>,
    next_ticket: Mutex<u64>,
    version: watch::Sender<u64>,
}

/// Where human agents' decisions wait for a person. Clones share the same waiting room;
/// [`HumanHub::scoped`] labels the seats of one operator configuration.
#[derive(Clone)]
pub struct HumanHub {
    shared: Arc<Shared>,
    operator_id: Arc<str>,
}

impl std::fmt::Debug for HumanHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HumanHub")
            .field("operator_id", &self.operator_id)
            .field("pending", &self.pending().len())
            .finish()
    }
}

impl Default for HumanHub {
    fn default() -> Self {
        Self::new()
    }
}

impl HumanHub {
    /// An empty waiting room.
    pub fn new() -> Self {
        Self {
            shared: Arc::new(Shared {
                parked: Mutex::new(BTreeMap::new()),
                next_ticket: Mutex::new(0),
                version: watch::Sender::new(0),
            }),
            operator_id: Arc::from(""),
        }
    }

    /// The same waiting room, with the seats of human deciders registered through the
    /// result labelled `operator_id`.
    pub fn scoped(&self, operator_id: &str) -> Self {
        Self {
            shared: self.shared.clone(),
            operator_id: Arc::from(operator_id),
        }
    }

    fn parked(&self) -> MutexGuard<'_, BTreeMap<SeatKey, Parked>> {
        // A panic while holding the lock leaves the map consistent (single inserts and
        // removals), so a poisoned lock is still usable.
        self.shared
            .parked
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn bump(&self) {
        self.shared.version.send_modify(|v| *v += 1);
    }

    /// Every decision awaited, by operator configuration then agent.
    pub fn pending(&self) -> Vec<PendingChoice> {
        self.parked().values().map(|p| p.choice.clone()).collect()
    }

    /// Answers the awaited decision of `agent` in `operator_id` with `action`.
    pub fn choose(
        &self,
        operator_id: &str,
        agent: usize,
        action: Action,
    ) -> Result<(), ChoiceError> {
        let mut parked = self.parked();
        let key = (operator_id.to_owned(), agent);
        let Some(seat) = parked.get(&key) else {
            return Err(ChoiceError::NotAwaited {
                operator_id: operator_id.to_owned(),
                agent,
            });
        };
        if !seat.choice.legal.contains(&action.0) {
            return Err(ChoiceError::Illegal {
                agent_id: seat.choice.agent_id.clone(),
                step: seat.choice.step,
                action: action.0,
                legal: seat.choice.legal.clone(),
            });
        }
        if let Some(seat) = parked.remove(&key) {
            // The session may have given up on this decision (deadline): nothing to do.
            let _ = seat.answer.send(action);
        }
        drop(parked);
        self.bump();
        Ok(())
    }

    /// Withdraws every awaited decision (e.g. before Reset All): each fails, and the
    /// session takes the default action for it.
    pub fn withdraw_all(&self) {
        let withdrawn = std::mem::take(&mut *self.parked());
        if !withdrawn.is_empty() {
            self.bump();
        }
    }

    /// A receiver that sees a new value whenever the set of awaited decisions changes.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.version.subscribe()
    }

    fn park(&self, choice: PendingChoice, answer: oneshot::Sender<Action>) -> u64 {
        let ticket = {
            let mut next = self
                .shared
                .next_ticket
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            *next += 1;
            *next
        };
        let key = (choice.operator_id.clone(), choice.agent);
        self.parked().insert(
            key,
            Parked {
                choice,
                ticket,
                answer,
            },
        );
        self.bump();
        ticket
    }

    /// Removes the seat's entry if it is still the one parked with `ticket`.
    fn unpark(&self, key: &SeatKey, ticket: u64) {
        let mut parked = self.parked();
        if parked.get(key).is_some_and(|p| p.ticket == ticket) {
            parked.remove(key);
            drop(parked);
            self.bump();
        }
    }
}

/// The actor of one human agent.
struct HumanDecider {
    hub: HumanHub,
    agent: usize,
    agent_id: String,
}

impl Actor for HumanDecider {
    type Context = Context<Self>;
}

impl Handler<BeginEpisode> for HumanDecider {
    type Result = Result<(), DeciderError>;

    fn handle(&mut self, _: BeginEpisode, _: &mut Context<Self>) -> Self::Result {
        Ok(())
    }
}

/// A person carries their own state: nothing to save, and recovery never asks them again
/// for decisions already made.
impl Handler<SaveState> for HumanDecider {
    type Result = Result<Option<serde_json::Value>, DeciderError>;

    fn handle(&mut self, _: SaveState, _: &mut Context<Self>) -> Self::Result {
        Ok(Some(serde_json::Value::Null))
    }
}

impl Handler<LoadState> for HumanDecider {
    type Result = Result<(), DeciderError>;

    fn handle(&mut self, _: LoadState, _: &mut Context<Self>) -> Self::Result {
        Ok(())
    }
}

impl Handler<Decide> for HumanDecider {
    type Result = ResponseFuture<Result<Decision, DeciderError>>;

    fn handle(&mut self, msg: Decide, _: &mut Context<Self>) -> Self::Result {
        let choice = PendingChoice {
            operator_id: self.hub.operator_id.to_string(),
            agent: self.agent,
            agent_id: self.agent_id.clone(),
            step: msg.step,
            legal: msg.obs.legal_actions().map(|a| a.0).collect(),
            text: msg.obs.text.clone(),
            facing: msg
                .obs
                .info
                .as_ref()
                .and_then(|info| info.get(mosaic_core::FACING_INFO))
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned),
        };
        let key = (choice.operator_id.clone(), choice.agent);
        let (answer, chosen) = oneshot::channel();
        let ticket = self.hub.park(choice, answer);
        let hub = self.hub.clone();
        Box::pin(async move {
            let outcome = match msg.deadline {
                Some(at) => tokio::time::timeout_at(tokio::time::Instant::from_std(at), chosen)
                    .await
                    .ok(),
                None => Some(chosen.await),
            };
            hub.unpark(&key, ticket);
            match outcome {
                Some(Ok(action)) => Ok(Decision::act(action)),
                Some(Err(_)) => Err(HumanError::Withdrawn.into()),
                None => Err(HumanError::NoChoice.into()),
            }
        })
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HumanSettings {}

/// Registers the `human` decider kind: its agents wait in `hub` (labelled with the hub's
/// operator configuration, see [`HumanHub::scoped`]) for a person's choice.
pub fn register(registry: &mut DeciderRegistry, hub: HumanHub) {
    registry.register(DeciderKind {
        name: "human",
        summary: "a person choosing every action (keyboard or buttons in `mosaic serve`; legal actions only)",
        settings: &[],
        spawn: Arc::new(move |cx| {
            parse_settings::<HumanSettings>(&cx.slot.settings)?;
            let addr = HumanDecider {
                hub: hub.clone(),
                agent: cx.agent,
                agent_id: cx.spec.agents[cx.agent].id.clone(),
            }
            .start();
            Ok(DeciderHandle::new("human", Paradigm::Human, ObsRequest {
                    text: true,
                    ..ObsRequest::MASK_ONLY
                }, &addr).with_state(&addr))
        }),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decider::{SessionResources, SpawnContext};
    use mosaic_core::{AgentSpec, EnvSpec, Observation, SlotSpec, Stepping};
    use std::time::{Duration, Instant};

    fn spawn(hub: &HumanHub) -> DeciderHandle {
        let mut kinds = DeciderRegistry::default();
        register(&mut kinds, hub.scoped("duel"));
        let spec = Arc::new(EnvSpec {
            name: "t".into(),
            agents: vec![
                AgentSpec {
                    id: "a".into(),
                    team: None,
                    role: None,
                },
                AgentSpec {
                    id: "b".into(),
                    team: None,
                    role: None,
                },
            ],
            action_labels: vec!["stay".into(), "go".into(), "jump".into()],
            default_action: Action(0),
            stepping: Stepping::Simultaneous,
            max_steps: None,
            symbolic_shape: None,
            offers: ObsRequest::MASK_ONLY,
            descriptions: Default::default(),
        });
        kinds
            .spawn(&SpawnContext {
                env_name: "t",
                env_settings: &Default::default(),
                spec: &spec,
                agent: 1,
                slot: &SlotSpec::kind("human"),
                scripted: None,
                session: &SessionResources::default(),
            })
            .unwrap()
    }

    fn decide(step: u32, deadline: Option<Instant>) -> Decide {
        Decide {
            obs: Arc::new(Observation {
                info: Some(serde_json::json!({ mosaic_core::FACING_INFO: "left" })),
                ..Observation::with_mask(1, vec![true, false, true])
            }),
            step,
            deadline,
        }
    }

    #[actix::test]
    async fn a_parked_decision_takes_only_a_legal_choice() {
        let hub = HumanHub::new();
        let handle = spawn(&hub);
        assert_eq!(handle.paradigm, Paradigm::Human);
        let mut changes = hub.subscribe();
        let answer = handle.decide.send(decide(4, None));
        let answer = tokio::spawn(answer);
        changes.changed().await.unwrap();
        let pending = hub.pending();
        assert_eq!(
            pending,
            vec![PendingChoice {
                operator_id: "duel".into(),
                agent: 1,
                agent_id: "b".into(),
                step: 4,
                legal: vec![0, 2],
                text: None,
                facing: Some("left".into()),
            }]
        );
        assert!(matches!(
            hub.choose("duel", 1, Action(1)),
            Err(ChoiceError::Illegal { action: 1, .. })
        ));
        assert!(matches!(
            hub.choose("other", 1, Action(2)),
            Err(ChoiceError::NotAwaited { .. })
        ));
        hub.choose("duel", 1, Action(2)).unwrap();
        let decision = answer.await.unwrap().unwrap().unwrap();
        assert_eq!(decision.action, Action(2));
        assert!(hub.pending().is_empty());
        assert!(matches!(
            hub.choose("duel", 1, Action(2)),
            Err(ChoiceError::NotAwaited { .. })
        ));
    }

    #[actix::test]
    async fn a_deadline_or_a_withdrawal_clears_the_seat() {
        let hub = HumanHub::new();
        let handle = spawn(&hub);
        let late = handle
            .decide
            .send(decide(0, Some(Instant::now() + Duration::from_millis(30))))
            .await
            .unwrap();
        assert!(late.unwrap_err().to_string().contains("deadline"));
        assert!(hub.pending().is_empty());

        let mut changes = hub.subscribe();
        let answer = tokio::spawn(handle.decide.send(decide(1, None)));
        changes.changed().await.unwrap();
        assert_eq!(hub.pending().len(), 1);
        hub.withdraw_all();
        let withdrawn = answer.await.unwrap().unwrap();
        assert!(withdrawn.unwrap_err().to_string().contains("withdrawn"));
        assert!(hub.pending().is_empty());
    }
}
