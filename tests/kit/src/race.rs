//! A small deterministic game for exercising sessions: each agent walks on a line of
//! `length` cells; `right` moves it one cell, `stay` keeps it, `left` is never legal. The
//! first agent to reach the end gets +1 and ends the episode; a seeded coin decides at
//! reset who starts one cell ahead.

use mosaic_core::experiment::parse_settings;
use mosaic_core::rng::seeded;
use mosaic_core::{
    Action, AgentSpec, EnvError, EnvSpec, Environment, ObsRequest, Observation, Outcome, Settings,
    SpecError, Stepping, Transition,
};
use mosaic_core::{EnvKind, EnvRegistry};
use rand::Rng;

/// The race (see the module's documentation).
pub struct Race {
    headstrong: bool,
    spec: EnvSpec,
    positions: Vec<u32>,
    length: u32,
    steps: u32,
    over: bool,
    turn: usize,
}

impl std::fmt::Debug for Race {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Race").finish_non_exhaustive()
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RaceSettings {
    #[serde(default = "default_length")]
    length: u32,
    #[serde(default)]
    sequential: bool,
    /// Red decides for itself, like an environment worker that picks its own actions: it
    /// always moves right, whatever it is given.
    #[serde(default)]
    headstrong: bool,
}

fn default_length() -> u32 {
    6
}

impl Race {
    /// A race on `length` cells; `sequential` agents take turns, else they move together.
    pub fn new(length: u32, sequential: bool) -> Self {
        Self {
            headstrong: false,
            spec: EnvSpec {
                name: "race".into(),
                agents: vec![
                    AgentSpec {
                        id: "red".into(),
                        team: Some("red".into()),
                        role: None,
                    },
                    AgentSpec {
                        id: "blue".into(),
                        team: Some("blue".into()),
                        role: None,
                    },
                ],
                action_labels: vec!["stay".into(), "right".into(), "left".into()],
                default_action: Action(0),
                stepping: if sequential {
                    Stepping::Sequential
                } else {
                    Stepping::Simultaneous
                },
                max_steps: None,
                symbolic_shape: None,
                offers: ObsRequest {
                    symbolic: false,
                    text: true,
                    frame: false,
                },
                descriptions: Default::default(),
            },
            positions: vec![0, 0],
            length,
            steps: 0,
            over: true,
            turn: 0,
        }
    }
}

impl Environment for Race {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: u64) -> Result<(), EnvError> {
        let mut rng = seeded(seed);
        self.positions = vec![0, 0];
        let ahead = rng.random_range(0..2);
        self.positions[ahead] = 1;
        self.steps = 0;
        self.turn = 0;
        self.over = false;
        Ok(())
    }

    fn acting(&self) -> Vec<usize> {
        match (self.over, self.spec.stepping) {
            (true, _) => vec![],
            (false, Stepping::Sequential) => vec![self.turn],
            (false, _) => vec![0, 1],
        }
    }

    fn observe(&self, agent: usize, want: ObsRequest) -> Observation {
        let mut obs = Observation::with_mask(agent, vec![true, true, false]);
        obs.step = self.steps;
        if want.text {
            obs.text = Some(format!(
                "you are at {} of {}",
                self.positions[agent], self.length
            ));
        }
        obs
    }

    fn step(&mut self, actions: &[Option<Action>], out: &mut Transition) -> Result<(), EnvError> {
        if self.over {
            return Err(EnvError::NotRunning);
        }
        out.clear(2);
        for agent in self.acting() {
            let mut action = actions.get(agent).copied().flatten();
            if self.headstrong && agent == 0 && action != Some(Action(1)) {
                action = Some(Action(1));
                out.executed[0] = action;
            }
            match action {
                Some(Action(0)) => {}
                Some(Action(1)) => self.positions[agent] += 1,
                other => {
                    return Err(EnvError::InvalidAction {
                        agent,
                        reason: format!("{other:?}"),
                    });
                }
            }
        }
        self.steps += 1;
        self.turn = 1 - self.turn;
        if let Some(winner) = (0..2).find(|a| self.positions[*a] >= self.length) {
            out.rewards[winner] = 1.0;
            out.rewards[1 - winner] = -1.0;
            out.terminated = vec![true, true];
            out.events.push(mosaic_core::Event {
                kind: "finish".into(),
                agent: Some(winner),
                detail: None,
            });
            self.over = true;
        }
        Ok(())
    }

    fn steps(&self) -> u32 {
        self.steps
    }

    fn outcome(&self) -> Option<Vec<Outcome>> {
        let winner = (0..2).find(|a| self.positions[*a] >= self.length)?;
        Some(crate::won_by(2, winner))
    }
}

fn make(settings: &Settings) -> Result<Box<dyn Environment>, SpecError> {
    let s: RaceSettings = parse_settings(settings)?;
    let mut race = Race::new(s.length, s.sequential);
    race.headstrong = s.headstrong;
    Ok(Box::new(race))
}

/// A registry holding only `race` (settings `length`, `sequential`, `headstrong`).
pub fn registry() -> EnvRegistry {
    let mut registry = EnvRegistry::default();
    registry.register(EnvKind {
        name: "race",
        summary: "test race",
        settings: &[],
        make,
        scripted: None,
    });
    registry
}
