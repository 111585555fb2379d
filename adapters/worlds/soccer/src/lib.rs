//! MultiGrid soccer, a native re-implementation of the soccer environments of the PyPI
//! package `mosaic-multigrid` 7.0.0, one registered environment per team size
//! ([`Lineup`]):
//!
//! | environment | reference | players |
//! |---|---|---|
//! | `soccer-1v0` | `MosaicMultiGrid-S-G-1v0-v1` | `green_0` alone (no opponent) |
//! | `soccer-1v1` | `MosaicMultiGrid-S-1v1-IndAgObs-v1` | `green_0`, `blue_0` |
//! | `soccer-2v2` | `MosaicMultiGrid-S-2v2-IndAgObs-v1` | `green_0`, `green_1`, `blue_0`, `blue_1` |
//! | `soccer-3v3` | `MosaicMultiGrid-S-3v3-IndAgObs-v1` | `green_0`–`green_2`, `blue_0`–`blue_2` |
//! | `soccer-0v1` | `MosaicMultiGrid-S-B-0v1-v1` | `blue_0` alone (no opponent) |
//!
//! Rules (those of the reference; only its random streams differ):
//! - A 16×11 pitch with walls on the border, the same for every team size. Green defends
//!   the goal in column 1, blue the goal in column 14; each goal spans rows 4–6. One ball.
//!   At reset the ball, then each player (with a random direction), is placed on a
//!   uniformly random free cell.
//! - All act at once; each step the actions are applied in a fresh random order.
//!   Cooldowns tick down before the actions.
//! - `left`/`right` turn; `forward` moves onto grass or a goal cell (walls and the loose
//!   ball block; players may share a cell). `pickup` takes the ball from the cell in front,
//!   or steals it from an opponent in front unless the stealer is cooling down; a steal
//!   puts both players on a 10-step cooldown. `drop` passes by teleport to a teammate
//!   anywhere on the pitch (drawn at random in 3v3); without a teammate (1v0, 1v1) it drops
//!   the ball on the cell in front when that is grass with nobody on it, as the reference
//!   falls back to. `noop`, `toggle` and `done` do nothing. Every action is always legal.
//! - After the actions, a carrier standing on an opponent goal cell scores: each member of
//!   its team gets `1 + 0.05 × (max_steps − step)` (no penalty for the other team), the
//!   ball respawns on a random free cell, and the first team to `goals_to_win` (2) ends the
//!   episode (terminated). `max_steps` (256, the reference's default) truncates it.
//! - With `reward_shaping` (on, as in the reference): +0.3 for a steal and ±0.01 per cell
//!   of Manhattan distance gained towards the loose ball, or towards the middle of the
//!   opponent goal for the carrier.
//! - Outcomes: the team with more goals wins, level is a draw; alone (1v0), the player
//!   wins when it reaches `goals_to_win` and loses otherwise.
//!
//! Observations: a symbolic vector, either MOSAIC's (`observation = "mosaic"`, the
//! default: global features then the view, see [`layout`]; its length depends on the team
//! sizes) or the reference's observation dict flattened (`observation = "reference"`, see
//! [`reference`](mod@reference); the same length for every team size, so a policy trained alone plays in
//! a team); a text description for language models; the agent's view as a picture.
//! [`Environment::render`] draws the whole pitch with a score bar.
//!
//! In the `reference` mode a symbolic observation also carries the global features of the
//! `mosaic` layout (everything before its view) as a list of numbers under
//! `info["globals"]` ([`GLOBALS_INFO`]), which the scripted player reads; policies see
//! only the vector.
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
mod lineup;
#[cfg(test)]
mod lineup_tests;
mod scripted;
mod settings;
#[cfg(test)]
mod tests;
mod text;

pub use draw::{PITCH_TILE, VIEW_TILE};
pub use encode::{SymbolicLayout, layout, reference};
pub use game::{ACTION_LABELS, GOAL_BOTTOM, GOAL_TOP, GOAL_X, HEIGHT, TEAMS, WIDTH};
pub use lineup::{Lineup, MAX_AGENTS};
pub use scripted::{GLOBALS_INFO, ScriptedSoccer};
pub use settings::{MAX_VIEW_SIZE, ObservationMode, SoccerSettings};

use game::{Game, TeamStats, rival};
use mosaic_core::experiment::SpecError;
use mosaic_core::registry::EnvKind;
use mosaic_core::{
    Action, AgentSpec, EnvError, EnvSpec, Environment, Frame, ObsRequest, Observation, Outcome,
    Policy, Settings, Snapshot, Stepping, Tensor, Transition,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Settings every soccer environment reads, one `name = default: meaning` line each.
const SETTINGS: &[&str] = &[
    "view_size = 3: side of the egocentric view, odd, 3 to 31 (7 is the other common one)",
    "goals_to_win = 2: goals that win and end the episode",
    "max_steps = 256: steps before truncation",
    "steal_cooldown = 10: steps both players cannot steal after a steal",
    "reward_shaping = true: +0.3 per steal and +-0.01 per cell towards the ball or goal",
    "observation = \"mosaic\": the symbolic vector, \"mosaic\" (global features and view) or \
     \"reference\" (mosaic-multigrid's image and direction, the same for every team size)",
];

/// The registry entries of the soccer environments, one per [`Lineup`], in
/// [`Lineup::ALL`] order: `soccer-1v0`, `soccer-1v1`, `soccer-2v2`, `soccer-3v3`,
/// `soccer-0v1`.
pub const KINDS: [EnvKind; 5] = [
    EnvKind {
        name: Lineup::Solo.name(),
        summary: "MultiGrid soccer alone (mosaic-multigrid 7.0.0 S-G-1v0): one green player, \
                  no opponent, 16x11 pitch, first to 2 goals; solo pre-training",
        settings: SETTINGS,
        make: make_env::<0>,
        scripted: Some(make_scripted::<0>),
    },
    EnvKind {
        name: Lineup::OneOnOne.name(),
        summary: "MultiGrid soccer 1v1 (mosaic-multigrid 7.0.0 rules): 16x11 pitch, steal, \
                  drop in front, first to 2 goals",
        settings: SETTINGS,
        make: make_env::<1>,
        scripted: Some(make_scripted::<1>),
    },
    EnvKind {
        name: Lineup::TwoOnTwo.name(),
        summary: "MultiGrid soccer 2v2 (mosaic-multigrid 7.0.0 rules): 16x11 pitch, steal, \
                  teleport pass, first to 2 goals",
        settings: SETTINGS,
        make: make_env::<2>,
        scripted: Some(make_scripted::<2>),
    },
    EnvKind {
        name: Lineup::ThreeOnThree.name(),
        summary: "MultiGrid soccer 3v3 (mosaic-multigrid 7.0.0 rules): 16x11 pitch, steal, \
                  teleport pass to a random teammate, first to 2 goals",
        settings: SETTINGS,
        make: make_env::<3>,
        scripted: Some(make_scripted::<3>),
    },
    EnvKind {
        name: Lineup::SoloBlue.name(),
        summary: "MultiGrid soccer alone on the blue side (mosaic-multigrid 7.0.0 S-B-0v1): one \
                  blue player, no opponent, 16x11 pitch, first to 2 goals; solo pre-training",
        settings: SETTINGS,
        make: make_env::<4>,
        scripted: Some(make_scripted::<4>),
    },
];

/// Builds the environment of lineup `Lineup::ALL[LINEUP]`.
fn make_env<const LINEUP: usize>(settings: &Settings) -> Result<Box<dyn Environment>, SpecError> {
    let lineup = Lineup::ALL[LINEUP];
    Ok(Box::new(Soccer::with_lineup(
        lineup,
        SoccerSettings::parse(settings)?,
    )?))
}

/// Builds the scripted player of lineup `Lineup::ALL[LINEUP]`.
fn make_scripted<const LINEUP: usize>(
    env: &Settings,
    slot: &Settings,
) -> Result<Box<dyn Policy>, SpecError> {
    SoccerSettings::parse(env)?;
    Ok(Box::new(ScriptedSoccer::from_settings(
        Lineup::ALL[LINEUP],
        slot,
    )?))
}

/// A soccer environment (any [`Lineup`]).
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
    /// A `soccer-2v2` environment with `settings` (validated); call
    /// [`Environment::reset`] to play.
    pub fn new(settings: SoccerSettings) -> Result<Self, SpecError> {
        Self::with_lineup(Lineup::TwoOnTwo, settings)
    }

    /// An environment of `lineup` with `settings` (validated).
    pub fn with_lineup(lineup: Lineup, settings: SoccerSettings) -> Result<Self, SpecError> {
        settings.validate()?;
        let view = settings.view_size as usize;
        let symbolic_len = match settings.observation {
            ObservationMode::Mosaic => SymbolicLayout::new(lineup, view).total_len(),
            ObservationMode::Reference => reference::len(view),
        };
        let spec = EnvSpec {
            name: lineup.name().to_owned(),
            agents: lineup
                .agent_ids()
                .iter()
                .enumerate()
                .map(|(i, id)| AgentSpec {
                    id: (*id).to_owned(),
                    team: Some(TEAMS[lineup.team_of(i)].to_owned()),
                    role: None,
                })
                .collect(),
            action_labels: ACTION_LABELS.iter().map(|l| (*l).to_owned()).collect(),
            default_action: Action(0),
            stepping: Stepping::Simultaneous,
            max_steps: Some(settings.max_steps),
            symbolic_shape: Some(vec![symbolic_len]),
            offers: ObsRequest::ALL,
            descriptions: Default::default(),
        };
        Ok(Self {
            spec,
            game: Game::new(settings, lineup, 0),
            started: false,
        })
    }

    /// Who plays.
    pub fn lineup(&self) -> Lineup {
        self.game.lineup
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
        let agents = self.game.players.len();
        if actions.len() != agents {
            return Err(EnvError::InvalidAction {
                agent: actions.len().min(agents),
                reason: format!("expected {agents} actions, got {}", actions.len()),
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
        self.game = Game::new(self.game.settings, self.game.lineup, seed);
        self.started = true;
        Ok(())
    }

    fn acting(&self) -> Vec<usize> {
        if self.started && !self.game.is_over() {
            (0..self.game.players.len()).collect()
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
        if agent >= self.game.players.len() {
            // Not one of ours: nothing is legal.
            obs.legal = vec![false; ACTION_LABELS.len()];
            return obs;
        }
        obs.legal = vec![true; ACTION_LABELS.len()];
        let view = self.game.settings.view_size as usize;
        let mut info = serde_json::Map::new();
        if want.symbolic {
            let mut data =
                Vec::with_capacity(self.spec.symbolic_shape.as_ref().map_or(0, |s| s[0]));
            match self.game.settings.observation {
                ObservationMode::Mosaic => encode::symbolic(&self.game, agent, view, &mut data),
                ObservationMode::Reference => {
                    encode::reference(&self.game, agent, view, &mut data);
                    let shape = SymbolicLayout::new(self.game.lineup, 0);
                    let mut globals = vec![0.0; shape.view()];
                    encode::globals(&self.game, agent, &shape, &mut globals);
                    info.insert(GLOBALS_INFO.to_owned(), globals.into());
                }
            }
            obs.symbolic = Some(Tensor {
                shape: vec![data.len()],
                data,
            });
        }
        if want.text {
            obs.text = Some(text::describe(&self.game, agent));
            let facing = mosaic_core::canvas::screen_direction(self.game.players[agent].dir);
            info.insert(mosaic_core::FACING_INFO.to_owned(), facing.into());
        }
        if !info.is_empty() {
            obs.info = Some(info.into());
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
        let lineup = self.game.lineup;
        if !lineup.has_opponents() {
            let won = score[lineup.team_of(0)] >= self.game.settings.goals_to_win;
            let outcome = if won { Outcome::Win } else { Outcome::Loss };
            return Some(vec![outcome; lineup.agents()]);
        }
        Some(
            (0..lineup.agents())
                .map(|agent| {
                    let team = lineup.team_of(agent);
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
        let playing = self.game.lineup.team_sizes().map(|size| size > 0);
        let teams = TEAMS.iter().zip(&self.game.teams).zip(playing);
        for ((team, stats), _) in teams.filter(|(_, playing)| *playing) {
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
            env: self.spec.name.clone(),
            started: self.started,
            game: self.game.clone(),
        };
        serde_json::to_vec(&saved).ok().map(Snapshot)
    }

    fn restore(&mut self, snapshot: &Snapshot) -> Result<(), EnvError> {
        let name = &self.spec.name;
        let mut saved: SavedState = serde_json::from_slice(&snapshot.0)
            .map_err(|e| EnvError::Restore(format!("{name} snapshot is malformed: {e}")))?;
        if saved.env != *name {
            return Err(EnvError::Restore(format!(
                "snapshot of `{}` given to {name}",
                saved.env
            )));
        }
        if saved.game.settings != self.game.settings {
            return Err(EnvError::Restore(format!(
                "snapshot settings {:?} differ from this environment's {:?}",
                saved.game.settings, self.game.settings
            )));
        }
        saved.game.lineup = self.game.lineup;
        saved
            .game
            .validate()
            .map_err(|e| EnvError::Restore(format!("{name} snapshot: {e}")))?;
        self.game = saved.game;
        self.started = saved.started;
        Ok(())
    }
}
