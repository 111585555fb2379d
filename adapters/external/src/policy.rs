//! [`PolicyWorker`]: a policy in another process (any language), asked over the tokio
//! driver ([`AsyncLink`]) to begin episodes, decide, and save and restore its state. The
//! `worker` decider kind of `mosaic-actors` is the actor around it.
//!
//! A `mosaic/1` worker says in its `hello` what it reads and its paradigm, and whether it
//! takes part in the team channel (capability `messages`: its `decide` requests carry the
//! agent's inbox, and the message of its decision is the caller's to post); unmodified
//! MOSAIC action-selector workers (`init_agent` / `select_action`, detected from their
//! `init` line) read whatever they are sent: the text when there is some, else the symbolic
//! tensor.

use crate::WorkerError;
use crate::link::{AsyncLink, Mode};
use crate::settings::{
    CONNECT_HELP, LINK_HELP, Launch, PROCESS_HELP, TOKEN_HELP, WorkerSettings, help_lines,
};
use mosaic_core::{Action, AgentContext, Decision, EnvSpec, ObsRequest, Observation, Paradigm};
use mosaic_protocols::message::{Ack, Envelope, FrameEncoding, InitAgent, State, capability, code};
use mosaic_protocols::wire::{WireObservation, legal_indices};
use mosaic_protocols::{Message, WorkerKind, mosaic};
use std::time::{Duration, Instant};

/// Settings of a policy worker, one line each (for `mosaic deciders`).
pub const SETTINGS_HELP: &[&str] = &HELP;

const HELP: [&str; 13] = help_lines(&[
    &["command = [...]: the worker's argument vector (or connect)"],
    &[CONNECT_HELP],
    &PROCESS_HELP,
    &["timeout_ms = 60000: deadline of one request (the session's decision deadline also applies)"],
    &LINK_HELP,
    &TOKEN_HELP,
]);

/// A greeted policy worker.
#[derive(Debug)]
pub struct PolicyWorker {
    link: AsyncLink,
    paradigm: Paradigm,
    wants: ObsRequest,
    frames: FrameEncoding,
    /// Whether the worker announced the `checkpoint` capability.
    checkpoints: bool,
    /// Whether the worker announced the `messages` capability.
    messages: bool,
    /// The agent of the current episode (MOSAIC workers are told it with every decision).
    agent_id: String,
}

impl PolicyWorker {
    /// Starts the worker `settings` describe, or connects to it where it listens, and
    /// completes the handshake (blocking, within `start_timeout_ms`). Must be called within
    /// a tokio runtime.
    pub fn start(settings: &WorkerSettings, name: &str) -> Result<Self, WorkerError> {
        let link = match settings.launch(WorkerKind::Policy)? {
            Launch::Spawn { command, options } => {
                AsyncLink::spawn(&command, name, &options, settings.timeout())?
            }
            Launch::Connect { endpoint, options } => {
                AsyncLink::connect(&endpoint, name, &options, settings.timeout())?
            }
        };
        let (paradigm, wants, frames, checkpoints, messages) = match link.mode() {
            Mode::Native { hello, welcome } => {
                let schema = hello.policy_schema().map_err(WorkerError::Malformed)?;
                (
                    schema.paradigm.unwrap_or(Paradigm::External),
                    schema.wants,
                    welcome.frames,
                    hello.has(capability::CHECKPOINT),
                    hello.has(capability::MESSAGES),
                )
            }
            Mode::Mosaic { .. } => (
                Paradigm::External,
                ObsRequest {
                    symbolic: true,
                    text: true,
                    frame: false,
                },
                FrameEncoding::Rgb,
                false,
                false,
            ),
        };
        Ok(Self {
            link,
            paradigm,
            wants,
            frames,
            checkpoints,
            messages,
            agent_id: String::new(),
        })
    }

    /// The worker's name in logs.
    pub fn name(&self) -> &str {
        self.link.name()
    }

    /// The paradigm the worker announced ([`Paradigm::External`] when it did not say).
    pub fn paradigm(&self) -> Paradigm {
        self.paradigm
    }

    /// The observation modalities the worker reads.
    pub fn wants(&self) -> ObsRequest {
        self.wants
    }

    /// Whether the worker announced the `checkpoint` capability.
    pub fn checkpoints(&self) -> bool {
        self.checkpoints
    }

    /// Whether the worker announced the `messages` capability: it reads an inbox with
    /// every decision and its messages are meant for the channel.
    pub fn messages(&self) -> bool {
        self.messages
    }

    /// Tells the worker a new episode begins for agent `ctx` of `spec`.
    pub async fn begin(&mut self, ctx: &AgentContext, spec: &EnvSpec) -> Result<(), WorkerError> {
        self.agent_id = ctx.agent_id.clone();
        match self.link.mode() {
            Mode::Native { .. } => {
                let request = |id| {
                    Message::InitAgent(InitAgent {
                        id,
                        agent_id: ctx.agent_id.clone(),
                        agent: ctx.agent,
                        seed: ctx.seed,
                        episode_seed: ctx.episode_seed,
                        env: spec.clone(),
                    })
                };
                match self.link.request(request, None).await? {
                    Message::AgentReady(_) => Ok(()),
                    other => Err(WorkerError::unexpected("agent_ready", &other)),
                }
            }
            Mode::Mosaic { .. } => {
                let command = mosaic::Command::InitAgent {
                    game_name: spec.name.clone(),
                    player_id: ctx.agent_id.clone(),
                };
                match self
                    .link
                    .mosaic_request(&command, "agent_ready", None)
                    .await?
                {
                    mosaic::Reply::AgentReady => Ok(()),
                    other => Err(WorkerError::unexpected_mosaic("agent_ready", &other)),
                }
            }
        }
    }

    /// The worker's decision on `obs` at `step`, answered before `deadline` if there is one;
    /// an illegal action is an error. `inbox`: the channel messages the agent reads now,
    /// sent only to a worker that announced the `messages` capability (whose message then
    /// comes back in [`WorkerDecision::message`] instead of the decision's detail).
    pub async fn decide(
        &mut self,
        obs: &Observation,
        step: u32,
        deadline: Option<Instant>,
        inbox: Option<Vec<Envelope>>,
    ) -> Result<WorkerDecision, WorkerError> {
        let action = match self.link.mode() {
            Mode::Native { .. } => {
                let observation = WireObservation::from_observation(obs, self.frames)
                    .map_err(|e| WorkerError::Invalid(e.to_string()))?;
                let legal = legal_indices(&obs.legal);
                let inbox = inbox.filter(|_| self.messages);
                let deadline_ms = deadline
                    .map(|d| d.saturating_duration_since(Instant::now()).as_millis() as u64);
                let request = |id| {
                    Message::Decide(mosaic_protocols::message::Decide {
                        id,
                        step,
                        observation,
                        legal,
                        deadline_ms,
                        inbox,
                    })
                };
                let reply = self.link.request(request, deadline).await?;
                let Message::Decision(reply) = reply else {
                    return Err(WorkerError::unexpected("decision", &reply));
                };
                let (message, recorded) = match self.messages {
                    true => (reply.message, None),
                    false => (None, reply.message.map(serde_json::Value::String)),
                };
                let mut detail = serde_json::Map::new();
                for (key, value) in [
                    ("text", reply.text.map(serde_json::Value::String)),
                    ("message", recorded),
                    ("usage", reply.usage),
                    ("detail", reply.detail),
                ] {
                    if let Some(value) = value {
                        detail.insert(key.into(), value);
                    }
                }
                check_legal(obs, reply.action)?;
                let mut decision = Decision::act(reply.action);
                if !detail.is_empty() {
                    decision.detail = Some(serde_json::Value::Object(detail));
                }
                return Ok(WorkerDecision { decision, message });
            }
            Mode::Mosaic { .. } => {
                let command = mosaic::Command::SelectAction {
                    observation: mosaic_observation(obs),
                    player_id: self.agent_id.clone(),
                    action_mask: Some(obs.legal.clone()),
                    info: obs.info.clone(),
                };
                match self
                    .link
                    .mosaic_request(&command, "action_selected", deadline)
                    .await?
                {
                    mosaic::Reply::ActionSelected { action } => {
                        u32::try_from(action).map(Action).map_err(|_| {
                            WorkerError::Invalid(format!("action {action} is not an action index"))
                        })?
                    }
                    other => {
                        return Err(WorkerError::unexpected_mosaic("action_selected", &other));
                    }
                }
            }
        };
        check_legal(obs, action)?;
        Ok(WorkerDecision {
            decision: Decision::act(action),
            message: None,
        })
    }

    /// The worker's state (its `checkpoint` answer, a base64 string); `None` when the
    /// worker did not announce the capability or says it cannot save its state now.
    pub async fn save_state(&mut self) -> Result<Option<String>, WorkerError> {
        if !self.checkpoints {
            return Ok(None);
        }
        match self
            .link
            .request(|id| Message::Checkpoint(Ack { id }), None)
            .await
        {
            Ok(Message::State(state)) => Ok(Some(state.data)),
            Ok(other) => Err(WorkerError::unexpected("state", &other)),
            Err(WorkerError::Remote { code: c, message }) if c == code::UNSUPPORTED => {
                tracing::info!(target: "mosaic::worker", worker = %self.name(), "cannot save its state now: {message}");
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Sends a state from [`PolicyWorker::save_state`] back with `restore`.
    pub async fn load_state(&mut self, data: String) -> Result<(), WorkerError> {
        let request = |id| Message::Restore(State { id, data });
        match self.link.request(request, None).await? {
            Message::Restored(_) => Ok(()),
            other => Err(WorkerError::unexpected("restored", &other)),
        }
    }

    /// Kills the worker's process group at once: for a worker that died or hung.
    pub fn kill(&mut self) {
        self.link.kill();
    }

    /// Stops the worker off the caller's thread (see [`AsyncLink::stop_in_background`]).
    pub fn stop_in_background(self, grace: Duration) {
        self.link.stop_in_background(grace);
    }
}

/// A policy worker's answer to `decide`.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerDecision {
    /// The decision, with the worker's `text`, `usage` and `detail` in its detail (and its
    /// `message` too when the worker does not take part in the channel: recorded, not
    /// posted).
    pub decision: Decision,
    /// The message of a worker that announced the `messages` capability, to be posted.
    pub message: Option<String>,
}

/// What MOSAIC workers get as `observation`: the text when there is one, else the symbolic
/// tensor as a flat list.
fn mosaic_observation(obs: &Observation) -> serde_json::Value {
    match (&obs.text, &obs.symbolic) {
        (Some(text), _) => serde_json::Value::String(text.clone()),
        (None, Some(tensor)) => serde_json::json!(tensor.data),
        (None, None) => serde_json::Value::Null,
    }
}

fn check_legal(obs: &Observation, action: Action) -> Result<(), WorkerError> {
    if obs.is_legal(action) {
        return Ok(());
    }
    let legal: Vec<u32> = legal_indices(&obs.legal).into_iter().take(20).collect();
    Err(WorkerError::Invalid(format!(
        "illegal action {} (legal: {legal:?}{})",
        action.0,
        if obs.legal.iter().filter(|l| **l).count() > 20 {
            " ..."
        } else {
            ""
        }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mosaic_observations_prefer_text() {
        let mut obs = Observation::with_mask(0, vec![true]);
        assert_eq!(mosaic_observation(&obs), serde_json::Value::Null);
        obs.symbolic = Some(mosaic_core::Tensor {
            shape: vec![2],
            data: vec![1.0, 2.0],
        });
        assert_eq!(mosaic_observation(&obs), serde_json::json!([1.0, 2.0]));
        obs.text = Some("board".into());
        assert_eq!(mosaic_observation(&obs), serde_json::json!("board"));
    }

    #[test]
    fn illegal_actions_are_errors() {
        let obs = Observation::with_mask(0, vec![false, true]);
        assert!(check_legal(&obs, Action(1)).is_ok());
        let err = check_legal(&obs, Action(0)).unwrap_err().to_string();
        assert!(
            err.contains("illegal action 0") && err.contains("[1]"),
            "{err}"
        );
        assert!(check_legal(&obs, Action(7)).is_err());
    }
}
