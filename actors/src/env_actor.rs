//! The actor that owns an environment.

use actix::{Actor, Context, Handler, Message, MessageResult};
use mosaic_core::{
    Action, EnvError, Environment, Frame, ObsRequest, Observation, Outcome, Snapshot, Transition,
    render_marked_or_plain,
};
use std::sync::Arc;

/// Owns one environment instance; every access goes through its mailbox, so an environment
/// never needs to be `Sync` and a blocking (external) environment can get its own thread.
pub struct EnvActor {
    env: Box<dyn Environment>,
}

impl std::fmt::Debug for EnvActor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvActor").finish_non_exhaustive()
    }
}

impl EnvActor {
    /// Wraps `env`.
    pub fn new(env: Box<dyn Environment>) -> Self {
        Self { env }
    }

    fn view(&self, wants: &[ObsRequest], transition: Option<Transition>) -> EnvView {
        let acting = self.env.acting();
        let observations = acting
            .iter()
            .map(|&agent| {
                let want = wants.get(agent).copied().unwrap_or_default();
                Arc::new(self.env.observe(agent, want))
            })
            .collect();
        EnvView {
            steps: self.env.steps(),
            acting,
            observations,
            transition,
        }
    }
}

impl Actor for EnvActor {
    type Context = Context<Self>;
}

/// What the session sees after a reset or a step.
#[derive(Debug, Clone)]
pub struct EnvView {
    /// Steps taken since reset.
    pub steps: u32,
    /// Agents that must act next (empty: the episode is over).
    pub acting: Vec<usize>,
    /// Observations of the acting agents, in the order of `acting`.
    pub observations: Vec<Arc<Observation>>,
    /// The step's result (`None` after a reset).
    pub transition: Option<Transition>,
}

/// Starts an episode.
#[derive(Debug, Message)]
#[rtype(result = "Result<EnvView, EnvError>")]
pub struct Reset {
    /// Episode seed.
    pub seed: u64,
    /// Per agent index: which modalities its operator reads.
    pub wants: Arc<Vec<ObsRequest>>,
}

/// Takes one step.
#[derive(Debug, Message)]
#[rtype(result = "Result<EnvView, EnvError>")]
pub struct Step {
    /// Per agent index: its action, `Some` exactly for the acting agents.
    pub actions: Vec<Option<Action>>,
    /// Per agent index: which modalities its operator reads.
    pub wants: Arc<Vec<ObsRequest>>,
}

/// The current view without stepping (e.g. to check a restored state).
#[derive(Debug, Message)]
#[rtype(result = "EnvView")]
pub struct Observe {
    /// Per agent index: which modalities to fill.
    pub wants: Arc<Vec<ObsRequest>>,
}

/// Results and metrics of the episode so far (asked once it is over).
#[derive(Debug, Message)]
#[rtype(result = "EpisodeSummary")]
pub struct Summarise;

/// See [`Summarise`].
#[derive(Debug, Clone)]
pub struct EpisodeSummary {
    /// Per-agent outcome, if the game has a winner.
    pub outcome: Option<Vec<Outcome>>,
    /// Environment metrics.
    pub metrics: serde_json::Map<String, serde_json::Value>,
}

/// Renders the full view for people: the frame, and whether the agents in `marked` are
/// marked on it (see [`render_marked_or_plain`]).
#[derive(Debug, Default, Message)]
#[rtype(result = "Option<(Frame, bool)>")]
pub struct Render {
    /// Agents to mark (a person's).
    pub marked: Vec<usize>,
}

/// Saves the environment state.
#[derive(Debug, Message)]
#[rtype(result = "Option<Snapshot>")]
pub struct TakeSnapshot;

/// Restores a saved state.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), EnvError>")]
pub struct RestoreSnapshot(pub Snapshot);

impl Handler<Reset> for EnvActor {
    type Result = Result<EnvView, EnvError>;

    fn handle(&mut self, msg: Reset, _: &mut Context<Self>) -> Self::Result {
        self.env.reset(msg.seed)?;
        Ok(self.view(&msg.wants, None))
    }
}

impl Handler<Step> for EnvActor {
    type Result = Result<EnvView, EnvError>;

    fn handle(&mut self, msg: Step, _: &mut Context<Self>) -> Self::Result {
        // The transition travels to the session, so there is no buffer to reuse here.
        let mut transition = Transition::default();
        self.env.step(&msg.actions, &mut transition)?;
        Ok(self.view(&msg.wants, Some(transition)))
    }
}

impl Handler<Observe> for EnvActor {
    type Result = MessageResult<Observe>;

    fn handle(&mut self, msg: Observe, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.view(&msg.wants, None))
    }
}

impl Handler<Summarise> for EnvActor {
    type Result = MessageResult<Summarise>;

    fn handle(&mut self, _: Summarise, _: &mut Context<Self>) -> Self::Result {
        MessageResult(EpisodeSummary {
            outcome: self.env.outcome(),
            metrics: self.env.metrics(),
        })
    }
}

impl Handler<Render> for EnvActor {
    type Result = Option<(Frame, bool)>;

    fn handle(&mut self, msg: Render, _: &mut Context<Self>) -> Self::Result {
        render_marked_or_plain(self.env.as_ref(), &msg.marked)
    }
}

impl Handler<TakeSnapshot> for EnvActor {
    type Result = Option<Snapshot>;

    fn handle(&mut self, _: TakeSnapshot, _: &mut Context<Self>) -> Self::Result {
        self.env.snapshot()
    }
}

impl Handler<RestoreSnapshot> for EnvActor {
    type Result = Result<(), EnvError>;

    fn handle(&mut self, msg: RestoreSnapshot, _: &mut Context<Self>) -> Self::Result {
        self.env.restore(&msg.0)
    }
}
