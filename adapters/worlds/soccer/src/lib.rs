//! `soccer-2v2`: MultiGrid soccer, a native re-implementation of
//! `MosaicMultiGrid-S-2v2-IndAgObs-v1` from the PyPI package `mosaic-multigrid` 7.0.0.
//!
//! Rules (those of the reference; only its random streams differ):
//! - A 16×11 pitch with walls on the border. Green (`green_0`, `green_1`) defends the goal
//!   in column 1, blue (`blue_0`, `blue_1`) the goal in column 14; each goal spans rows 4–6.
//!   One ball. At reset the ball, then each player (with a random direction), is placed on a
//!   uniformly random free cell.
//! - All four act at once; each step the actions are applied in a fresh random order.
//!   Cooldowns tick down before the actions.
//! - `left`/`right` turn; `forward` moves onto grass or a goal cell (walls and the loose
//!   ball block; players may share a cell). `pickup` takes the ball from the cell in front,
//!   or steals it from an opponent in front unless the stealer is cooling down; a steal
//!   puts both players on a 10-step cooldown. `drop` passes by teleport to the teammate
//!   anywhere on the pitch (the reference's fallback, dropping the ball in front when no
//!   teammate is free, cannot happen in 2v2).
//!   `noop`, `toggle` and `done` do nothing. Every action is always legal.
//! - After the actions, a carrier standing on an opponent goal cell scores: each member of
//!   its team gets `1 + 0.05 × (max_steps − step)` (no penalty for the other team), the
//!   ball respawns on a random free cell, and the first team to `goals_to_win` (2) ends the
//!   episode (terminated). `max_steps` (256, the reference's default) truncates it.
//! - With `reward_shaping` (on, as in the reference): +0.3 for a steal and ±0.01 per cell
//!   of Manhattan distance gained towards the loose ball, or towards the middle of the
//!   opponent goal for the carrier.
//!
//! Observations: the symbolic vector documented in [`layout`], a text description for
//! language models, and the agent's view as a picture; [`Environment::render`] draws the
//! whole pitch with a score bar.
//!
//! ```
//! use mosaic_soccer::{Soccer, SoccerSettings};
//! use mosaic_core::{Action, Environment, ObsRequest, Transition};
//!
//! let mut env = Soccer::new(SoccerSettings::default()).unwrap();
//! env.reset(7).unwrap();
//! assert_eq!(env.acting(), vec![0, 1, 2, 3]);
//! let mut out = Transition::default();
//! env.step(&[Some(Action(3)); 4], &mut out).unwrap();
//! let obs = env.observe(0, ObsRequest { text: true, ..ObsRequest::MASK_ONLY });
//! assert!(obs.text.unwrap().contains("You are green_0"));
//! ```

mod draw;
mod encode;
mod game;
mod scripted;
mod settings;
#[cfg(test)]
mod tests;
mod text;

pub use draw::{PITCH_TILE, VIEW_TILE};
pub use encode::layout;
pub use game::{ACTION_LABELS, AGENT_IDS, GOAL_BOTTOM, GOAL_TOP, GOAL_X, HEIGHT, TEAMS, WIDTH};
pub use scripted::ScriptedSoccer;
pub use settings::{MAX_VIEW_SIZE, SoccerSettings};

use game::{AGENTS, Game, TeamStats, rival, team_of};
use mosaic_core::experiment::SpecError;
use mosaic_core::registry::EnvKind;
use mosaic_core::{
    Action, AgentSpec, EnvError, EnvSpec, Environment, Frame, ObsRequest, Observation, Outcome,
    Policy, Settings, Snapshot, Stepping, Tensor, Transition,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Registered name.
pub const NAME: &str = "soccer-2v2";

/// The registry entry of `soccer-2v2`.
pub const KIND: EnvKind = EnvKind {
    name: NAME,
    summary: "MultiGrid soccer 2v2 (mosaic-multigrid 7.0.0 rules): 16x11 pitch, steal, \
              teleport pass, first to 2 goals",
    settings: &[
        "view_size = 3: side of the egocentric view, odd, 3 to 31 (7 is the other common one)",
        "goals_to_win = 2: goals that win and end the episode",
        "max_steps = 256: steps before truncation",
        "steal_cooldown = 10: steps both players cannot steal after a steal",
        "reward_shaping = true: +0.3 per steal and +-0.01 per cell towards the ball or goal",
    ],
    make: make_env,
    scripted: Some(make_scripted),
};

fn make_env(settings: &Settings) -> Result<Box<dyn Environment>, SpecError> {
    Ok(Box::new(Soccer::from_settings(settings)?))
}

fn make_scripted(env: &Settings, slot: &Settings) -> Result<Box<dyn Policy>, SpecError> {
    SoccerSettings::parse(env)?;
    Ok(Box::new(ScriptedSoccer::from_settings(slot)?))
}

/// The `soccer-2v2` environment.
#[derive(Clone, Debug)]
pub struct Soccer {
    spec: EnvSpec,
    game: Game,
    started: bool,
}

/// What a snapshot holds.
#[derive(Serialize, Deserialize)]
struct SavedState {
    env: String,
    started: bool,
    game: Game,
}

impl Soccer {
    /// An environment with `settings` (validated); call [`Environment::reset`] to play.
    pub fn new(settings: SoccerSettings) -> Result<Self, SpecError> {
        settings.validate()?;
        let view = settings.view_size as usize;
        let spec = EnvSpec {
            name: NAME.to_owned(),
            agents: AGENT_IDS
                .iter()
                .enumerate()
                .map(|(i, id)| AgentSpec {
                    id: (*id).to_owned(),
                    team: Some(TEAMS[team_of(i)].to_owned()),
                    role: None,
                })
                .collect(),
            action_labels: ACTION_LABELS.iter().map(|l| (*l).to_owned()).collect(),
            default_action: Action(0),
            stepping: Stepping::Simultaneous,
            max_steps: Some(settings.max_steps),
            symbolic_shape: Some(vec![layout::len(view)]),
            offers: ObsRequest::ALL,
        };
        Ok(Self {
            spec,
            game: Game::new(settings, 0),
            started: false,
        })
    }

    /// An environment from experiment settings (see [`SoccerSettings`]).
    pub fn from_settings(settings: &Settings) -> Result<Self, SpecError> {
        Self::new(SoccerSettings::parse(settings)?)
    }

    /// The settings in force.
    pub fn settings(&self) -> &SoccerSettings {
        &self.game.settings
    }

    /// Goals scored so far, green then blue.
    pub fn score(&self) -> [u32; 2] {
        [self.game.teams[0].goals, self.game.teams[1].goals]
    }

    fn check_actions(&self, actions: &[Option<Action>]) -> Result<(), EnvError> {
        if actions.len() != AGENTS {
            return Err(EnvError::InvalidAction {
                agent: actions.len().min(AGENTS),
                reason: format!("expected {AGENTS} actions, got {}", actions.len()),
            });
        }
        let out_of_range = actions.iter().enumerate().find_map(|(agent, action)| {
            action
                .filter(|a| a.index() >= ACTION_LABELS.len())
                .map(|a| (agent, a))
        });
        if let Some((agent, action)) = out_of_range {
            return Err(EnvError::InvalidAction {
                agent,
                reason: format!(
                    "action {} out of range (0..{})",
                    action.0,
                    ACTION_LABELS.len()
                ),
            });
        }
        Ok(())
    }
}

impl Environment for Soccer {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: u64) -> Result<(), EnvError> {
        self.game = Game::new(self.game.settings, seed);
        self.started = true;
        Ok(())
    }

    fn acting(&self) -> Vec<usize> {
        if self.started && !self.game.is_over() {
            (0..AGENTS).collect()
        } else {
            Vec::new()
        }
    }

    fn observe(&self, agent: usize, want: ObsRequest) -> Observation {
        let mut obs = Observation {
            agent,
            step: self.game.steps,
            ..Observation::default()
        };
        if agent >= AGENTS {
            // Not one of ours: nothing is legal.
            obs.legal = vec![false; ACTION_LABELS.len()];
            return obs;
        }
        obs.legal = vec![true; ACTION_LABELS.len()];
        let view = self.game.settings.view_size as usize;
        if want.symbolic {
            let mut data = Vec::with_capacity(layout::len(view));
            encode::symbolic(&self.game, agent, view, &mut data);
            obs.symbolic = Some(Tensor {
                shape: vec![data.len()],
                data,
            });
        }
        if want.text {
            obs.text = Some(text::describe(&self.game, agent));
            let facing = mosaic_core::canvas::screen_direction(self.game.players[agent].dir);
            obs.info = Some(serde_json::json!({ mosaic_core::FACING_INFO: facing }));
        }
        if want.frame {
            obs.frame = Some(Arc::new(draw::agent_view(&self.game, agent, view)));
        }
        obs
    }

    fn step(&mut self, actions: &[Option<Action>], out: &mut Transition) -> Result<(), EnvError> {
        if !self.started || self.game.is_over() {
            return Err(EnvError::NotRunning);
        }
        self.check_actions(actions)?;
        self.game.step(actions, out);
        Ok(())
    }

    fn steps(&self) -> u32 {
        self.game.steps
    }

    fn render(&self) -> Option<Frame> {
        Some(draw::pitch(&self.game, &[]))
    }

    fn render_marked(&self, marked: &[usize]) -> Option<Frame> {
        Some(draw::pitch(&self.game, marked))
    }

    fn outcome(&self) -> Option<Vec<Outcome>> {
        if !self.started || !self.game.is_over() {
            return None;
        }
        let score = self.score();
        Some(
            (0..AGENTS)
                .map(|agent| {
                    let team = team_of(agent);
                    match score[team].cmp(&score[rival(team)]) {
                        std::cmp::Ordering::Greater => Outcome::Win,
                        std::cmp::Ordering::Equal => Outcome::Draw,
                        std::cmp::Ordering::Less => Outcome::Loss,
                    }
                })
                .collect(),
        )
    }

    fn metrics(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut metrics = serde_json::Map::new();
        for (team, stats) in TEAMS.iter().zip(&self.game.teams) {
            let TeamStats {
                goals,
                passes,
                steals,
                pickups,
            } = *stats;
            for (what, value) in [
                ("goals", goals),
                ("passes", passes),
                ("steals", steals),
                ("pickups", pickups),
            ] {
                metrics.insert(format!("{what}_{team}"), value.into());
            }
        }
        metrics
    }

    fn snapshot(&self) -> Option<Snapshot> {
        let saved = SavedState {
            env: NAME.to_owned(),
            started: self.started,
            game: self.game.clone(),
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
        if saved.game.settings != self.game.settings {
            return Err(EnvError::Restore(format!(
                "snapshot settings {:?} differ from this environment's {:?}",
                saved.game.settings, self.game.settings
            )));
        }
        saved
            .game
            .validate()
            .map_err(|e| EnvError::Restore(format!("{NAME} snapshot: {e}")))?;
        self.game = saved.game;
        self.started = saved.started;
        Ok(())
    }
}
