//! The message channel between the agents of one session.
//!
//! A session starts one [`Channel`] and hands its address to its deciders through
//! [`crate::decider::SessionResources`]. An agent [`Post`]s a broadcast (`to: None`) or
//! addressed message at step `t`, to its team or to everyone; the recipients read it with
//! [`Inbox`] from step `t + 1` on, each message once, in a deterministic order (step, then
//! sender's agent index, then posting order). Messages are capped in length.
//! Readers [`Join`] when their decider is built; a message is kept until every joined
//! reader that may see it has had it. [`NewEpisode`] clears the messages at the start of
//! each episode. A decider that talks holds a [`Voice`]: its slot's `channel` and
//! `message_cap` settings made into the agent's reading, posting and recording, the same
//! for language models and policy workers.
//!
//! ```
//! use mosaic_actors::channel::{Channel, ChannelConfig, Inbox, Post, Scope};
//! use mosaic_core::{Action, AgentSpec, EnvSpec, ObsRequest, Stepping};
//! # actix::System::new().block_on(async {
//! let agent = |id: &str, team: &str| AgentSpec { id: id.into(), team: Some(team.into()), role: None };
//! let spec = EnvSpec {
//!     name: "demo".into(),
//!     agents: vec![agent("green_0", "green"), agent("green_1", "green"), agent("blue_0", "blue")],
//!     action_labels: vec!["noop".into()],
//!     default_action: Action(0),
//!     stepping: Stepping::Simultaneous,
//!     max_steps: None,
//!     symbolic_shape: None,
//!     offers: ObsRequest::MASK_ONLY,
//!     descriptions: Default::default(),
//! };
//! let channel = Channel::start(&spec, ChannelConfig::default());
//! channel.send(Post::broadcast("green_0", Scope::Team, "ball is mine", 3)).await.unwrap().unwrap();
//! // Not before the next step, never to the other team.
//! assert!(channel.send(Inbox::new("green_1", 3)).await.unwrap().is_empty());
//! assert!(channel.send(Inbox::new("blue_0", 4)).await.unwrap().is_empty());
//! let inbox = channel.send(Inbox::new("green_1", 4)).await.unwrap();
//! assert_eq!(inbox[0].text, "ball is mine");
//! # });
//! ```

use actix::{Actor, Addr, Context, Handler, Message, MessageResult};
use mosaic_core::EnvSpec;
use mosaic_core::experiment::SpecError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

// The channel's messages are the worker protocol's: a policy worker reads the same
// envelopes a language-model agent does.
pub use mosaic_protocols::message::{Envelope, Scope};

/// Channel settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelConfig {
    /// Longest message in characters; longer ones are cut.
    #[serde(default = "default_max_chars")]
    pub max_chars: usize,
}

fn default_max_chars() -> usize {
    1000
}

impl Default for ChannelConfig {
    fn default() -> Self {
        Self {
            max_chars: default_max_chars(),
        }
    }
}

/// A message could not be posted, or a saved channel state could not be loaded.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ChannelError {
    /// The sender or recipient is not an agent of the session.
    #[error("`{0}` is not an agent of this session")]
    UnknownAgent(String),
    /// A team message from an agent without a team.
    #[error("`{sender}` has no team: post with scope `all`")]
    NoTeam {
        /// The sender.
        sender: String,
    },
    /// A team message addressed to an agent of another team.
    #[error("`{recipient}` is not on the team of `{sender}`")]
    OtherTeam {
        /// The sender.
        sender: String,
        /// The addressee.
        recipient: String,
    },
    /// A saved state ([`LoadChannel`]) is not a channel state.
    #[error("not a state of this message channel: {0}")]
    Malformed(#[source] Arc<serde_json::Error>),
    /// A saved state ([`LoadChannel`]) names an agent this channel does not have.
    #[error("not a state of this message channel: agent {agent} of a channel of {agents} agents")]
    AgentOutOfRange {
        /// The agent index in the state.
        agent: usize,
        /// Agents of this channel.
        agents: usize,
    },
}

/// Posts a message (delivered from the next step on).
#[derive(Clone, Debug, Message)]
#[rtype(result = "Result<(), ChannelError>")]
pub struct Post {
    /// Sender agent id.
    pub from: String,
    /// Recipient agent id; `None` broadcasts within the scope.
    pub to: Option<String>,
    /// Team or everyone.
    pub scope: Scope,
    /// The text.
    pub text: String,
    /// The step at which the sender posts.
    pub step: u32,
}

impl Post {
    /// A broadcast.
    pub fn broadcast(from: &str, scope: Scope, text: impl Into<String>, step: u32) -> Self {
        Self {
            from: from.to_owned(),
            to: None,
            scope,
            text: text.into(),
            step,
        }
    }
}

/// Takes an agent's undelivered messages posted before `step`.
#[derive(Clone, Debug, Message)]
#[rtype(result = "Vec<Envelope>")]
pub struct Inbox {
    /// The reader.
    pub agent: String,
    /// The reader's current step.
    pub step: u32,
}

impl Inbox {
    /// The inbox of `agent` at `step`.
    pub fn new(agent: &str, step: u32) -> Self {
        Self {
            agent: agent.to_owned(),
            step,
        }
    }
}

/// Registers a reader: messages are kept for it until it has read them.
#[derive(Clone, Debug, Message)]
#[rtype(result = "Result<(), ChannelError>")]
pub struct Join {
    /// The reader's agent id.
    pub agent: String,
}

/// Forgets every message (sent by the session before each episode); readers stay joined.
#[derive(Clone, Copy, Debug, Message)]
#[rtype(result = "()")]
pub struct NewEpisode;

#[derive(Serialize, Deserialize)]
struct Stored {
    sender: usize,
    seq: u64,
    envelope: Envelope,
}

/// The channel actor of one session.
pub struct Channel {
    config: ChannelConfig,
    agents: Vec<(String, Option<String>)>,
    episode: EpisodeState,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel").finish_non_exhaustive()
    }
}

/// What the channel holds within an episode (saved in checkpoints).
#[derive(Default, Serialize, Deserialize)]
struct EpisodeState {
    log: Vec<Stored>,
    /// Per reader: messages posted before this step have been delivered.
    delivered_before: BTreeMap<usize, u32>,
    seq: u64,
}

impl Channel {
    /// A channel for the agents of `spec`.
    pub fn new(spec: &EnvSpec, config: ChannelConfig) -> Self {
        Self {
            config,
            agents: spec
                .agents
                .iter()
                .map(|a| (a.id.clone(), a.team.clone()))
                .collect(),
            episode: EpisodeState::default(),
        }
    }

    /// Starts a channel on the current arbiter.
    pub fn start(spec: &EnvSpec, config: ChannelConfig) -> Addr<Self> {
        Self::new(spec, config).start()
    }

    fn index(&self, agent: &str) -> Result<usize, ChannelError> {
        self.agents
            .iter()
            .position(|(id, _)| id == agent)
            .ok_or_else(|| ChannelError::UnknownAgent(agent.to_owned()))
    }

    fn visible(&self, reader: usize, stored: &Stored) -> bool {
        let envelope = &stored.envelope;
        if stored.sender == reader {
            return false;
        }
        if let Some(to) = &envelope.to
            && *to != self.agents[reader].0
        {
            return false;
        }
        match envelope.scope {
            Scope::All => true,
            Scope::Team => self.agents[reader].1 == self.agents[stored.sender].1,
        }
    }

    /// Drops messages every joined reader has already been given. Agents that never read
    /// (no language operator) hold nothing back.
    fn prune(&mut self) {
        if let Some(oldest) = self.episode.delivered_before.values().min().copied() {
            self.episode.log.retain(|s| s.envelope.step >= oldest);
        }
    }
}

impl Actor for Channel {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // Every agent of a wide game posts and reads each step.
        ctx.set_mailbox_capacity(1024);
    }
}

impl Handler<Post> for Channel {
    type Result = Result<(), ChannelError>;

    fn handle(&mut self, msg: Post, _: &mut Context<Self>) -> Self::Result {
        let sender = self.index(&msg.from)?;
        let team = &self.agents[sender].1;
        if msg.scope == Scope::Team && team.is_none() {
            return Err(ChannelError::NoTeam { sender: msg.from });
        }
        if let Some(to) = &msg.to {
            let recipient = self.index(to)?;
            if msg.scope == Scope::Team && self.agents[recipient].1 != *team {
                return Err(ChannelError::OtherTeam {
                    sender: msg.from,
                    recipient: to.clone(),
                });
            }
        }
        // An agent decides once per step, so it posts at most once per step: a second post
        // for the same step is a decision replayed after its operator restarted, already
        // delivered (or pending) the first time.
        if self
            .episode
            .log
            .iter()
            .any(|s| s.sender == sender && s.envelope.step == msg.step)
        {
            return Ok(());
        }
        let text = match msg.text.char_indices().nth(self.config.max_chars) {
            Some((cut, _)) => msg.text[..cut].to_owned(),
            None => msg.text,
        };
        self.episode.seq += 1;
        self.episode.log.push(Stored {
            sender,
            seq: self.episode.seq,
            envelope: Envelope {
                from: msg.from,
                to: msg.to,
                scope: msg.scope,
                step: msg.step,
                text,
            },
        });
        Ok(())
    }
}

impl Handler<Inbox> for Channel {
    type Result = Vec<Envelope>;

    fn handle(&mut self, msg: Inbox, _: &mut Context<Self>) -> Self::Result {
        let Ok(reader) = self.index(&msg.agent) else {
            return Vec::new();
        };
        let since = self
            .episode
            .delivered_before
            .get(&reader)
            .copied()
            .unwrap_or(0);
        let mut due: Vec<&Stored> = self
            .episode
            .log
            .iter()
            .filter(|s| s.envelope.step >= since && s.envelope.step < msg.step)
            .filter(|s| self.visible(reader, s))
            .collect();
        due.sort_by_key(|s| (s.envelope.step, s.sender, s.seq));
        let delivered = due.into_iter().map(|s| s.envelope.clone()).collect();
        self.episode
            .delivered_before
            .insert(reader, since.max(msg.step));
        self.prune();
        delivered
    }
}

impl Handler<Join> for Channel {
    type Result = Result<(), ChannelError>;

    fn handle(&mut self, msg: Join, _: &mut Context<Self>) -> Self::Result {
        let reader = self.index(&msg.agent)?;
        self.episode.delivered_before.entry(reader).or_insert(0);
        Ok(())
    }
}

/// Answers the channel's state within the episode (messages not yet delivered to
/// everyone, and what each reader has been given), for a checkpoint.
#[derive(Debug, Message)]
#[rtype(result = "serde_json::Value")]
pub struct SaveChannel;

/// Continues the episode from a state answered by [`SaveChannel`].
#[derive(Debug, Message)]
#[rtype(result = "Result<(), ChannelError>")]
pub struct LoadChannel(pub serde_json::Value);

impl Handler<SaveChannel> for Channel {
    type Result = MessageResult<SaveChannel>;

    fn handle(&mut self, _: SaveChannel, _: &mut Context<Self>) -> Self::Result {
        // Plain data: serialising it cannot fail.
        MessageResult(serde_json::to_value(&self.episode).unwrap_or_default())
    }
}

impl Handler<LoadChannel> for Channel {
    type Result = Result<(), ChannelError>;

    fn handle(&mut self, msg: LoadChannel, _: &mut Context<Self>) -> Self::Result {
        let state =
            EpisodeState::deserialize(msg.0).map_err(|e| ChannelError::Malformed(Arc::new(e)))?;
        let agents = self.agents.len();
        if let Some(bad) = state
            .log
            .iter()
            .map(|s| s.sender)
            .chain(state.delivered_before.keys().copied())
            .find(|&agent| agent >= agents)
        {
            return Err(ChannelError::AgentOutOfRange { agent: bad, agents });
        }
        self.episode = state;
        Ok(())
    }
}

impl Handler<NewEpisode> for Channel {
    type Result = ();

    fn handle(&mut self, _: NewEpisode, _: &mut Context<Self>) {
        self.episode.log.clear();
        self.episode
            .delivered_before
            .values_mut()
            .for_each(|step| *step = 0);
        self.episode.seq = 0;
    }
}

/// Who an agent's messages reach: the `channel` setting of every decider kind that talks
/// (`llm`, `vlm`, `worker`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelSetting {
    /// The agent neither talks nor reads.
    None,
    /// Its team.
    #[default]
    Team,
    /// Every agent.
    All,
}

/// The longest message of an agent unless its `message_cap` setting says otherwise.
pub const DEFAULT_MESSAGE_CAP: usize = 400;

/// Help lines of the `channel` and `message_cap` settings.
pub const CHANNEL_HELP: [&str; 2] = [
    "channel = \"team\": none | team | all: who the agent's messages reach",
    "message_cap = 400: longest message (characters)",
];

/// An agent's part in its session's channel, the same for every decider kind that talks:
/// which messages it reads, how its messages are addressed and capped, and how both are
/// recorded with its decisions.
///
/// A message `@agent text` is addressed to `agent` when `agent` may hear it (a teammate,
/// or anyone with scope `all`); any other text is a broadcast to the scope. Messages are
/// cut to the agent's `message_cap` characters; an empty one is not posted.
#[derive(Clone, Debug)]
pub struct Voice {
    channel: Addr<Channel>,
    agent: String,
    scope: Scope,
    recipients: Vec<String>,
    message_cap: usize,
}

impl Voice {
    /// The voice of agent `index` of `spec` as its slot's settings ask, joined to the
    /// session's `channel`; `None` when the agent does not talk (`channel = "none"`) or the
    /// session has no channel. An agent without a team cannot talk to its team.
    pub fn for_slot(
        setting: ChannelSetting,
        message_cap: usize,
        channel: Option<&Addr<Channel>>,
        spec: &EnvSpec,
        index: usize,
    ) -> Result<Option<Voice>, SpecError> {
        let me = spec.agents.get(index).ok_or_else(|| {
            SpecError::new("agents", format!("no agent {index} in {}", spec.name))
        })?;
        let scope = match (setting, channel) {
            (ChannelSetting::None, _) | (_, None) => return Ok(None),
            (ChannelSetting::Team, Some(_)) if me.team.is_none() => {
                return Err(SpecError::new(
                    "channel",
                    format!("`{}` has no team: use channel = \"all\" or \"none\"", me.id),
                ));
            }
            (ChannelSetting::Team, Some(_)) => Scope::Team,
            (ChannelSetting::All, Some(_)) => Scope::All,
        };
        let Some(channel) = channel.cloned() else {
            return Ok(None);
        };
        let recipients = spec
            .agents
            .iter()
            .enumerate()
            .filter(|&(i, other)| i != index && (scope == Scope::All || other.team == me.team))
            .map(|(_, other)| other.id.clone())
            .collect();
        channel.do_send(Join {
            agent: me.id.clone(),
        });
        Ok(Some(Voice {
            channel,
            agent: me.id.clone(),
            scope,
            recipients,
            message_cap,
        }))
    }

    /// Who the agent's messages reach.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// The agents a message may be addressed to.
    pub fn recipients(&self) -> &[String] {
        &self.recipients
    }

    /// The longest message, characters.
    pub fn message_cap(&self) -> usize {
        self.message_cap
    }

    /// The messages the agent reads at `step` (each once; none if the channel is gone).
    pub async fn inbox(&self, step: u32) -> Vec<Envelope> {
        self.channel
            .send(Inbox::new(&self.agent, step))
            .await
            .unwrap_or_default()
    }

    /// The post `text` makes at `step`: addressed when it starts with `@agent` of the
    /// recipients, cut to the cap; `None` when nothing is left to say.
    pub fn post(&self, text: &str, step: u32) -> Option<Post> {
        let (to, text) = match text
            .strip_prefix('@')
            .and_then(|t| t.split_once(char::is_whitespace))
        {
            Some((name, rest)) if self.recipients.iter().any(|r| r == name) => {
                (Some(name.to_owned()), rest.trim())
            }
            _ => (None, text),
        };
        let text = match text.char_indices().nth(self.message_cap) {
            Some((cut, _)) => &text[..cut],
            None => text,
        };
        (!text.is_empty()).then(|| Post {
            from: self.agent.clone(),
            to,
            scope: self.scope,
            text: text.to_owned(),
            step,
        })
    }

    /// Posts `post`. Sent before the decision that made it is answered, so it is in the
    /// channel before the next step's inboxes are read.
    pub fn send(&self, post: Post) {
        self.channel.do_send(post);
    }

    /// Records a decision's part in the channel in its `detail`: `message` (the text
    /// posted, or null), `message_to` (when addressed) and `received` (messages read).
    pub fn record(
        detail: &mut serde_json::Map<String, serde_json::Value>,
        post: Option<&Post>,
        received: usize,
    ) {
        detail.insert("message".into(), serde_json::json!(post.map(|p| &p.text)));
        if let Some(to) = post.and_then(|p| p.to.as_ref()) {
            detail.insert("message_to".into(), serde_json::json!(to));
        }
        detail.insert("received".into(), serde_json::json!(received));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_core::{Action, AgentSpec, ObsRequest, Stepping};

    fn spec() -> EnvSpec {
        let agent = |id: &str, team: Option<&str>| AgentSpec {
            id: id.into(),
            team: team.map(Into::into),
            role: None,
        };
        EnvSpec {
            name: "t".into(),
            agents: vec![
                agent("g0", Some("green")),
                agent("g1", Some("green")),
                agent("b0", Some("blue")),
                agent("b1", Some("blue")),
                agent("solo", None),
            ],
            action_labels: vec!["noop".into()],
            default_action: Action(0),
            stepping: Stepping::Simultaneous,
            max_steps: None,
            symbolic_shape: None,
            offers: ObsRequest::MASK_ONLY,
            descriptions: Default::default(),
        }
    }

    fn post(from: &str, to: Option<&str>, scope: Scope, text: &str, step: u32) -> Post {
        Post {
            from: from.into(),
            to: to.map(Into::into),
            scope,
            text: text.into(),
            step,
        }
    }

    #[actix::test]
    async fn a_saved_state_continues_the_episode_in_a_new_channel() {
        let first = Channel::start(&spec(), ChannelConfig::default());
        let second = Channel::start(&spec(), ChannelConfig::default());
        for channel in [&first, &second] {
            for agent in ["g0", "g1"] {
                let join = Join {
                    agent: agent.into(),
                };
                channel.send(join).await.unwrap().unwrap();
            }
        }
        first
            .send(post("g0", None, Scope::All, "one", 0))
            .await
            .unwrap()
            .unwrap();
        first.send(Inbox::new("g1", 1)).await.unwrap();
        first
            .send(post("g0", None, Scope::All, "two", 1))
            .await
            .unwrap()
            .unwrap();
        let state = first.send(SaveChannel).await.unwrap();
        second.send(LoadChannel(state)).await.unwrap().unwrap();
        for channel in [&first, &second] {
            let inbox = channel.send(Inbox::new("g1", 2)).await.unwrap();
            assert_eq!(inbox.len(), 1);
            assert_eq!(inbox[0].text, "two", "delivered once, after the load too");
        }
        let foreign = serde_json::json!({"log": [], "delivered_before": {"9": 0}, "seq": 0});
        let error = second
            .send(LoadChannel(foreign))
            .await
            .unwrap()
            .unwrap_err();
        assert!(error.to_string().contains("agent 9"), "{error}");
        let garbage = LoadChannel(serde_json::json!("garbage"));
        assert!(matches!(
            second.send(garbage).await.unwrap(),
            Err(ChannelError::Malformed(_))
        ));
    }

    #[actix::test]
    async fn a_replayed_post_of_the_same_step_is_delivered_once() {
        let channel = Channel::start(&spec(), ChannelConfig::default());
        for agent in ["g0", "g1"] {
            let join = Join {
                agent: agent.into(),
            };
            channel.send(join).await.unwrap().unwrap();
        }
        for _ in 0..2 {
            channel
                .send(post("g0", None, Scope::Team, "hold", 4))
                .await
                .unwrap()
                .unwrap();
        }
        channel
            .send(post("g0", None, Scope::Team, "go", 5))
            .await
            .unwrap()
            .unwrap();
        let inbox = channel.send(Inbox::new("g1", 6)).await.unwrap();
        let texts: Vec<_> = inbox.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(texts, ["hold", "go"]);
    }

    #[actix::test]
    async fn voices_address_cap_and_record_messages() {
        let spec = spec();
        let channel = Channel::start(&spec, ChannelConfig::default());
        let voice = |setting, agent| Voice::for_slot(setting, 8, Some(&channel), &spec, agent);
        assert!(voice(ChannelSetting::None, 0).unwrap().is_none());
        assert!(
            Voice::for_slot(ChannelSetting::Team, 8, None, &spec, 0)
                .unwrap()
                .is_none()
        );
        let error = voice(ChannelSetting::Team, 4).unwrap_err();
        assert_eq!(error.path, "channel");
        assert!(error.message.contains("`solo` has no team"), "{error}");
        assert_eq!(
            voice(ChannelSetting::All, 4).unwrap().unwrap().scope(),
            Scope::All
        );

        let g0 = voice(ChannelSetting::Team, 0).unwrap().unwrap();
        let g1 = voice(ChannelSetting::Team, 1).unwrap().unwrap();
        assert_eq!(g0.recipients(), ["g1"]);
        let everyone = voice(ChannelSetting::All, 0).unwrap().unwrap();
        assert_eq!(everyone.recipients(), ["g1", "b0", "b1", "solo"]);

        let addressed = g0.post("@g1  go left now", 3).unwrap();
        assert_eq!(addressed.to.as_deref(), Some("g1"));
        assert_eq!(addressed.text, "go left ", "cut to the cap of 8");
        let not_a_teammate = g0.post("@b0 hi", 3).unwrap();
        assert_eq!(
            (not_a_teammate.to, not_a_teammate.text.as_str()),
            (None, "@b0 hi")
        );
        assert!(g0.post("", 3).is_none());
        assert!(
            g0.post("@g1 ", 3).is_none(),
            "an address alone says nothing"
        );

        g0.send(addressed.clone());
        let inbox = g1.inbox(4).await;
        assert_eq!(inbox.len(), 1);
        assert_eq!(inbox[0].text, "go left ");
        let mut detail = serde_json::Map::new();
        Voice::record(&mut detail, Some(&addressed), inbox.len());
        assert_eq!(
            serde_json::Value::Object(detail),
            serde_json::json!({"message": "go left ", "message_to": "g1", "received": 1})
        );
        let mut silent = serde_json::Map::new();
        Voice::record(&mut silent, None, 0);
        assert_eq!(
            serde_json::Value::Object(silent),
            serde_json::json!({"message": null, "received": 0})
        );
    }

    #[actix::test]
    async fn delivery_rules() {
        let channel = Channel::start(&spec(), ChannelConfig { max_chars: 5 });
        for agent in ["g0", "g1", "b0", "b1"] {
            channel
                .send(Join {
                    agent: agent.into(),
                })
                .await
                .unwrap()
                .unwrap();
        }
        let send = |p: Post| channel.send(p);
        // Posted out of order within a step: delivered by sender index.
        send(post("g1", None, Scope::All, "from g1", 0))
            .await
            .unwrap()
            .unwrap();
        send(post("g0", None, Scope::Team, "team", 0))
            .await
            .unwrap()
            .unwrap();
        send(post("b0", Some("b1"), Scope::Team, "psst", 0))
            .await
            .unwrap()
            .unwrap();
        send(post("b1", None, Scope::All, "later", 1))
            .await
            .unwrap()
            .unwrap();

        let texts = |v: Vec<Envelope>| v.into_iter().map(|e| e.text).collect::<Vec<_>>();
        assert_eq!(
            texts(channel.send(Inbox::new("g1", 1)).await.unwrap()),
            ["team"]
        );
        assert_eq!(
            texts(channel.send(Inbox::new("b1", 1)).await.unwrap()),
            ["from ", "psst"]
        );
        assert_eq!(
            texts(channel.send(Inbox::new("b0", 1)).await.unwrap()),
            ["from "]
        );
        // Each message once; the step-1 message at step 2.
        assert_eq!(
            texts(channel.send(Inbox::new("g1", 2)).await.unwrap()),
            ["later"]
        );
        assert!(channel.send(Inbox::new("g1", 2)).await.unwrap().is_empty());
        // A reader that skipped steps still gets everything it has not seen.
        assert_eq!(
            texts(channel.send(Inbox::new("g0", 5)).await.unwrap()),
            ["from ", "later"]
        );

        let err = send(post("g0", Some("b0"), Scope::Team, "x", 2))
            .await
            .unwrap();
        assert!(matches!(err, Err(ChannelError::OtherTeam { .. })));
        let err = send(post("solo", None, Scope::Team, "x", 2)).await.unwrap();
        assert!(matches!(err, Err(ChannelError::NoTeam { .. })));
        let err = send(post("nobody", None, Scope::All, "x", 2))
            .await
            .unwrap();
        assert!(matches!(err, Err(ChannelError::UnknownAgent(_))));
        send(post("g0", Some("b0"), Scope::All, "hi b0", 2))
            .await
            .unwrap()
            .unwrap();

        channel.send(NewEpisode).await.unwrap();
        assert!(channel.send(Inbox::new("b0", 1)).await.unwrap().is_empty());
        send(post("g1", None, Scope::All, "again", 1))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            texts(channel.send(Inbox::new("b0", 2)).await.unwrap()),
            ["again"]
        );
    }
}
