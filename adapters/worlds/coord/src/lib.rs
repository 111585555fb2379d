//! The coordination world (`coord-world`): a compact ALEM-style open world on
//! Craftax-Classic's rules (one 64 × 64 overworld: noise terrain, day and night, vitals,
//! crafting, mobs, Classic's 22 achievements) for 1–4 agents with soft specialisation,
//! resource requests and gives, revives and friendly fire, plus procedurally generated
//! coordination tasks (synchronous and handover mining, construction sites, elite mobs,
//! joint diamond crafting) whose execution difficulty is set by one knob α.
//!
//! ```
//! use mosaic_coord::CoordWorld;
//! use mosaic_core::{Action, Environment, ObsRequest, Transition};
//!
//! let mut settings = mosaic_core::Settings::new();
//! settings.insert("preset".into(), "easy".into());
//! let mut env = CoordWorld::from_settings(&settings).unwrap();
//! env.reset(7).unwrap();
//! let obs = env.observe(0, ObsRequest { text: true, ..ObsRequest::MASK_ONLY });
//! assert!(obs.text.unwrap().contains("Coordination:"));
//! let mut out = Transition::default();
//! env.step(&[Some(Action(5)), Some(Action(0)), Some(Action(3))], &mut out).unwrap();
//! assert_eq!(env.steps(), 1);
//! ```

mod actions;
mod coordination;
mod crafting;
mod effects;
mod metrics;
mod mobs;
mod observation;
mod render;
mod rules;
mod scoring;
mod scripted;
mod settings;
mod snapshot;
mod state;
mod text;
mod types;
mod worldgen;

#[cfg(test)]
mod tests;

pub use actions::{Act, ActionSet, Placeable, REQUEST_STEPS};
pub use metrics::{
    achievable, achievable_coordination, achievement_tally, maxima, reachable_maxima,
};
pub use observation::{Layout, VIEW_H, VIEW_W, View};
pub use scoring::{
    ALEM_ACHIEVEMENTS, AlemAchievement, CoordType, Scoring, Tier, alem_maxima, credit, weights,
};
pub use scripted::Scripted;
pub use settings::{Config, Difficulty, Preset, SETTINGS_HELP};
pub use state::DeathCause;
pub use types::{Achievement, Block, Dir, Item, MobKind, Resource, Role, Structure};

use mosaic_core::experiment::SpecError;
use mosaic_core::registry::EnvKind;
use mosaic_core::{
    Action, AgentSpec, EnvError, EnvSpec, Environment, Frame, ObsRequest, Observation, Policy,
    Settings, Snapshot, Stepping, Transition,
};
use std::sync::Arc;

/// Registered name.
pub const NAME: &str = "coord-world";

/// The name of the spec's description listing the achievements the configured scoring
/// counts (`EnvSpec::descriptions`, an LLM prompt's `{world.achievements}`).
pub const ACHIEVEMENTS_DESCRIPTION: &str = "achievements";

/// The registry entry of the coordination world.
pub fn kind() -> EnvKind {
    EnvKind {
        name: NAME,
        summary: "ALEM-style open world on Craftax-Classic rules: 1-4 agents, roles, procedural synchronous/handover coordination, one difficulty knob alpha",
        settings: SETTINGS_HELP,
        make: |settings| Ok(Box::new(CoordWorld::from_settings(settings)?)),
        scripted: Some(scripted_policy),
    }
}

fn scripted_policy(env: &Settings, slot: &Settings) -> Result<Box<dyn Policy>, SpecError> {
    let config = Config::from_settings(env)?;
    Ok(Box::new(Scripted::from_settings(&config, slot)?))
}

/// The id of agent `index` (`agent_0`, ...), as in the spec and in messages.
fn agent_id(index: usize) -> String {
    format!("agent_{index}")
}

/// The coordination world environment.
#[derive(Debug)]
pub struct CoordWorld {
    config: Config,
    actions: ActionSet,
    layout: Layout,
    spec: EnvSpec,
    world: Option<state::World>,
    acts: Vec<Act>,
}

impl CoordWorld {
    /// Builds the environment from experiment settings.
    pub fn from_settings(settings: &Settings) -> Result<Self, SpecError> {
        Ok(Self::new(Config::from_settings(settings)?))
    }

    /// Builds the environment from a checked configuration.
    pub fn new(config: Config) -> Self {
        let actions = ActionSet::new(config.agents, config.signals);
        let layout = Layout::new(config.agents, config.signals);
        let spec = EnvSpec {
            name: NAME.into(),
            agents: (0..config.agents)
                .map(|i| AgentSpec {
                    id: agent_id(i),
                    team: Some("team".into()),
                    role: config.roles.get(i).map(|role| role.name().to_owned()),
                })
                .collect(),
            action_labels: actions.labels(),
            default_action: Action(0),
            stepping: Stepping::Simultaneous,
            max_steps: Some(config.max_steps),
            symbolic_shape: Some(vec![layout.len()]),
            offers: ObsRequest::ALL,
            descriptions: [(
                ACHIEVEMENTS_DESCRIPTION.to_owned(),
                text::achievement_list(&config),
            )]
            .into(),
        };
        Self {
            config,
            actions,
            layout,
            spec,
            world: None,
            acts: Vec::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The action space.
    pub fn action_set(&self) -> &ActionSet {
        &self.actions
    }

    fn running(&self) -> Option<&state::World> {
        self.world.as_ref()
    }

    fn is_over(world: &state::World, config: &Config) -> bool {
        world.step >= config.max_steps || !world.agents.iter().any(|a| a.is_alive())
    }
}

impl Environment for CoordWorld {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: u64) -> Result<(), EnvError> {
        self.world = Some(worldgen::generate(&self.config, seed));
        Ok(())
    }

    fn acting(&self) -> Vec<usize> {
        match self.running() {
            Some(w) if !Self::is_over(w, &self.config) => (0..w.agents.len())
                .filter(|i| w.agents[*i].is_present())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// With the text view comes `info.visible_teammates`: one line per teammate inside
    /// the agent's view (what the LLM deciders show in observation mode
    /// `visible_teammates`).
    fn observe(&self, agent: usize, want: ObsRequest) -> Observation {
        let Some(world) = self.running().filter(|w| agent < w.agents.len()) else {
            return Observation::with_mask(agent, vec![true; self.actions.len()]);
        };
        let legal = observation::legal(world, &self.actions, agent);
        Observation {
            agent,
            step: world.step,
            symbolic: want
                .symbolic
                .then(|| observation::symbolic(world, &self.config, &self.layout, agent)),
            text: want
                .text
                .then(|| text::text(world, &self.config, &self.actions, agent, &legal)),
            frame: want
                .frame
                .then(|| Arc::new(render::agent_frame(world, agent))),
            legal,
            info: want.text.then(|| {
                serde_json::json!({ "visible_teammates": text::visible_teammates(world, agent) })
            }),
        }
    }

    fn step(&mut self, actions: &[Option<Action>], out: &mut Transition) -> Result<(), EnvError> {
        let world = self.world.as_mut().ok_or(EnvError::NotRunning)?;
        if Self::is_over(world, &self.config) {
            return Err(EnvError::NotRunning);
        }
        if actions.len() != world.agents.len() {
            return Err(EnvError::InvalidAction {
                agent: actions.len(),
                reason: format!(
                    "{} actions for {} agents",
                    actions.len(),
                    world.agents.len()
                ),
            });
        }
        self.acts.clear();
        for (agent, action) in actions.iter().enumerate() {
            let act = match action {
                None => Act::Noop,
                Some(a) => {
                    self.actions
                        .decode(a.index())
                        .ok_or_else(|| EnvError::InvalidAction {
                            agent,
                            reason: format!(
                                "action {} out of range (0..{})",
                                a.0,
                                self.actions.len()
                            ),
                        })?
                }
            };
            self.acts.push(act);
        }
        rules::advance(world, &self.config, &self.acts, out);
        Ok(())
    }

    fn steps(&self) -> u32 {
        self.running().map_or(0, |w| w.step)
    }

    fn render(&self) -> Option<Frame> {
        self.running().map(|world| render::world_frame(world, &[]))
    }

    fn render_marked(&self, marked: &[usize]) -> Option<Frame> {
        self.running()
            .map(|world| render::world_frame(world, marked))
    }

    fn metrics(&self) -> serde_json::Map<String, serde_json::Value> {
        self.running()
            .map(|w| metrics::metrics(w, &self.config))
            .unwrap_or_default()
    }

    /// The whole episode state, RNG position included (JSON; see `docs/coordination-world.md`);
    /// `None` before the first reset.
    fn snapshot(&self) -> Option<Snapshot> {
        let world = self.running()?;
        match snapshot::save(world, &self.config) {
            Ok(bytes) => Some(Snapshot(bytes)),
            Err(e) => {
                tracing::error!("{NAME}: cannot serialise a snapshot: {e}");
                None
            }
        }
    }

    /// Replaces the episode with a snapshot's; a snapshot of other settings, or damaged,
    /// is refused and the current episode kept.
    fn restore(&mut self, snapshot: &Snapshot) -> Result<(), EnvError> {
        let world = snapshot::load(&snapshot.0, &self.config).map_err(EnvError::Restore)?;
        self.world = Some(world);
        Ok(())
    }
}
