//! `skirmish`: a native SMACv2-style combat world. Two teams of StarCraft II units —
//! procedurally drawn from a race's pool, starting surrounded or reflected — fight on a
//! continuous square map under partial observability, optionally extended (an enemy stays
//! visible only to the agent that spotted it first), with a multi-hop entity memory per
//! team ([`mosaic_core::entity_memory`]) relaying what members see.
//!
//! Rules (see `docs/skirmish.md` for the full account and where they come from):
//! - Units, statistics and the physics step are SMAX's (JaxMARL's re-implementation of
//!   SMAC): a step is eight ticks of 1/16 s; units move at their speed in the ordered
//!   direction, attack a target within range when their weapon is ready (cooldown redrawn
//!   with a random deviation), damage lands simultaneously, overlapping units are pushed
//!   apart. Shields, armour, the colossus lance, the baneling blast and medivac healing
//!   follow StarCraft II ([`units`]).
//! - Both teams are agent slots (`blue_0..`, then `red_0..`): any operator plays either
//!   side; the `scripted` decider plays SMAX's built-in heuristic by default, or focus
//!   fire, or kiting ([`Strategy`]).
//! - Actions are SMAC's: `no_op` (dead units only), `stop`, `move_north`, `move_south`,
//!   `move_east`, `move_west`, then `target_k`: attack enemy `k`, or for a medivac heal
//!   ally `k`. A target is legal when alive, hittable, in range and known to the agent
//!   this step (seen, or relayed this step by the team's memory).
//! - Rewards are SMAC's team rewards, given to every member dead or alive: shaped (damage,
//!   kills, win; an episode sums to at most 20, exactly 20 for a win) or sparse (±1).
//!   A team wins when every enemy is dead; both dying together is a draw; `max_steps`
//!   (200) truncates.
//!
//! Observations: the symbolic vector of [`layout`], a COMPASS-style text and the agent's
//! view as a picture; [`Environment::render`] draws the whole battlefield.
//!
//! ```
//! use mosaic_skirmish::{Config, Skirmish};
//! use mosaic_core::{Action, Environment, ObsRequest, Transition};
//!
//! let mut env = Skirmish::new(Config::default()).unwrap();
//! env.reset(7).unwrap();
//! assert_eq!(env.acting(), (0..10).collect::<Vec<_>>());
//! let mut out = Transition::default();
//! env.step(&[Some(Action(1)); 10], &mut out).unwrap();
//! let obs = env.observe(0, ObsRequest { text: true, ..ObsRequest::MASK_ONLY });
//! assert!(obs.text.unwrap().contains("Can move North:"));
//! ```

mod battle;
mod draw;
mod observe;
mod scripted;
mod settings;
mod spawn;
#[cfg(test)]
mod tests;
mod text;
pub mod units;

pub use battle::{
    Battle, Dir, Ending, MAX_SHAPED_RETURN, Order, Sighting, TEAMS, TICK, TICKS_PER_STEP,
    TeamStats, Unit, actions,
};
pub use draw::PIXELS_PER_UNIT;
pub use observe::{Layout, layout};
pub use scripted::{ScriptedSkirmish, Strategy};
pub use settings::{Config, ExtendedPo, MAX_TEAM, RewardKind, SETTINGS_HELP, StartPositions};
pub use text::direction;
pub use units::{Race, UnitType};

use mosaic_core::experiment::SpecError;
use mosaic_core::registry::EnvKind;
use mosaic_core::{
    Action, AgentSpec, EnvError, EnvSpec, Environment, Frame, ObsRequest, Observation, Outcome,
    Policy, Settings, Snapshot, Stepping, Tensor, Transition,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Registered name.
pub const NAME: &str = "skirmish";

/// The registry entry of `skirmish`.
pub const KIND: EnvKind = EnvKind {
    name: NAME,
    summary: "SMACv2-style combat (SMAX stats): procedural protoss/terran/zerg teams, \
              surrounded or reflected starts, extended partial observability, multi-hop \
              entity memory; both teams are agent slots",
    settings: SETTINGS_HELP,
    make: make_env,
    scripted: Some(make_scripted),
};

fn make_env(settings: &Settings) -> Result<Box<dyn Environment>, SpecError> {
    Ok(Box::new(Skirmish::from_settings(settings)?))
}

fn make_scripted(env: &Settings, slot: &Settings) -> Result<Box<dyn Policy>, SpecError> {
    Ok(Box::new(ScriptedSkirmish::from_settings(env, slot)?))
}

/// The `skirmish` environment.
#[derive(Clone, Debug)]
pub struct Skirmish {
    spec: EnvSpec,
    config: Config,
    battle: Option<Battle>,
}

/// What a snapshot holds.
#[derive(Serialize, Deserialize)]
struct SavedState {
    env: String,
    battle: Option<Battle>,
}

impl Skirmish {
    /// An environment for `config` (validated); call [`Environment::reset`] to play.
    pub fn new(config: Config) -> Result<Self, SpecError> {
        config.validate()?;
        let agents = (0..2)
            .flat_map(|team| {
                (0..config.teams[team]).map(move |k| AgentSpec {
                    id: format!("{}_{k}", TEAMS[team]),
                    team: Some(TEAMS[team].to_owned()),
                    role: None,
                })
            })
            .collect();
        let labels = actions::TARGET as usize + config.targets();
        let spec = EnvSpec {
            name: NAME.to_owned(),
            agents,
            action_labels: (0..labels).map(text::action_label).collect(),
            default_action: Action(actions::STOP),
            stepping: Stepping::Simultaneous,
            max_steps: Some(config.max_steps),
            symbolic_shape: Some(vec![Layout::new(&config, 0).len()]),
            offers: ObsRequest::ALL,
            descriptions: Default::default(),
        };
        Ok(Self {
            spec,
            config,
            battle: None,
        })
    }

    /// An environment from experiment settings (see [`Config`]).
    pub fn from_settings(settings: &Settings) -> Result<Self, SpecError> {
        Self::new(Config::from_settings(settings)?)
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The running episode, if any.
    pub fn battle(&self) -> Option<&Battle> {
        self.battle.as_ref()
    }

    fn check_actions(&self, actions: &[Option<Action>]) -> Result<(), EnvError> {
        let n = self.config.units();
        if actions.len() != n {
            return Err(EnvError::InvalidAction {
                agent: actions.len().min(n),
                reason: format!("expected {n} actions, got {}", actions.len()),
            });
        }
        let labels = self.spec.action_labels.len();
        match actions
            .iter()
            .enumerate()
            .find_map(|(agent, a)| a.filter(|a| a.index() >= labels).map(|a| (agent, a)))
        {
            Some((agent, action)) => Err(EnvError::InvalidAction {
                agent,
                reason: format!("action {} out of range (0..{labels})", action.0),
            }),
            None => Ok(()),
        }
    }
}

impl Environment for Skirmish {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: u64) -> Result<(), EnvError> {
        let battle = Battle::new(self.config.clone(), seed)
            .map_err(|e| EnvError::Unsupported(e.to_string()))?;
        self.battle = Some(battle);
        Ok(())
    }

    fn acting(&self) -> Vec<usize> {
        match &self.battle {
            Some(b) if !b.is_over() => (0..b.units.len()).filter(|i| b.units[*i].alive()).collect(),
            _ => Vec::new(),
        }
    }

    fn observe(&self, agent: usize, want: ObsRequest) -> Observation {
        let mut obs = Observation {
            agent,
            step: self.steps(),
            ..Observation::default()
        };
        let Some(battle) = self.battle.as_ref().filter(|_| agent < self.config.units()) else {
            obs.legal = vec![false; self.spec.action_labels.len()];
            return obs;
        };
        battle.legal(agent, &mut obs.legal);
        if want.symbolic {
            let mut data = Vec::new();
            observe::symbolic(battle, agent, &obs.legal, &mut data);
            obs.symbolic = Some(Tensor {
                shape: vec![data.len()],
                data,
            });
        }
        if want.text {
            obs.text = Some(text::describe(battle, agent));
        }
        if want.frame {
            obs.frame = Some(Arc::new(draw::battlefield(battle, Some(agent), &[])));
        }
        obs
    }

    fn step(&mut self, actions: &[Option<Action>], out: &mut Transition) -> Result<(), EnvError> {
        self.check_actions(actions)?;
        match &mut self.battle {
            Some(battle) if !battle.is_over() => {
                battle.step(actions, out);
                Ok(())
            }
            _ => Err(EnvError::NotRunning),
        }
    }

    fn steps(&self) -> u32 {
        self.battle.as_ref().map_or(0, |b| b.steps)
    }

    fn render(&self) -> Option<Frame> {
        self.battle
            .as_ref()
            .map(|b| draw::battlefield(b, None, &[]))
    }

    fn render_marked(&self, marked: &[usize]) -> Option<Frame> {
        self.battle
            .as_ref()
            .map(|b| draw::battlefield(b, None, marked))
    }

    fn outcome(&self) -> Option<Vec<Outcome>> {
        let battle = self.battle.as_ref()?;
        let ending = battle.ending?;
        Some(
            battle
                .units
                .iter()
                .map(|u| match ending {
                    Ending::Won(team) if team == u.team => Outcome::Win,
                    Ending::Won(_) => Outcome::Loss,
                    Ending::Draw | Ending::TimeOut => Outcome::Draw,
                })
                .collect(),
        )
    }

    /// Per team (`_blue`, `_red`): `won` (0/1), `dead` (own units lost), `damage_dealt`,
    /// `healing`, and `relayed_per_step` (agent–enemy pairs known this step only through
    /// the entity memory's relays, per step).
    fn metrics(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut metrics = serde_json::Map::new();
        let Some(battle) = &self.battle else {
            return metrics;
        };
        let steps = f64::from(battle.steps.max(1));
        for (team, name) in TEAMS.iter().enumerate() {
            let stats = &battle.stats[team];
            let won = battle.ending == Some(Ending::Won(team));
            let dead = battle
                .members(team)
                .filter(|i| !battle.units[*i].alive())
                .count();
            metrics.insert(format!("won_{name}"), u8::from(won).into());
            metrics.insert(format!("dead_{name}"), dead.into());
            metrics.insert(format!("damage_dealt_{name}"), stats.damage_dealt.into());
            metrics.insert(format!("healing_{name}"), stats.healing.into());
            metrics.insert(
                format!("relayed_per_step_{name}"),
                (stats.relayed_sightings as f64 / steps).into(),
            );
        }
        metrics
    }

    fn snapshot(&self) -> Option<Snapshot> {
        let saved = SavedState {
            env: NAME.to_owned(),
            battle: self.battle.clone(),
        };
        serde_json::to_vec(&saved).ok().map(Snapshot)
    }

    fn restore(&mut self, snapshot: &Snapshot) -> Result<(), EnvError> {
        let saved: SavedState = serde_json::from_slice(&snapshot.0)
            .map_err(|e| EnvError::Restore(format!("{NAME} snapshot is malformed: {e}")))?;
        if saved.env != NAME {
            return Err(EnvError::Restore(format!(
                "snapshot of `{}` given to {NAME}",
                saved.env
            )));
        }
        let mut battle = match saved.battle {
            None => {
                self.battle = None;
                return Ok(());
            }
            Some(battle) => battle,
        };
        if battle.config != self.config {
            return Err(EnvError::Restore(format!(
                "snapshot of scenario `{}` differs from this environment's configuration",
                battle.config.scenario
            )));
        }
        battle
            .validate()
            .map_err(|e| EnvError::Restore(format!("{NAME} snapshot: {e}")))?;
        battle.refresh();
        self.battle = Some(battle);
        Ok(())
    }
}
