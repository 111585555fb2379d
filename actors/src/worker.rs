//! External policy workers: a decider in another process (any language) behind the worker
//! protocol, answering [`BeginEpisode`] and [`Decide`] like every decider.
//!
//! The worker itself ([`PolicyWorker`]: process, handshake, requests with deadlines, the
//! MOSAIC dialect) is `mosaic-external`'s; this actor serialises the session's requests to
//! it. The handshake happens when the decider is spawned (it tells what the worker reads
//! and its paradigm); afterwards every request is answered within its deadline or fails
//! with a typed error, which the session turns into the default action and records. Errors
//! after which the worker cannot be asked again (its process exited, it fell silent for
//! `heartbeat_timeout_ms` while heartbeating, its stream broke) are
//! an [`DeciderError::Worker`] that needs a restart; a process exit fails the pending request at once. Workers
//! announcing the `checkpoint` capability answer [`SaveState`] and [`LoadState`] through the
//! protocol's `checkpoint` and `restore`. Unmodified MOSAIC action-selector workers
//! (`init_agent` / `select_action`) are driven too, detected from their `init` line.
//!
//! A worker announcing the `messages` capability talks on the session's channel like a
//! language-model agent, through the same [`Voice`] (slot settings `channel` and
//! `message_cap`): each `decide` carries the messages the agent reads at that step, the
//! message of its decision is posted, and both are recorded with the decision (`message`,
//! `message_to`, `received`).
//!
//! In experiment files: `{ kind = "worker", command = ["python3", "-m", "mosaic_worker",
//! "policy", "random"] }`, or `{ kind = "worker", connect = "tcp://host:port", token_env =
//! "MOSAIC_WORKER_TOKEN" }` for a worker listening on another machine.

use crate::channel::{CHANNEL_HELP, ChannelSetting, DEFAULT_MESSAGE_CAP, Voice};
use crate::decider::{DeciderHandle, DeciderKind, DeciderRegistry, SpawnContext};
use crate::{BeginEpisode, Decide, DeciderError, LoadState, SaveState, StateError};
use actix::{Actor, Context, Handler, ResponseFuture};
use mosaic_core::Decision;
use mosaic_core::experiment::{SpecError, parse_settings};
use mosaic_external::WorkerError;
use mosaic_external::policy::PolicyWorker;
pub use mosaic_external::settings::WorkerSettings;
use mosaic_external::settings::help_lines;
use serde::Deserialize;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// Settings of a `worker` slot, one line each (for `mosaic deciders`): the worker's and
/// the channel's.
pub const SETTINGS_HELP: &[&str] = &HELP;

const HELP: [&str; 15] = help_lines(&[mosaic_external::policy::SETTINGS_HELP, &CHANNEL_HELP]);

/// The settings of a `worker` slot: how to run the worker, and how it talks when it
/// announces the `messages` capability (ignored otherwise).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerSlotSettings {
    /// The worker process and the link to it.
    #[serde(flatten)]
    pub worker: WorkerSettings,
    /// Who the agent's messages reach.
    #[serde(default)]
    pub channel: ChannelSetting,
    /// Longest message, characters.
    #[serde(default = "default_message_cap")]
    pub message_cap: usize,
}

fn default_message_cap() -> usize {
    DEFAULT_MESSAGE_CAP
}

/// Adds the `worker` decider kind.
pub fn register(registry: &mut DeciderRegistry) {
    registry.register(DeciderKind {
        name: "worker",
        summary: "a policy in another process speaking the worker protocol (any language)",
        settings: SETTINGS_HELP,
        spawn: Arc::new(|cx: &SpawnContext<'_>| {
            let settings: WorkerSlotSettings = parse_settings(&cx.slot.settings)?;
            let name = format!(
                "{}:{}",
                cx.env_name,
                cx.spec.agents.get(cx.agent).map_or("?", |a| a.id.as_str())
            );
            let grace = settings.worker.grace();
            let field = match settings.worker.connect {
                Some(_) => "connect",
                None => "command",
            };
            let worker = PolicyWorker::start(&settings.worker, &name).map_err(|e| {
                match e.is_configuration() {
                    true => SpecError::new(field, format!("{name}: {e}")),
                    false => SpecError::start_failure(field, format!("{name}: {e}")),
                }
            })?;
            // Workers that do not talk keep their 1.0 behaviour whatever the slot says.
            let voice = match worker.messages() {
                true => Voice::for_slot(
                    settings.channel,
                    settings.message_cap,
                    cx.session.channel.as_ref(),
                    cx.spec,
                    cx.agent,
                ),
                false => Ok(None),
            };
            match voice {
                Ok(voice) => Ok(WorkerPolicy::start(worker, voice, grace)),
                Err(error) => {
                    worker.stop_in_background(grace);
                    Err(error)
                }
            }
        }),
    });
}

/// The actor around one policy worker.
pub struct WorkerPolicy {
    /// The worker's name, for errors once the worker is gone.
    name: String,
    /// One request at a time (the mutex serialises them); `None` once stopped or dead.
    worker: Rc<tokio::sync::Mutex<Option<PolicyWorker>>>,
    /// The agent's part in the channel, for a worker that talks.
    voice: Option<Voice>,
    grace: Duration,
}

impl std::fmt::Debug for WorkerPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerPolicy").finish_non_exhaustive()
    }
}

impl WorkerPolicy {
    /// Starts the worker, completes the handshake (blocking, within `start_timeout_ms`),
    /// and starts the actor on the current arbiter, without a channel.
    pub fn spawn(settings: &WorkerSettings, name: &str) -> Result<DeciderHandle, WorkerError> {
        let worker = PolicyWorker::start(settings, name)?;
        Ok(Self::start(worker, None, settings.grace()))
    }

    /// Starts the actor around a greeted `worker` on the current arbiter; with a `voice`
    /// the worker reads and posts channel messages.
    pub fn start(worker: PolicyWorker, voice: Option<Voice>, grace: Duration) -> DeciderHandle {
        let (paradigm, wants) = (worker.paradigm(), worker.wants());
        let actor = WorkerPolicy {
            name: worker.name().to_owned(),
            worker: Rc::new(tokio::sync::Mutex::new(Some(worker))),
            voice,
            grace,
        };
        let addr = actor.start();
        DeciderHandle::new("worker", paradigm, wants, &addr).with_state(&addr)
    }

    /// Runs `work` on the worker, once the requests before it are done.
    fn with_worker<T: 'static>(
        &self,
        work: impl AsyncFnOnce(&mut PolicyWorker) -> Result<T, DeciderError> + 'static,
    ) -> ResponseFuture<Result<T, DeciderError>> {
        let (worker, name) = (self.worker.clone(), self.name.clone());
        Box::pin(async move {
            let mut guard = worker.lock().await;
            let worker = guard
                .as_mut()
                .ok_or(DeciderError::WorkerStopped { worker: name })?;
            let result = work(worker).await;
            // A worker that died or hung is killed and dropped at once (no grace: it is
            // replaced); later requests answer `Gone`.
            if matches!(&result, Err(error) if error.needs_restart())
                && let Some(mut dead) = guard.take()
            {
                dead.kill();
            }
            result
        })
    }
}

impl Actor for WorkerPolicy {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(1024);
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        if let Some(worker) = self.worker.try_lock().ok().and_then(|mut w| w.take()) {
            worker.stop_in_background(self.grace);
        }
    }
}

impl Handler<BeginEpisode> for WorkerPolicy {
    type Result = ResponseFuture<Result<(), DeciderError>>;

    fn handle(&mut self, msg: BeginEpisode, _: &mut Context<Self>) -> Self::Result {
        self.with_worker(async move |worker| {
            let result = worker.begin(&msg.ctx, &msg.spec).await;
            result.map_err(|e| failed(worker.name(), e))
        })
    }
}

impl Handler<Decide> for WorkerPolicy {
    type Result = ResponseFuture<Result<Decision, DeciderError>>;

    fn handle(&mut self, msg: Decide, _: &mut Context<Self>) -> Self::Result {
        let voice = self.voice.clone();
        self.with_worker(async move |worker| {
            let Some(voice) = voice else {
                let result = worker.decide(&msg.obs, msg.step, msg.deadline, None).await;
                return result
                    .map(|answer| answer.decision)
                    .map_err(|e| failed(worker.name(), e));
            };
            let inbox = voice.inbox(msg.step).await;
            let received = inbox.len();
            let result = worker
                .decide(&msg.obs, msg.step, msg.deadline, Some(inbox))
                .await;
            let answer = result.map_err(|e| failed(worker.name(), e))?;
            let post = answer
                .message
                .as_deref()
                .and_then(|text| voice.post(text, msg.step));
            let mut decision = answer.decision;
            let mut detail = match decision.detail.take() {
                Some(serde_json::Value::Object(detail)) => detail,
                _ => serde_json::Map::new(),
            };
            Voice::record(&mut detail, post.as_ref(), received);
            decision.detail = Some(serde_json::Value::Object(detail));
            if let Some(post) = post {
                voice.send(post);
            }
            Ok(decision)
        })
    }
}

/// The worker's `checkpoint` answer, as a JSON string (the base64 state); `None` when the
/// worker did not announce the capability or says it cannot save its state now.
impl Handler<SaveState> for WorkerPolicy {
    type Result = ResponseFuture<Result<Option<serde_json::Value>, DeciderError>>;

    fn handle(&mut self, _: SaveState, _: &mut Context<Self>) -> Self::Result {
        self.with_worker(async |worker| {
            let result = worker.save_state().await;
            let state = result.map_err(|e| state_failed(worker.name(), e))?;
            Ok(state.map(serde_json::Value::String))
        })
    }
}

/// Sends a state answered by [`SaveState`] back with `restore`.
impl Handler<LoadState> for WorkerPolicy {
    type Result = ResponseFuture<Result<(), DeciderError>>;

    fn handle(&mut self, msg: LoadState, _: &mut Context<Self>) -> Self::Result {
        self.with_worker(async |worker| {
            let serde_json::Value::String(data) = msg.0 else {
                return Err(StateError::NotWorkerState {
                    worker: worker.name().to_owned(),
                }
                .into());
            };
            if !worker.checkpoints() {
                return Err(StateError::NoCheckpoints {
                    worker: worker.name().to_owned(),
                }
                .into());
            }
            let result = worker.load_state(data).await;
            result.map_err(|e| state_failed(worker.name(), e))
        })
    }
}

fn failed(name: &str, error: WorkerError) -> DeciderError {
    tracing::warn!(target: "mosaic::worker", worker = name, %error, "decision failed");
    DeciderError::Worker {
        worker: name.to_owned(),
        source: Box::new(error),
    }
}

fn state_failed(name: &str, error: WorkerError) -> DeciderError {
    tracing::warn!(target: "mosaic::worker", worker = name, %error, "checkpoint failed");
    DeciderError::WorkerState {
        worker: name.to_owned(),
        source: Box::new(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_slot_needs_a_command_or_an_address() {
        let no_command: WorkerSlotSettings = parse_settings(&mosaic_core::Settings::new()).unwrap();
        assert_eq!(no_command.channel, ChannelSetting::Team);
        assert_eq!(no_command.message_cap, DEFAULT_MESSAGE_CAP);
        let no_command = no_command.worker;
        let Err(err) = WorkerPolicy::spawn(&no_command, "t") else {
            panic!("a policy worker needs a command or an address")
        };
        assert!(
            matches!(&err, WorkerError::Config(why) if why.contains("command") && why.contains("connect")),
            "{err}"
        );
        let mut typo = mosaic_core::Settings::new();
        typo.insert("command".into(), serde_json::json!(["w"]));
        typo.insert("timeout".into(), 5.into());
        assert!(
            parse_settings::<WorkerSlotSettings>(&typo)
                .unwrap_err()
                .message
                .contains("timeout")
        );
        let mut talking = mosaic_core::Settings::new();
        talking.insert("command".into(), serde_json::json!(["w"]));
        talking.insert("channel".into(), "all".into());
        talking.insert("message_cap".into(), 20.into());
        let talking: WorkerSlotSettings = parse_settings(&talking).unwrap();
        assert_eq!(talking.channel, ChannelSetting::All);
        assert_eq!(talking.message_cap, 20);
        assert_eq!(talking.worker.command, Some(vec!["w".to_owned()]));
        assert_eq!(SETTINGS_HELP.len(), 15);
        assert!(SETTINGS_HELP[1].starts_with("connect = "));
        assert!(SETTINGS_HELP[4].starts_with("timeout_ms = "));
        assert!(SETTINGS_HELP[11].starts_with("token_env = "));
        assert!(SETTINGS_HELP[13].starts_with("channel = "));
    }
}
