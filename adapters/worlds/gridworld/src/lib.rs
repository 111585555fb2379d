//! `gridworld`: a single-agent MiniGrid task (DoorKey or GoToObject) in native Rust.
//!
//! The rules follow MiniGrid's `MiniGridEnv.step`, `DoorKeyEnv` and `GoToObjectEnv`:
//! seven actions (left, right, forward, pickup, drop, toggle, done), an egocentric 7x7
//! view with MiniGrid's occlusion sweep (GoToObject sees through walls, DoorKey does not),
//! success rewarded `1 - 0.9 * steps / max_steps`, truncation at `max_steps`.
//!
//! - `doorkey`: a wall splits the room; the agent and a yellow key start on the left, the
//!   locked yellow door is in the wall, the goal square is in the bottom-right corner.
//!   Stepping onto the goal succeeds.
//! - `goto`: coloured keys, balls and boxes (distinct colour and kind) lie in a walled room;
//!   the mission names one. `done` ends the episode and succeeds when the agent stands next
//!   to (4-neighbour) the cell where the target was placed, facing any way; `toggle` ends
//!   the episode without reward.
//!
//! Layouts are drawn with mosaic's seeded RNG: the same rules and distribution as
//! MiniGrid, not the same layout per seed as the Python package.
//!
//! Observations: the symbolic tensor has shape `[148]`: MiniGrid's `image` array
//! (7 x 7 x 3 `(object, colour, state)` codes indexed `[x][y][channel]`, C order, the agent
//! at x = 3, y = 6 facing up the view) followed by the direction (0 east, 1 south, 2 west,
//! 3 north). Whenever the symbolic or text view is asked for, `info` carries
//! `{"mission", "agent_pos": [x, y], "agent_dir"}`. The text view is egocentric and written
//! for language models; frames show the whole grid with the agent's view highlighted.
//!
//! ```
//! use mosaic_gridworld::Gridworld;
//! use mosaic_core::{Action, Environment, ObsRequest, Settings, Transition};
//!
//! let mut env = Gridworld::from_settings(&Settings::new()).unwrap(); // DoorKey 5x5
//! env.reset(3).unwrap();
//! let obs = env.observe(0, ObsRequest::ALL);
//! assert_eq!(obs.symbolic.unwrap().shape, vec![148]);
//! assert!(obs.text.unwrap().contains("use the key to open the door"));
//! let mut out = Transition::default();
//! env.step(&[Some(Action(1))], &mut out).unwrap(); // turn right
//! assert_eq!(env.steps(), 1);
//! ```

mod draw;
mod planner;
mod text;
mod world;

pub use planner::GridPlanner;
pub use world::{
    Colour, DoorState, Grid, Item, ItemKind, Pos, Tile, VIEW, View, direction_name,
    direction_vector, view_to_world,
};

use mosaic_core::experiment::{SpecError, parse_settings};
use mosaic_core::registry::EnvKind;
use mosaic_core::rng::{Rng, seeded};
use mosaic_core::{
    Action, AgentSpec, EnvError, EnvSpec, Environment, Event, Frame, ObsRequest, Observation,
    Outcome, Policy, Settings, Snapshot, Stepping, Tensor, Transition,
};
use rand::Rng as _;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// MiniGrid's actions, in index order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GridAction {
    /// Turn left.
    Left,
    /// Turn right.
    Right,
    /// Move one cell ahead.
    Forward,
    /// Pick up the object ahead.
    Pickup,
    /// Put the carried object down ahead.
    Drop,
    /// Open, close or unlock the door ahead; open the box ahead.
    Toggle,
    /// Declare the mission complete.
    Done,
}

impl GridAction {
    /// Every action in index order.
    pub const ALL: [GridAction; 7] = [
        GridAction::Left,
        GridAction::Right,
        GridAction::Forward,
        GridAction::Pickup,
        GridAction::Drop,
        GridAction::Toggle,
        GridAction::Done,
    ];

    /// The action's label.
    pub fn label(self) -> &'static str {
        match self {
            GridAction::Left => "left",
            GridAction::Right => "right",
            GridAction::Forward => "forward",
            GridAction::Pickup => "pickup",
            GridAction::Drop => "drop",
            GridAction::Toggle => "toggle",
            GridAction::Done => "done",
        }
    }

    /// The discrete action.
    pub fn action(self) -> Action {
        Action(self as u32)
    }

    /// The action with index `action`.
    pub fn from_action(action: Action) -> Option<GridAction> {
        GridAction::ALL.get(action.index()).copied()
    }
}

/// Which MiniGrid task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Task {
    /// Go to the named object and say `done` (MiniGrid GoToObject).
    #[serde(rename = "goto")]
    GoTo,
    /// Fetch the key, unlock the door, reach the goal (MiniGrid DoorKey).
    #[default]
    #[serde(rename = "doorkey")]
    DoorKey,
}

/// What the agent is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mission {
    /// DoorKey's fixed mission.
    DoorKey,
    /// Go to this object.
    GoTo(Item),
}

const DOORKEY_MISSION: &str = "use the key to open the door and then get to the goal";
const GOTO_PREFIX: &str = "go to the ";

impl Mission {
    /// The mission string, as MiniGrid words it.
    ///
    /// ```
    /// use mosaic_gridworld::{Colour, Item, ItemKind, Mission};
    /// let mission = Mission::GoTo(Item { kind: ItemKind::Ball, colour: Colour::Red });
    /// assert_eq!(mission.text(), "go to the red ball");
    /// assert_eq!(Mission::parse("go to the red ball"), Some(mission));
    /// ```
    pub fn text(self) -> String {
        match self {
            Mission::DoorKey => DOORKEY_MISSION.to_owned(),
            Mission::GoTo(item) => format!("{GOTO_PREFIX}{}", item.describe()),
        }
    }

    /// Reads a mission string back.
    pub fn parse(text: &str) -> Option<Mission> {
        if text == DOORKEY_MISSION {
            return Some(Mission::DoorKey);
        }
        let (colour, kind) = text.strip_prefix(GOTO_PREFIX)?.split_once(' ')?;
        Some(Mission::GoTo(Item {
            kind: ItemKind::from_name(kind)?,
            colour: Colour::from_name(colour)?,
        }))
    }
}

/// Validated gridworld settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridworldConfig {
    /// The task.
    pub task: Task,
    /// Side length including the border walls.
    pub size: u32,
    /// Steps before truncation.
    pub max_steps: u32,
    /// Objects in the room (`goto` only).
    pub objects: u32,
}

/// Smallest and largest grid sides.
const SIZES: std::ops::RangeInclusive<u32> = 5..=16;
/// Most objects in a `goto` room.
const MAX_OBJECTS: u32 = 8;

/// Settings as written in experiment files.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GridworldSettings {
    #[serde(default)]
    task: Task,
    #[serde(default)]
    size: Option<u32>,
    #[serde(default)]
    max_steps: Option<u32>,
    #[serde(default)]
    objects: Option<u32>,
}

impl GridworldConfig {
    /// MiniGrid's defaults for `task`: DoorKey-5x5 (250 steps) or GoToObject-6x6-N2
    /// (180 steps).
    pub fn new(task: Task) -> Self {
        let size = match task {
            Task::DoorKey => 5,
            Task::GoTo => 6,
        };
        Self::sized(task, size)
    }

    /// `task` on a `size` grid with MiniGrid's step limit for that size (DoorKey
    /// `10 * size^2`, GoToObject `5 * size^2`) and two objects.
    pub fn sized(task: Task, size: u32) -> Self {
        let per_cell = match task {
            Task::DoorKey => 10,
            Task::GoTo => 5,
        };
        Self {
            task,
            size,
            max_steps: per_cell * size * size,
            objects: 2,
        }
    }

    /// Reads and checks experiment settings.
    ///
    /// ```
    /// use mosaic_gridworld::{GridworldConfig, Task};
    /// let settings = serde_json::json!({ "task": "goto", "size": 8 });
    /// let config = GridworldConfig::from_settings(settings.as_object().unwrap()).unwrap();
    /// assert_eq!((config.task, config.size, config.max_steps), (Task::GoTo, 8, 320));
    /// let bad = serde_json::json!({ "size": 40 });
    /// assert!(GridworldConfig::from_settings(bad.as_object().unwrap()).is_err());
    /// ```
    pub fn from_settings(settings: &Settings) -> Result<Self, SpecError> {
        let raw: GridworldSettings = parse_settings(settings)?;
        let mut config = match raw.size {
            Some(size) => Self::sized(raw.task, size),
            None => Self::new(raw.task),
        };
        if let Some(max_steps) = raw.max_steps {
            config.max_steps = max_steps;
        }
        if let Some(objects) = raw.objects {
            if raw.task != Task::GoTo {
                return Err(SpecError::new(
                    "objects",
                    "only the `goto` task places objects",
                ));
            }
            config.objects = objects;
        }
        config.validate()?;
        Ok(config)
    }

    /// Checks the ranges.
    pub fn validate(&self) -> Result<(), SpecError> {
        if !SIZES.contains(&self.size) {
            return Err(SpecError::new(
                "size",
                format!(
                    "{} is outside {}..={}",
                    self.size,
                    SIZES.start(),
                    SIZES.end()
                ),
            ));
        }
        if self.max_steps == 0 {
            return Err(SpecError::new("max_steps", "must be at least 1"));
        }
        let free_cells = (self.size - 2) * (self.size - 2) - 1;
        let most = MAX_OBJECTS.min(free_cells);
        if self.task == Task::GoTo && !(1..=most).contains(&self.objects) {
            return Err(SpecError::new(
                "objects",
                format!("{} is outside 1..={most}", self.objects),
            ));
        }
        Ok(())
    }
}

/// Where an episode stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    Running,
    Succeeded,
    /// Ended by the agent without success (`done` away from the target, `toggle` in goto).
    Failed,
    TimedOut,
}

/// The whole episode state (also the snapshot format).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct State {
    grid: Grid,
    agent: Pos,
    direction: u8,
    carrying: Option<Item>,
    mission: Mission,
    /// Where the `goto` target was placed (MiniGrid checks `done` against this cell).
    target: Option<Pos>,
    steps: u32,
    status: Status,
}

impl State {
    fn view(&self, see_through_walls: bool) -> View {
        View::of(
            &self.grid,
            self.agent,
            self.direction,
            self.carrying,
            see_through_walls,
        )
    }
}

/// A MiniGrid task; see the module documentation.
#[derive(Clone, Debug)]
pub struct Gridworld {
    spec: EnvSpec,
    config: GridworldConfig,
    state: Option<State>,
}

/// Length of the symbolic tensor: the 7x7x3 view plus the direction.
pub const SYMBOLIC_LEN: usize = VIEW * VIEW * 3 + 1;

impl Gridworld {
    /// A gridworld with `config` (checked).
    pub fn new(config: GridworldConfig) -> Result<Self, SpecError> {
        config.validate()?;
        let spec = EnvSpec {
            name: "gridworld".to_owned(),
            agents: vec![AgentSpec {
                id: "agent_0".to_owned(),
                team: None,
                role: None,
            }],
            action_labels: GridAction::ALL
                .iter()
                .map(|a| a.label().to_owned())
                .collect(),
            default_action: GridAction::Left.action(),
            stepping: Stepping::Single,
            max_steps: Some(config.max_steps),
            symbolic_shape: Some(vec![SYMBOLIC_LEN]),
            offers: ObsRequest::ALL,
            descriptions: Default::default(),
        };
        Ok(Self {
            spec,
            config,
            state: None,
        })
    }

    /// A gridworld from experiment settings.
    pub fn from_settings(settings: &Settings) -> Result<Self, SpecError> {
        Self::new(GridworldConfig::from_settings(settings)?)
    }

    /// The configuration.
    pub fn config(&self) -> &GridworldConfig {
        &self.config
    }

    /// The mission string of the running episode.
    pub fn mission(&self) -> Option<String> {
        self.state.as_ref().map(|s| s.mission.text())
    }

    /// The agent's position and direction in the running episode.
    pub fn agent(&self) -> Option<(Pos, u8)> {
        self.state.as_ref().map(|s| (s.agent, s.direction))
    }

    /// The grid of the running episode.
    pub fn grid(&self) -> Option<&Grid> {
        self.state.as_ref().map(|s| &s.grid)
    }

    /// GoToObject sees through walls (MiniGrid sets this for speed); DoorKey does not.
    fn see_through_walls(&self) -> bool {
        self.config.task == Task::GoTo
    }

    fn running_state(&self) -> Option<&State> {
        self.state.as_ref().filter(|s| s.status == Status::Running)
    }

    fn generate(&self, rng: &mut Rng) -> State {
        let size = self.config.size as i32;
        let mut grid = Grid::new(size);
        grid.wall_border();
        let whole = (Pos::new(0, 0), Pos::new(size, size));
        match self.config.task {
            Task::DoorKey => {
                grid.set(Pos::new(size - 2, size - 2), Tile::Goal);
                let split = rng.random_range(2..size - 2);
                for y in 0..size {
                    grid.set(Pos::new(split, y), Tile::Wall);
                }
                let left = (Pos::new(0, 0), Pos::new(split, size));
                let agent = free_cell(&grid, rng, left, None);
                let direction = rng.random_range(0..4u8);
                let door = Pos::new(split, rng.random_range(1..size - 2));
                grid.set(
                    door,
                    Tile::Door {
                        colour: Colour::Yellow,
                        state: DoorState::Locked,
                    },
                );
                let key = free_cell(&grid, rng, left, Some(agent));
                grid.set(
                    key,
                    Tile::Item(Item {
                        kind: ItemKind::Key,
                        colour: Colour::Yellow,
                    }),
                );
                State::new(grid, agent, direction, Mission::DoorKey, None)
            }
            Task::GoTo => {
                let mut placed: Vec<(Item, Pos)> = Vec::new();
                while placed.len() < self.config.objects as usize {
                    let item = Item {
                        kind: ItemKind::ALL[rng.random_range(0..ItemKind::ALL.len())],
                        colour: Colour::ALL[rng.random_range(0..Colour::ALL.len())],
                    };
                    if placed.iter().any(|(other, _)| *other == item) {
                        continue;
                    }
                    let pos = free_cell(&grid, rng, whole, None);
                    grid.set(pos, Tile::Item(item));
                    placed.push((item, pos));
                }
                let agent = free_cell(&grid, rng, whole, None);
                let direction = rng.random_range(0..4u8);
                let (target, at) = placed[rng.random_range(0..placed.len())];
                State::new(grid, agent, direction, Mission::GoTo(target), Some(at))
            }
        }
    }

    /// The action of the single agent, checked.
    fn checked_action(actions: &[Option<Action>]) -> Result<GridAction, EnvError> {
        let invalid = |reason: String| EnvError::InvalidAction { agent: 0, reason };
        match actions {
            [Some(action)] => GridAction::from_action(*action).ok_or_else(|| {
                invalid(format!(
                    "action {} is out of range (0..{})",
                    action.0,
                    GridAction::ALL.len()
                ))
            }),
            [None] => Err(invalid("no action given".to_owned())),
            _ => Err(invalid(format!(
                "{} actions given for 1 agent",
                actions.len()
            ))),
        }
    }

    fn symbolic(view: &View, direction: u8) -> Tensor {
        let mut data = Vec::with_capacity(SYMBOLIC_LEN);
        view.encode_into(&mut data);
        data.push(f32::from(direction));
        Tensor {
            shape: vec![SYMBOLIC_LEN],
            data,
        }
    }
}

impl State {
    fn new(grid: Grid, agent: Pos, direction: u8, mission: Mission, target: Option<Pos>) -> Self {
        Self {
            grid,
            agent,
            direction,
            carrying: None,
            mission,
            target,
            steps: 0,
            status: Status::Running,
        }
    }
}

/// MiniGrid's `place_obj`: uniform rejection sampling of an empty cell in the rectangle
/// `[top, bottom)` (clipped to the grid), avoiding `agent`. Configurations are validated
/// so that a free cell always exists.
fn free_cell(grid: &Grid, rng: &mut Rng, (top, bottom): (Pos, Pos), agent: Option<Pos>) -> Pos {
    let (x_end, y_end) = (bottom.x.min(grid.size()), bottom.y.min(grid.size()));
    loop {
        let pos = Pos::new(
            rng.random_range(top.x..x_end),
            rng.random_range(top.y..y_end),
        );
        if grid.get(pos) == Tile::Empty && Some(pos) != agent {
            return pos;
        }
    }
}

/// MiniGrid's success reward: 1 for an instant solution, falling to 0.1 at the limit.
fn success_reward(steps: u32, max_steps: u32) -> f32 {
    1.0 - 0.9 * (steps as f32 / max_steps as f32)
}

fn event(kind: &str, item: Option<Item>) -> Event {
    Event {
        kind: kind.to_owned(),
        agent: Some(0),
        detail: item.map(|i| serde_json::json!({ "item": i.describe() })),
    }
}

impl Environment for Gridworld {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: u64) -> Result<(), EnvError> {
        let mut rng = seeded(seed);
        self.state = Some(self.generate(&mut rng));
        Ok(())
    }

    fn acting(&self) -> Vec<usize> {
        if self.running_state().is_some() {
            vec![0]
        } else {
            Vec::new()
        }
    }

    /// `info` (mission, agent position and direction) comes with the symbolic or text view.
    fn observe(&self, agent: usize, want: ObsRequest) -> Observation {
        let running = self.running_state().is_some() && agent == 0;
        let mut obs = Observation::with_mask(agent, vec![running; GridAction::ALL.len()]);
        let Some(state) = self.state.as_ref().filter(|_| agent == 0) else {
            return obs;
        };
        obs.step = state.steps;
        if want.symbolic || want.text {
            let view = state.view(self.see_through_walls());
            if want.symbolic {
                obs.symbolic = Some(Self::symbolic(&view, state.direction));
            }
            if want.text {
                obs.text = Some(text::describe(
                    state,
                    &view,
                    self.config.max_steps,
                    &self.spec.action_labels,
                ));
            }
            obs.info = Some(serde_json::json!({
                "mission": state.mission.text(),
                "agent_pos": [state.agent.x, state.agent.y],
                "agent_dir": state.direction,
                mosaic_core::FACING_INFO: mosaic_core::canvas::screen_direction(state.direction),
            }));
        }
        if want.frame {
            obs.frame = Some(Arc::new(draw::frame(
                state,
                self.see_through_walls(),
                false,
            )));
        }
        obs
    }

    fn step(&mut self, actions: &[Option<Action>], out: &mut Transition) -> Result<(), EnvError> {
        let task = self.config.task;
        let max_steps = self.config.max_steps;
        let Some(state) = self.state.as_mut().filter(|s| s.status == Status::Running) else {
            return Err(EnvError::NotRunning);
        };
        let action = Self::checked_action(actions)?;
        out.clear(1);
        state.steps += 1;
        let front = state.agent.step(state.direction);
        let ahead = state.grid.get(front);
        let mut succeeded = false;
        let mut terminated = false;
        match action {
            GridAction::Left => state.direction = (state.direction + 3) % 4,
            GridAction::Right => state.direction = (state.direction + 1) % 4,
            GridAction::Forward => {
                if ahead.can_overlap() {
                    state.agent = front;
                }
                if ahead == Tile::Goal {
                    succeeded = true;
                    terminated = true;
                }
            }
            GridAction::Pickup => {
                if let (Tile::Item(item), None) = (ahead, state.carrying) {
                    state.carrying = Some(item);
                    state.grid.set(front, Tile::Empty);
                    out.events.push(event("pickup", Some(item)));
                }
            }
            GridAction::Drop => {
                if let (Tile::Empty, Some(item)) = (ahead, state.carrying) {
                    state.grid.set(front, Tile::Item(item));
                    state.carrying = None;
                    out.events.push(event("drop", Some(item)));
                }
            }
            GridAction::Toggle => match ahead {
                Tile::Door {
                    colour,
                    state: DoorState::Locked,
                } => {
                    let key = Item {
                        kind: ItemKind::Key,
                        colour,
                    };
                    if state.carrying == Some(key) {
                        let unlocked = Tile::Door {
                            colour,
                            state: DoorState::Open,
                        };
                        state.grid.set(front, unlocked);
                        out.events.push(event("unlock", None));
                    }
                }
                Tile::Door {
                    colour,
                    state: door,
                } => {
                    let flipped = if door == DoorState::Open {
                        DoorState::Closed
                    } else {
                        DoorState::Open
                    };
                    state.grid.set(
                        front,
                        Tile::Door {
                            colour,
                            state: flipped,
                        },
                    );
                }
                // Boxes open and leave what they hold: nothing, in these tasks.
                Tile::Item(Item {
                    kind: ItemKind::Box,
                    ..
                }) => state.grid.set(front, Tile::Empty),
                _ => {}
            },
            GridAction::Done => {}
        }
        if task == Task::GoTo {
            match action {
                GridAction::Toggle => terminated = true,
                GridAction::Done => {
                    terminated = true;
                    succeeded = state.target.is_some_and(|t| t.distance(state.agent) == 1);
                }
                _ => {}
            }
        }
        let truncated = state.steps >= max_steps;
        state.status = if succeeded {
            Status::Succeeded
        } else if terminated {
            Status::Failed
        } else if truncated {
            Status::TimedOut
        } else {
            Status::Running
        };
        out.terminated[0] = terminated;
        out.truncated[0] = truncated;
        if succeeded {
            out.rewards[0] = success_reward(state.steps, max_steps);
            out.events.push(event("success", None));
        }
        Ok(())
    }

    fn steps(&self) -> u32 {
        self.state.as_ref().map_or(0, |s| s.steps)
    }

    fn render(&self) -> Option<Frame> {
        let state = self.state.as_ref()?;
        Some(draw::frame(state, self.see_through_walls(), false))
    }

    /// The one agent is the only sprite: marked, it is framed.
    fn render_marked(&self, marked: &[usize]) -> Option<Frame> {
        let state = self.state.as_ref()?;
        Some(draw::frame(
            state,
            self.see_through_walls(),
            marked.contains(&0),
        ))
    }

    fn outcome(&self) -> Option<Vec<Outcome>> {
        match self.state.as_ref()?.status {
            Status::Running => None,
            Status::Succeeded => Some(vec![Outcome::Win]),
            Status::Failed | Status::TimedOut => Some(vec![Outcome::Loss]),
        }
    }

    fn metrics(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut metrics = serde_json::Map::new();
        if let Some(state) = &self.state {
            metrics.insert(
                "success".to_owned(),
                (state.status == Status::Succeeded).into(),
            );
            metrics.insert("steps".to_owned(), state.steps.into());
        }
        metrics
    }

    fn snapshot(&self) -> Option<Snapshot> {
        let state = self.state.as_ref()?;
        serde_json::to_vec(state).ok().map(Snapshot)
    }

    fn restore(&mut self, snapshot: &Snapshot) -> Result<(), EnvError> {
        let state: State = serde_json::from_slice(&snapshot.0)
            .map_err(|e| EnvError::Restore(format!("gridworld snapshot: {e}")))?;
        let bad = |what: &str| Err(EnvError::Restore(format!("gridworld snapshot: {what}")));
        let grid = &state.grid;
        if !grid.is_consistent() || grid.size() != self.config.size as i32 {
            return bad("grid size differs from the configured size");
        }
        if !grid.contains(state.agent) || !grid.get(state.agent).can_overlap() {
            return bad("the agent is not on a free cell");
        }
        if state.direction > 3 {
            return bad("direction out of range (0..=3)");
        }
        if state.steps > self.config.max_steps {
            return bad("more steps than max_steps");
        }
        let task_matches = match (self.config.task, state.mission) {
            (Task::DoorKey, Mission::DoorKey) => state.target.is_none(),
            (Task::GoTo, Mission::GoTo(_)) => state.target.is_some_and(|t| grid.contains(t)),
            _ => false,
        };
        if !task_matches {
            return bad("mission does not fit the configured task");
        }
        self.state = Some(state);
        Ok(())
    }
}

/// The `gridworld` kind of the environment registry.
pub const KIND: EnvKind = EnvKind {
    name: "gridworld",
    summary: "MiniGrid DoorKey or GoToObject, single agent, egocentric 7x7 view and mission",
    settings: &[
        "task = \"doorkey\": \"doorkey\" (key, locked door, goal) or \"goto\" (go to the named object, then `done`)",
        "size = 5 (doorkey) / 6 (goto): side of the grid including walls, 5..=16",
        "max_steps = 10*size^2 (doorkey) / 5*size^2 (goto): steps before truncation",
        "objects = 2: objects in the room, goto only, 1..=8",
    ],
    make: make_gridworld,
    scripted: Some(scripted_gridworld),
};

/// Registry constructor of `gridworld`.
pub fn make_gridworld(settings: &Settings) -> Result<Box<dyn Environment>, SpecError> {
    Ok(Box::new(Gridworld::from_settings(settings)?))
}

/// Registry constructor of the gridworld planner.
pub fn scripted_gridworld(
    env_settings: &Settings,
    slot_settings: &Settings,
) -> Result<Box<dyn Policy>, SpecError> {
    Ok(Box::new(GridPlanner::from_settings(
        env_settings,
        slot_settings,
    )?))
}

#[cfg(test)]
mod tests;
