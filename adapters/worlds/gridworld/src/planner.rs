//! The scripted gridworld player: maps what it sees, then plans with breadth-first search.

use super::world::{DoorState, Item, ItemKind, Pos, Tile, VIEW, VIEW_AGENT, view_to_world};
use super::{GridAction, GridworldConfig, Mission, SYMBOLIC_LEN};
use mosaic_core::experiment::{SpecError, parse_settings};
use mosaic_core::{
    AgentContext, Decision, DecisionSource, ObsRequest, Observation, Paradigm, Policy, Settings,
};
use serde::Deserialize;
use std::collections::VecDeque;

/// A planner that solves both gridworld tasks from the agent's own observations.
///
/// Each step it adds the visible part of the symbolic view to a map of the grid (placed by
/// the position and direction in `info`), then runs a breadth-first search over
/// (cell, direction) states through known passable cells:
///
/// - goto: once the target is on the map, walk next to it and say `done`;
/// - doorkey: once the goal is reachable, walk onto it; else pick up the key, then face the
///   locked door and `toggle` it;
/// - otherwise explore: turn to face the nearest unknown cell (the cell ahead is always
///   visible, so every exploration target gets mapped).
///
/// ```
/// use mosaic_gridworld::{GridPlanner, Gridworld};
/// use mosaic_core::{AgentContext, Environment, Policy, Settings, Transition};
///
/// let mut env = Gridworld::from_settings(&Settings::new()).unwrap();
/// let mut planner = GridPlanner::from_settings(&Settings::new(), &Settings::new()).unwrap();
/// env.reset(11).unwrap();
/// planner.reset(&AgentContext::new(11, 0, "agent_0".into(), 7));
/// let mut out = Transition::default();
/// while !env.acting().is_empty() {
///     let decision = planner.decide(&env.observe(0, planner.wants()));
///     env.step(&[Some(decision.action)], &mut out).unwrap();
/// }
/// assert!(out.rewards[0] > 0.5, "solved DoorKey-5x5 quickly");
/// ```
#[derive(Debug, Clone)]
pub struct GridPlanner {
    map: KnownMap,
    search: Search,
}

/// What the planner has seen of the grid.
#[derive(Debug, Clone)]
struct KnownMap {
    size: i32,
    tiles: Vec<Option<Tile>>,
}

/// Breadth-first search scratch, kept between steps to avoid allocation.
#[derive(Debug, Clone)]
struct Search {
    /// The first action on the way to each (cell, direction) state.
    first_action: Vec<Option<GridAction>>,
    queue: VecDeque<(Pos, u8)>,
}

/// The planner has no settings; listed so a misspelt one is reported.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlannerSettings {}

/// Why the planner chose its action (recorded with the decision).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Intent {
    ReachGoal,
    ApproachTarget,
    ReportDone,
    FetchKey,
    OpenDoor,
    Explore,
    Stuck,
}

impl Intent {
    fn name(self) -> &'static str {
        match self {
            Intent::ReachGoal => "reach goal",
            Intent::ApproachTarget => "approach target",
            Intent::ReportDone => "report done",
            Intent::FetchKey => "fetch key",
            Intent::OpenDoor => "open door",
            Intent::Explore => "explore",
            Intent::Stuck => "stuck",
        }
    }
}

/// Where the agent is, read from the observation.
#[derive(Clone, Copy)]
struct Pose {
    pos: Pos,
    direction: u8,
}

impl KnownMap {
    fn index(&self, pos: Pos) -> Option<usize> {
        let inside = pos.x >= 0 && pos.y >= 0 && pos.x < self.size && pos.y < self.size;
        inside.then(|| (pos.y * self.size + pos.x) as usize)
    }

    fn get(&self, pos: Pos) -> Option<Tile> {
        self.index(pos).and_then(|i| self.tiles[i])
    }

    /// Whether `pos` is on the grid and not seen yet.
    fn unknown(&self, pos: Pos) -> bool {
        self.index(pos).is_some_and(|i| self.tiles[i].is_none())
    }

    /// The first known cell (row by row) whose tile is `wanted`.
    fn find(&self, wanted: impl Fn(Tile) -> bool) -> Option<(Pos, Tile)> {
        self.tiles.iter().enumerate().find_map(|(i, tile)| {
            let tile = (*tile)?;
            let pos = Pos::new(i as i32 % self.size, i as i32 / self.size);
            wanted(tile).then_some((pos, tile))
        })
    }

    /// Adds the visible cells of the view to the map; returns what the agent carries.
    fn integrate(&mut self, image: &[f32], pose: Pose) -> Option<Item> {
        let code = |vx: usize, vy: usize| {
            let at = (vx * VIEW + vy) * 3;
            [image[at] as u8, image[at + 1] as u8, image[at + 2] as u8]
        };
        for vx in 0..VIEW {
            for vy in 0..VIEW {
                if (vx, vy) == VIEW_AGENT {
                    continue;
                }
                let pos = view_to_world(pose.pos, pose.direction, vx, vy);
                if let (Some(tile), Some(i)) = (Tile::decode(code(vx, vy)), self.index(pos)) {
                    self.tiles[i] = Some(tile);
                }
            }
        }
        if let Some(i) = self.index(pose.pos) {
            // The agent stands on floor or in an open doorway: keep what is known.
            self.tiles[i].get_or_insert(Tile::Empty);
        }
        match Tile::decode(code(VIEW_AGENT.0, VIEW_AGENT.1)) {
            Some(Tile::Item(item)) => Some(item),
            _ => None,
        }
    }
}

impl Search {
    /// Breadth-first search over (cell, direction) states from `pose`, turning or moving
    /// forward into known passable cells, for the nearest state satisfying `goal`.
    /// `Some(None)`: `pose` satisfies it; `Some(Some(a))`: `a` starts a shortest path;
    /// `None`: unreachable.
    fn plan(
        &mut self,
        map: &KnownMap,
        pose: Pose,
        goal: impl Fn(Pos, u8) -> bool,
    ) -> Option<Option<GridAction>> {
        if goal(pose.pos, pose.direction) {
            return Some(None);
        }
        let state =
            |pos: Pos, direction: u8| map.index(pos).map(|i| i * 4 + usize::from(direction));
        self.first_action.clear();
        self.first_action.resize(map.tiles.len() * 4, None);
        self.queue.clear();
        // The start state is marked so that it is not revisited; its mark is never read.
        self.first_action[state(pose.pos, pose.direction)?] = Some(GridAction::Done);
        self.queue.push_back((pose.pos, pose.direction));
        while let Some((pos, direction)) = self.queue.pop_front() {
            let at_start = (pos, direction) == (pose.pos, pose.direction);
            let inherited = state(pos, direction).and_then(|s| self.first_action[s]);
            let moves = [
                (GridAction::Left, pos, (direction + 3) % 4),
                (GridAction::Right, pos, (direction + 1) % 4),
                (GridAction::Forward, pos.step(direction), direction),
            ];
            for (action, next, next_direction) in moves {
                if action == GridAction::Forward && !map.get(next).is_some_and(Tile::can_overlap) {
                    continue;
                }
                let Some(s) = state(next, next_direction) else {
                    continue;
                };
                if self.first_action[s].is_some() {
                    continue;
                }
                let first = if at_start {
                    action
                } else {
                    inherited.unwrap_or(action)
                };
                if goal(next, next_direction) {
                    return Some(Some(first));
                }
                self.first_action[s] = Some(first);
                self.queue.push_back((next, next_direction));
            }
        }
        None
    }
}

impl GridPlanner {
    /// A planner for grids of side `size`.
    pub fn new(size: u32) -> Self {
        Self {
            map: KnownMap {
                size: size as i32,
                tiles: vec![None; (size * size) as usize],
            },
            search: Search {
                first_action: Vec::new(),
                queue: VecDeque::new(),
            },
        }
    }

    /// A planner for the gridworld configured by `env_settings`; the slot's settings must
    /// be empty.
    pub fn from_settings(
        env_settings: &Settings,
        slot_settings: &Settings,
    ) -> Result<Self, SpecError> {
        parse_settings::<PlannerSettings>(slot_settings)?;
        let config = GridworldConfig::from_settings(env_settings)?;
        Ok(Self::new(config.size))
    }

    /// Plans towards a state satisfying `goal`, then takes `finish` there.
    fn towards(
        &mut self,
        pose: Pose,
        goal: impl Fn(Pos, u8) -> bool,
        finish: GridAction,
    ) -> Option<GridAction> {
        self.search
            .plan(&self.map, pose, goal)
            .map(|first| first.unwrap_or(finish))
    }

    fn choose(
        &mut self,
        mission: Mission,
        pose: Pose,
        carrying: Option<Item>,
    ) -> (GridAction, Intent) {
        let facing = |target: Pos| move |pos: Pos, direction: u8| pos.step(direction) == target;
        match mission {
            Mission::GoTo(item) => {
                if let Some((target, _)) = self.map.find(|t| t == Tile::Item(item)) {
                    let next_to = move |pos: Pos, _| pos.distance(target) == 1;
                    match self.search.plan(&self.map, pose, next_to) {
                        Some(None) => return (GridAction::Done, Intent::ReportDone),
                        Some(Some(action)) => return (action, Intent::ApproachTarget),
                        None => {}
                    }
                }
            }
            Mission::DoorKey => {
                if let Some((goal, _)) = self.map.find(|t| t == Tile::Goal) {
                    let on_goal = move |pos: Pos, _| pos == goal;
                    if let Some(action) = self.towards(pose, on_goal, GridAction::Forward) {
                        return (action, Intent::ReachGoal);
                    }
                }
                let door = self
                    .map
                    .find(|t| matches!(t, Tile::Door { state, .. } if state != DoorState::Open));
                let door_colour = door.and_then(|(_, tile)| match tile {
                    Tile::Door { colour, .. } => Some(colour),
                    _ => None,
                });
                let fits = move |item: Item| {
                    item.kind == ItemKind::Key && door_colour.is_none_or(|c| c == item.colour)
                };
                if let Some((door, Tile::Door { state, .. })) = door {
                    let can_open = state == DoorState::Closed || carrying.is_some_and(fits);
                    if can_open {
                        if let Some(action) = self.towards(pose, facing(door), GridAction::Toggle) {
                            return (action, Intent::OpenDoor);
                        }
                    }
                }
                if carrying.is_none() {
                    let key = self
                        .map
                        .find(|t| matches!(t, Tile::Item(item) if fits(item)));
                    if let Some((key, _)) = key {
                        if let Some(action) = self.towards(pose, facing(key), GridAction::Pickup) {
                            return (action, Intent::FetchKey);
                        }
                    }
                }
            }
        }
        // Every cell ahead of the agent is visible, so facing an unknown cell maps it.
        let map = &self.map;
        let unknown_ahead = |pos: Pos, direction: u8| map.unknown(pos.step(direction));
        match self.search.plan(map, pose, unknown_ahead) {
            Some(Some(action)) => (action, Intent::Explore),
            _ => (GridAction::Left, Intent::Stuck),
        }
    }
}

/// Reads the pose and mission from `info`.
fn read_info(obs: &Observation) -> Option<(Mission, Pose)> {
    let info = obs.info.as_ref()?;
    let mission = Mission::parse(info.get("mission")?.as_str()?)?;
    let pos = info.get("agent_pos")?.as_array()?;
    let coordinate = |i: usize| pos.get(i)?.as_i64().and_then(|v| i32::try_from(v).ok());
    let direction = u8::try_from(info.get("agent_dir")?.as_u64()?).ok()?;
    Some((
        mission,
        Pose {
            pos: Pos::new(coordinate(0)?, coordinate(1)?),
            direction: direction % 4,
        },
    ))
}

impl Policy for GridPlanner {
    fn paradigm(&self) -> Paradigm {
        Paradigm::Scripted
    }

    fn wants(&self) -> ObsRequest {
        ObsRequest::SYMBOLIC
    }

    fn reset(&mut self, _ctx: &AgentContext) {
        self.map.tiles.fill(None);
    }

    fn decide(&mut self, obs: &Observation) -> Decision {
        let image = obs
            .symbolic
            .as_ref()
            .filter(|t| t.data.len() == SYMBOLIC_LEN)
            .map(|t| &t.data[..SYMBOLIC_LEN - 1]);
        let (Some(image), Some((mission, pose))) = (image, read_info(obs)) else {
            return Decision::fallback(
                GridAction::Left.action(),
                DecisionSource::Error,
                "the gridworld planner needs the symbolic view and its info (mission, agent_pos, agent_dir)",
            );
        };
        let carrying = self.map.integrate(image, pose);
        let (action, intent) = self.choose(mission, pose, carrying);
        Decision {
            action: action.action(),
            source: DecisionSource::Policy,
            detail: Some(serde_json::json!({ "intent": intent.name() })),
        }
    }
}
