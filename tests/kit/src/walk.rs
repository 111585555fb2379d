//! A small deterministic grid game that draws itself, for exercising the web interface in
//! every stepping mode: agents walk on a walled grid towards a goal; the first to reach it
//! gets +1 and ends the episode. Moves into walls or other agents are illegal. The seed
//! places the goal and the agents.

use mosaic_core::canvas::Canvas;
use mosaic_core::experiment::parse_settings;
use mosaic_core::rng::seeded;
use mosaic_core::{
    Action, AgentSpec, EnvError, EnvSpec, Environment, Event, Frame, ObsRequest, Observation,
    Outcome, Settings, SpecError, Stepping, Transition,
};
use mosaic_core::{EnvKind, EnvRegistry};
use rand::Rng;

/// Pixels per cell of the drawn grid.
pub const TILE: u32 = 24;
/// The action labels, by action index.
pub const LABELS: [&str; 5] = ["stay", "left", "right", "up", "down"];
const COLOURS: [[u8; 3]; 2] = [[220, 60, 60], [60, 110, 230]];

/// The walk (see the module's documentation).
pub struct Walk {
    spec: EnvSpec,
    width: i32,
    height: i32,
    goal: (i32, i32),
    positions: Vec<(i32, i32)>,
    steps: u32,
    turn: usize,
    winner: Option<usize>,
    running: bool,
}

impl std::fmt::Debug for Walk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Walk").finish_non_exhaustive()
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct WalkSettings {
    #[serde(default = "simultaneous")]
    stepping: Stepping,
    #[serde(default = "default_width")]
    width: i32,
    #[serde(default = "default_height")]
    height: i32,
}

fn simultaneous() -> Stepping {
    Stepping::Simultaneous
}
fn default_width() -> i32 {
    8
}
fn default_height() -> i32 {
    6
}

impl Walk {
    /// A `width` × `height` walk, stepped as `stepping` says.
    pub fn new(stepping: Stepping, width: i32, height: i32) -> Self {
        let agents = match stepping {
            Stepping::Single => vec![AgentSpec {
                id: "solo".into(),
                team: None,
                role: None,
            }],
            _ => vec![
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
        };
        Self {
            spec: EnvSpec {
                name: "walk".into(),
                agents,
                action_labels: LABELS.iter().map(|l| l.to_string()).collect(),
                default_action: Action(0),
                stepping,
                max_steps: None,
                symbolic_shape: None,
                offers: ObsRequest {
                    symbolic: false,
                    text: true,
                    frame: false,
                },
                descriptions: Default::default(),
            },
            width,
            height,
            goal: (0, 0),
            positions: Vec::new(),
            steps: 0,
            turn: 0,
            winner: None,
            running: false,
        }
    }

    fn target(&self, agent: usize, action: Action) -> (i32, i32) {
        let (x, y) = self.positions[agent];
        match action.0 {
            1 => (x - 1, y),
            2 => (x + 1, y),
            3 => (x, y - 1),
            4 => (x, y + 1),
            _ => (x, y),
        }
    }

    /// The legal-action mask of `agent` now.
    pub fn legal(&self, agent: usize) -> Vec<bool> {
        (0..LABELS.len() as u32)
            .map(|a| {
                let (x, y) = self.target(agent, Action(a));
                a == 0
                    || (x >= 0
                        && y >= 0
                        && x < self.width
                        && y < self.height
                        && !self.positions.contains(&(x, y)))
            })
            .collect()
    }
}

impl Environment for Walk {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: u64) -> Result<(), EnvError> {
        let mut rng = seeded(seed);
        let mut cell = |taken: &[(i32, i32)]| loop {
            let c = (
                rng.random_range(0..self.width),
                rng.random_range(0..self.height),
            );
            if !taken.contains(&c) {
                return c;
            }
        };
        self.goal = cell(&[]);
        let mut taken = vec![self.goal];
        self.positions.clear();
        for _ in 0..self.spec.agents.len() {
            let c = cell(&taken);
            taken.push(c);
            self.positions.push(c);
        }
        self.steps = 0;
        self.turn = 0;
        self.winner = None;
        self.running = true;
        Ok(())
    }

    fn acting(&self) -> Vec<usize> {
        if !self.running {
            return vec![];
        }
        match self.spec.stepping {
            Stepping::Sequential => vec![self.turn],
            _ => (0..self.spec.agents.len()).collect(),
        }
    }

    fn observe(&self, agent: usize, want: ObsRequest) -> Observation {
        let mut obs = Observation::with_mask(agent, self.legal(agent));
        obs.step = self.steps;
        if want.text {
            let (x, y) = self.positions[agent];
            obs.text = Some(format!(
                "you are at ({x}, {y}); the goal is at ({}, {})",
                self.goal.0, self.goal.1
            ));
        }
        obs
    }

    fn step(&mut self, actions: &[Option<Action>], out: &mut Transition) -> Result<(), EnvError> {
        if !self.running {
            return Err(EnvError::NotRunning);
        }
        let agents = self.spec.agents.len();
        out.clear(agents);
        for agent in self.acting() {
            let action =
                actions
                    .get(agent)
                    .copied()
                    .flatten()
                    .ok_or_else(|| EnvError::InvalidAction {
                        agent,
                        reason: "no action".into(),
                    })?;
            if !self
                .legal(agent)
                .get(action.index())
                .copied()
                .unwrap_or(false)
            {
                return Err(EnvError::InvalidAction {
                    agent,
                    reason: format!("{} is not legal", action.0),
                });
            }
            self.positions[agent] = self.target(agent, action);
            if self.positions[agent] == self.goal && self.winner.is_none() {
                self.winner = Some(agent);
            }
        }
        self.steps += 1;
        self.turn = (self.turn + 1) % agents;
        if let Some(winner) = self.winner {
            out.rewards[winner] = 1.0;
            out.terminated = vec![true; agents];
            out.events.push(Event {
                kind: "goal".into(),
                agent: Some(winner),
                detail: None,
            });
            self.running = false;
        }
        Ok(())
    }

    fn steps(&self) -> u32 {
        self.steps
    }

    fn render(&self) -> Option<Frame> {
        let (w, h) = (self.width as u32 * TILE, self.height as u32 * TILE);
        let mut canvas = Canvas::new(w, h, [34, 38, 46]);
        for x in 0..self.width {
            for y in 0..self.height {
                canvas.outline_rect(
                    i64::from(x) * i64::from(TILE),
                    i64::from(y) * i64::from(TILE),
                    TILE,
                    TILE,
                    [60, 66, 78],
                );
            }
        }
        let at = |c: i32| i64::from(c) * i64::from(TILE);
        canvas.fill_rect(
            at(self.goal.0) + 3,
            at(self.goal.1) + 3,
            TILE - 6,
            TILE - 6,
            [70, 190, 90],
        );
        for (agent, (x, y)) in self.positions.iter().enumerate() {
            let colour = if self.spec.agents.len() == 1 {
                [240, 150, 40]
            } else {
                COLOURS[agent % 2]
            };
            let centre = |c: i32| (c as f32 + 0.5) * TILE as f32;
            canvas.fill_circle(centre(*x), centre(*y), TILE as f32 * 0.36, colour);
        }
        Some(canvas.into_frame())
    }

    fn outcome(&self) -> Option<Vec<Outcome>> {
        Some(crate::won_by(self.spec.agents.len(), self.winner?))
    }
}

fn make(settings: &Settings) -> Result<Box<dyn Environment>, SpecError> {
    let s: WalkSettings = parse_settings(settings)?;
    Ok(Box::new(Walk::new(s.stepping, s.width, s.height)))
}

/// A registry holding only `walk` (settings `stepping`, `width`, `height`).
pub fn registry() -> EnvRegistry {
    let mut registry = EnvRegistry::default();
    registry.register(EnvKind {
        name: "walk",
        summary: "agents walk to a goal on a small grid",
        settings: &[
            "stepping = simultaneous: single, sequential or simultaneous",
            "width = 8: columns",
            "height = 6: rows",
        ],
        make,
        scripted: None,
    });
    registry
}
